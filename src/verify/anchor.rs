//! A trust anchor's own validity. webpki takes an anchor as a bare name and key, with no
//! validity; Go's x509, which sigstore-go verifies with, checks the root certificate of a chain
//! at the verification time like every other: an expired or not yet valid Fulcio or timestamp
//! authority root vouches for nothing then. Checked after webpki accepts a chain, so it can
//! only refuse more.

use std::time::{Duration, SystemTime};
use x509_cert::der::Decode;

/// Whether the anchor certificate `der` is valid at `at` (Unix seconds); why not, when not.
pub fn valid_at(der: &[u8], at: i64) -> Result<(), String> {
    let cert = x509_cert::Certificate::from_der(der)
        .map_err(|e| format!("the trusted root's certificate is not X.509 ({e})"))?;
    let validity = &cert.tbs_certificate.validity;
    let seconds = |t: x509_cert::time::Time| t.to_unix_duration().as_secs() as i64;
    let (from, to) = (seconds(validity.not_before), seconds(validity.not_after));
    if (from..=to).contains(&at) {
        return Ok(());
    }
    let date = |s: i64| {
        httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_secs(s.max(0) as u64))
    };
    Err(format!(
        "the trusted root's certificate '{}' is not valid at {} (valid from {} to {})",
        cert.tbs_certificate.subject,
        date(at),
        date(from),
        date(to)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca(not_before: (i32, u8, u8), not_after: (i32, u8, u8)) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
        params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn an_anchor_counts_only_within_its_validity_bounds_included() {
        let der = ca((2020, 1, 1), (2025, 1, 1));
        let (from, to) = (1_577_836_800, 1_735_689_600);
        assert_eq!(valid_at(&der, from), Ok(()));
        assert_eq!(valid_at(&der, to), Ok(()));
        let err = valid_at(&der, to + 1).unwrap_err();
        assert!(err.contains("is not valid at Wed, 01 Jan 2025 00:00:01 GMT (valid from Wed, 01 Jan 2020 00:00:00 GMT to Wed, 01 Jan 2025 00:00:00 GMT)"), "{err}");
        assert!(valid_at(&der, from - 1).is_err());
        assert!(valid_at(b"not a certificate", from).is_err());
    }
}
