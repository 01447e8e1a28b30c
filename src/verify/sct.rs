//! Signed certificate timestamps (RFC 6962) embedded in a Fulcio signing certificate: a CT log's
//! promise that the certificate was logged, which cosign requires of a keyless signature. One
//! counts, as sigstore-go's `VerifySignedCertificateTimestamp` counts it, when its log is one of
//! the trusted root's `ctlogs` (by log id), its time lies in that log's `validFor`, and its
//! signature verifies over the precertificate entry: the issuer's key hash and the leaf's
//! TBSCertificate without the SCT list. At least one must; SCTs of one log count once.

use super::path::{Budget, OVER_BUDGET};
use super::tlog::LogKeys;
use sha2::{Digest, Sha256};
use x509_cert::der::asn1::OctetString;
use x509_cert::der::{Decode, Encode};

/// The SCT list extension (1.3.6.1.4.1.11129.2.4.2).
const SCT_LIST: &str = "1.3.6.1.4.1.11129.2.4.2";
/// TLS's `hash: sha256(4)` and `signature: ecdsa(3)`, the one pair Sigstore's CT logs sign with.
const SHA256_ECDSA: [u8; 2] = [4, 3];

/// Checks that `leaf` carries an SCT of a log of `logs` over its precertificate as `issuers`
/// (DER; the certificates of the authority it chained to) could have issued it.
///
/// Every SCT of the list is read (its encoding bounds it to 64 KiB), as sigstore-go reads them;
/// each verification of one of a trusted log is charged to the signature's `budget`.
pub fn verify(
    leaf: &[u8],
    issuers: &[&[u8]],
    logs: &LogKeys,
    budget: &Budget,
) -> Result<(), String> {
    let cert = x509_cert::Certificate::from_der(leaf)
        .map_err(|e| format!("the signing certificate is not X.509 DER ({e})"))?;
    let mut tbs = cert.tbs_certificate.clone();
    let list = tbs
        .extensions
        .iter()
        .flatten()
        .find(|e| e.extn_id.to_string() == SCT_LIST)
        .map(|e| e.extn_value.as_bytes().to_vec())
        .ok_or("the signing certificate carries no signed certificate timestamp (SCT), and trusted_root.json names CT logs (ctlogs)")?;
    let list = OctetString::from_der(&list)
        .map_err(|_| "the signing certificate's SCT list is not an octet string")?;
    let scts = parse_list(list.as_bytes())?;
    // The precertificate: the same TBSCertificate without the SCT list.
    if let Some(extensions) = tbs.extensions.as_mut() {
        extensions.retain(|e| e.extn_id.to_string() != SCT_LIST);
    }
    let tbs = tbs.to_der().map_err(|e| e.to_string())?;
    let issuer_name = &cert.tbs_certificate.issuer;
    let key_hashes: Vec<[u8; 32]> = issuers
        .iter()
        .filter_map(|der| x509_cert::Certificate::from_der(der).ok())
        .filter(|c| c.tbs_certificate.subject == *issuer_name)
        .filter_map(|c| c.tbs_certificate.subject_public_key_info.to_der().ok())
        .map(|spki| Sha256::digest(spki).into())
        .collect();
    let mut why = "none of its SCTs is of a CT log of trusted_root.json".to_string();
    let mut seen = std::collections::HashSet::new();
    for sct in &scts {
        // The same SCT twice is one verification.
        if !seen.insert((sct.log_id, sct.timestamp, sct.signature)) {
            continue;
        }
        let Some((key, valid)) = logs.find(sct.log_id) else {
            continue;
        };
        if !valid.contains((sct.timestamp / 1000) as i64) {
            why = "its SCT's time is outside its CT log's validFor".into();
            continue;
        }
        if sct.algorithm != SHA256_ECDSA {
            why = "its SCT is not an ECDSA signature over SHA-256".into();
            continue;
        }
        let signed = |hash: &[u8; 32]| sct.signed(hash, &tbs);
        for hash in &key_hashes {
            if !budget.check() {
                return Err(format!("the signing certificate's SCTs: {OVER_BUDGET}"));
            }
            if key.verifies(&signed(hash), sct.signature) {
                return Ok(());
            }
        }
        why = "its SCT does not verify with its CT log's key".into();
    }
    Err(format!(
        "the signing certificate is not in a trusted CT log: {why}"
    ))
}

/// One SCT, borrowed from the list.
struct Sct<'a> {
    log_id: &'a [u8],
    timestamp: u64,
    extensions: &'a [u8],
    algorithm: [u8; 2],
    signature: &'a [u8],
}

impl Sct<'_> {
    /// The bytes the log signed (RFC 6962, 3.2): v1, certificate_timestamp, the time, a
    /// precert entry of the issuer's key hash and the TBSCertificate, the extensions.
    fn signed(&self, issuer_key_hash: &[u8; 32], tbs: &[u8]) -> Vec<u8> {
        let mut out = vec![0, 0];
        out.extend_from_slice(&self.timestamp.to_be_bytes());
        out.extend_from_slice(&[0, 1]);
        out.extend_from_slice(issuer_key_hash);
        out.extend_from_slice(&(tbs.len() as u32).to_be_bytes()[1..]);
        out.extend_from_slice(tbs);
        out.extend_from_slice(&(self.extensions.len() as u16).to_be_bytes());
        out.extend_from_slice(self.extensions);
        out
    }
}

/// A TLS reader: `n` bytes, or a length-prefixed field.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err("the signing certificate's SCT list is truncated".into());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn field(&mut self) -> Result<&'a [u8], String> {
        let len = self.take(2)?;
        self.take(u16::from_be_bytes([len[0], len[1]]) as usize)
    }
}

/// The SCTs of a SignedCertificateTimestampList; version 1 only.
fn parse_list(bytes: &[u8]) -> Result<Vec<Sct<'_>>, String> {
    let mut list = Reader(Reader(bytes).field()?);
    let mut scts = Vec::new();
    while !list.0.is_empty() {
        let mut sct = Reader(list.field()?);
        if sct.take(1)? != [0] {
            continue;
        }
        let log_id = sct.take(32)?;
        let time = sct.take(8)?;
        let extensions = sct.field()?;
        let algorithm = sct.take(2)?;
        scts.push(Sct {
            log_id,
            timestamp: u64::from_be_bytes(time.try_into().expect("8 bytes")),
            extensions,
            algorithm: [algorithm[0], algorithm[1]],
            signature: sct.field()?,
        });
    }
    Ok(scts)
}

#[cfg(test)]
mod tests;
