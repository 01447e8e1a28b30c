//! A `trusted_root.json` as written: the document (bounded before it is read), and its
//! certificate and timestamp authorities split as sigstore-go splits them.

use super::{is_ca, Authority, MAX_AUTHORITIES, MAX_CHAIN, MAX_ROOT_BYTES};
use crate::verify::path::Pool;
use crate::verify::valid_for::ValidFor;
use base64::Engine;
use rustls_pki_types::CertificateDer;
use serde::Deserialize;
use std::sync::Arc;
use x509_cert::der::Decode;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Root {
    #[serde(default)]
    pub certificate_authorities: Vec<Written>,
    #[serde(default)]
    pub tlogs: Vec<crate::verify::tlog::WrittenLog>,
    #[serde(default)]
    pub timestamp_authorities: Vec<Written>,
    #[serde(default)]
    pub ctlogs: Vec<crate::verify::tlog::WrittenLog>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Written {
    cert_chain: Chain,
    #[serde(default)]
    valid_for: ValidFor,
    #[serde(default)]
    uri: String,
}

#[derive(Deserialize)]
struct Chain {
    #[serde(default)]
    certificates: Vec<Raw>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    raw_bytes: String,
}

/// The document, within its bounds: its bytes, and its authorities' count.
pub(super) fn read(bytes: &[u8]) -> Result<Root, String> {
    let root: Root = crate::verify::trust_document(
        bytes,
        "trusted_root.json",
        MAX_ROOT_BYTES,
        "a Sigstore trusted root",
    )?;
    if root.certificate_authorities.len() > MAX_AUTHORITIES
        || root.timestamp_authorities.len() > MAX_AUTHORITIES
    {
        return Err(format!(
            "trusted_root.json has over {MAX_AUTHORITIES} certificate or timestamp authorities"
        ));
    }
    Ok(root)
}

/// A chain as DER certificates, each checked to be one, and whether each is a CA.
fn chain(written: &Chain) -> Result<Vec<(CertificateDer<'static>, bool)>, String> {
    if written.certificates.len() > MAX_CHAIN {
        return Err(format!(
            "a certificate or timestamp authority's chain is over {MAX_CHAIN} certificates"
        ));
    }
    written
        .certificates
        .iter()
        .map(|c| {
            let der = base64::engine::general_purpose::STANDARD
                .decode(c.raw_bytes.trim())
                .map_err(|_| "an authority's certificate is not base64")?;
            let cert = x509_cert::Certificate::from_der(&der)
                .map_err(|e| format!("an authority's certificate is not X.509 DER ({e})"))?;
            Ok::<_, String>((CertificateDer::from(der), is_ca(&cert)))
        })
        .collect()
}

/// Each certificate authority: its chain's last certificate the anchor, the others
/// intermediates (an empty chain is no authority).
pub(super) fn certificate_authorities(written: Vec<Written>) -> Result<Vec<Authority>, String> {
    let mut authorities = Vec::new();
    for authority in written {
        let mut ders: Vec<_> = chain(&authority.cert_chain)?
            .into_iter()
            .map(|c| c.0)
            .collect();
        if let Some(anchor) = ders.pop() {
            authorities.push(Authority {
                anchor,
                intermediates: Arc::new(Pool::new(ders.iter().map(|c| c.as_ref()))),
                valid: authority.valid_for,
            });
        }
    }
    Ok(authorities)
}

/// Each timestamp authority, as sigstore-go splits its chain: the first certificate, when not
/// a CA, is the one leaf that may sign; the rest up to the root are intermediates.
pub(super) fn timestamp_authorities(
    written: Vec<Written>,
) -> Result<Vec<crate::verify::timestamp::Authority>, String> {
    let mut authorities = Vec::new();
    for authority in written {
        let mut ders = chain(&authority.cert_chain)?;
        let Some((anchor, _)) = ders.pop() else {
            continue;
        };
        let leaf = match ders.first() {
            Some((leaf, false)) => Some(leaf.to_vec()),
            _ => None,
        };
        let skip = usize::from(leaf.is_some());
        let intermediates = ders.iter().skip(skip).map(|c| c.0.as_ref());
        authorities.push(crate::verify::timestamp::Authority {
            anchor,
            intermediates: Arc::new(Pool::new(intermediates)),
            leaf,
            valid: authority.valid_for,
            uri: authority.uri,
        });
    }
    Ok(authorities)
}
