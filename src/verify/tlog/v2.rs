//! Rekor v2 entries (rekor-tiles, `hashedrekord` 0.0.2), read as sigstore-go reads them
//! offline: the leaf is rebuilt from the signature itself (the digest of the signed bytes, the
//! signature, the signing certificate and its key's algorithm), so the entry's body is not
//! trusted for what it records; that leaf must be at the entry's index in the tree of a
//! checkpoint the log signed, its note key derived from the log's origin (the host of its
//! `baseUrl`). A Rekor v2 entry has no integrated time and no promise: when the signature was
//! made is a timestamp authority's to say (`super::super::timestamp`).

use super::note::NoteKey;
use super::proof::leaf_hash;
use super::{b64, Entry, Log, Signing};
use base64::Engine;
use sha2::{Digest, Sha256, Sha384};
use x509_cert::der::asn1::ObjectIdentifier;
use x509_cert::der::Decode;

/// The entry version a Rekor v2 log writes (`kindVersion.version`, its body's `apiVersion`).
pub const REKOR_V2_VERSION: &str = "0.0.2";

/// Whether an entry's body is a Rekor v2 one, as sigstore-go tells: a `hashedrekord` of
/// `apiVersion` 0.0.2 with a `hashedRekordV002` spec (Rekor v1 wrote no such field).
pub fn is_v2(body: &serde_json::Value) -> bool {
    body["apiVersion"] == REKOR_V2_VERSION
        && body["kind"] == "hashedrekord"
        && body["spec"]["hashedRekordV002"].is_object()
}

/// Checks that the log `log` holds `signing` at `entry`'s index.
pub fn verify(log: &Log, entry: &Entry, signing: &Signing<'_>) -> Result<(), String> {
    let proof = entry
        .proof
        .as_ref()
        .ok_or("a Rekor v2 entry carries no inclusion proof")?;
    let origin = log.origin.as_deref().ok_or(
        "its log has no baseUrl in trusted_root.json, which names a Rekor v2 log's checkpoints",
    )?;
    let index = u64::try_from(entry.log_index).map_err(|_| "its log index is negative")?;
    let leaf = leaf_hash(&rebuilt_body(signing)?);
    let signer = NoteKey::rekor_v2(&log.key, &log.der, origin);
    proof.verify_v2(index, leaf, &signer)
}

/// The canonical JSON (RFC 8785: keys sorted, no spaces) of the `hashedrekord` 0.0.2 entry that
/// records `signing`, as rekor-tiles writes it and sigstore-go rebuilds it.
fn rebuilt_body(signing: &Signing<'_>) -> Result<Vec<u8>, String> {
    let (key_details, hash, digest) = match key_curve(signing.leaf)?.as_str() {
        "1.2.840.10045.3.1.7" => (
            "PKIX_ECDSA_P256_SHA_256",
            "SHA2_256",
            Sha256::digest(signing.signed).to_vec(),
        ),
        "1.3.132.0.34" => (
            "PKIX_ECDSA_P384_SHA_384",
            "SHA2_384",
            Sha384::digest(signing.signed).to_vec(),
        ),
        other => {
            return Err(format!(
                "its certificate's key (curve {other}) is not one this controller reads"
            ))
        }
    };
    let signature = signing
        .signatures
        .first()
        .ok_or("the signature has no signature bytes")?;
    let enc = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    Ok(format!(
        concat!(
            r#"{{"apiVersion":"0.0.2","kind":"hashedrekord","spec":{{"hashedRekordV002":{{"#,
            r#""data":{{"algorithm":"{}","digest":"{}"}},"signature":{{"content":"{}","#,
            r#""verifier":{{"keyDetails":"{}","x509Certificate":{{"rawBytes":"{}"}}}}}}}}}}}}"#
        ),
        hash,
        enc(&digest),
        enc(signature),
        key_details,
        enc(signing.leaf),
    )
    .into_bytes())
}

/// The named curve of the certificate's ECDSA key.
fn key_curve(leaf: &[u8]) -> Result<String, String> {
    let cert = x509_cert::Certificate::from_der(leaf)
        .map_err(|e| format!("its certificate is not X.509 DER ({e})"))?;
    let spki = &cert.tbs_certificate.subject_public_key_info;
    spki.algorithm
        .parameters
        .as_ref()
        .and_then(|p| p.decode_as::<ObjectIdentifier>().ok())
        .map(|o| o.to_string())
        .ok_or_else(|| "its certificate's key is not an ECDSA key".into())
}

/// The body's `hashedRekordV002` must at least be shaped as one (sigstore-go's
/// `ValidateEntry`): a signature with content and a verifier, and data.
pub fn check_shape(body: &serde_json::Value) -> Result<(), String> {
    let spec = &body["spec"]["hashedRekordV002"];
    let content = spec["signature"]["content"].as_str().unwrap_or_default();
    if content.is_empty() || b64(content).is_err() {
        return Err("its Rekor v2 body records no signature".into());
    }
    if !spec["signature"]["verifier"].is_object() || !spec["data"].is_object() {
        return Err("its Rekor v2 body records no verifier or no digest".into());
    }
    Ok(())
}

#[cfg(test)]
pub(super) fn rebuilt_for_tests(signing: &Signing<'_>) -> Vec<u8> {
    rebuilt_body(signing).unwrap()
}

#[cfg(test)]
mod tests;
