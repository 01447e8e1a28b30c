//! The signer's extended key usage, as Sigstore's timestamp authority marks it.

use x509_cert::der::Decode;

pub(super) const TIME_STAMPING_OID: &str = "1.3.6.1.5.5.7.3.8";
const EKU_EXTENSION: &str = "2.5.29.37";

/// The extended key usages of a certificate: whether the extension is there, critical, and its
/// purposes.
fn key_usages(der: &[u8]) -> Result<Option<(bool, Vec<String>)>, String> {
    let cert = x509_cert::Certificate::from_der(der).map_err(|e| e.to_string())?;
    for ext in cert.tbs_certificate.extensions.iter().flatten() {
        if ext.extn_id.to_string() == EKU_EXTENSION {
            let usages =
                x509_cert::ext::pkix::ExtendedKeyUsage::from_der(ext.extn_value.as_bytes())
                    .map_err(|e| format!("a malformed extended key usage ({e})"))?;
            let purposes = usages.0.iter().map(|o| o.to_string()).collect();
            return Ok(Some((ext.critical, purposes)));
        }
    }
    Ok(None)
}

/// Sigstore's timestamp-authority: the signer's one extended key usage is time stamping, and
/// the extension is critical.
pub(super) fn only_time_stamping(der: &[u8]) -> Result<(), String> {
    match key_usages(der)? {
        Some((true, purposes)) if purposes == [TIME_STAMPING_OID] => Ok(()),
        Some((false, _)) | None => {
            Err("the token's signer does not mark its extended key usage critical".into())
        }
        Some(_) => Err("the token's signer has usages other than time stamping alone".into()),
    }
}
