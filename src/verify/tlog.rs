//! Transparency-log entries (Rekor v1) of keyless signatures (docs/imagepolicy.md,
//! "Keyless"): the entry's signed entry timestamp (its inclusion promise) must verify with a
//! log key of the trusted root, and its body must record this very signature (the signed
//! payload's hash, the signature, the signing certificate). Its integrated time is when the
//! signature was made: the certificate is checked at that time. A bundle keeps the entry in
//! `verificationMaterial.tlogEntries` (kind `dsse`); the legacy layout in the
//! `dev.sigstore.cosign/bundle` annotation (kind `hashedrekord`). A bundle's entry may also
//! carry an inclusion proof with a checkpoint ([`proof`]); when it does, that must verify too.
//! The promise is still required: it alone vouches for the integrated time.

mod proof;

use super::valid_for::ValidFor;
use base64::Engine;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey;
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// Logs a trusted root names, entries read per signature.
pub const MAX_LOGS: usize = 16;
pub const MAX_ENTRIES: usize = 4;
/// The entry version a Rekor v2 log writes (`kindVersion.version`, for both kinds).
const REKOR_V2_VERSION: &str = "0.0.2";

/// The log keys of a trusted root, by key id (the SHA-256 of the key's DER), with the period
/// the root trusts each for.
#[derive(Debug, Clone, Default)]
pub struct LogKeys(Vec<(Vec<u8>, VerifyingKey, ValidFor)>);

/// A log of a trusted root's `tlogs`, as written.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WrittenLog {
    public_key: WrittenKey,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WrittenKey {
    raw_bytes: String,
    #[serde(default)]
    valid_for: ValidFor,
}

/// An entry, as far as its promise and body are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The canonicalized body as the log signed it (base64), and decoded.
    body_text: String,
    body: Vec<u8>,
    integrated_time: i64,
    log_index: i64,
    log_id: Vec<u8>,
    promise: Vec<u8>,
    proof: Option<proof::InclusionProof>,
}

/// What the entry must record: its kind (`dsse` for a bundle's envelope, `hashedrekord` for
/// the legacy layout), the signed bytes' SHA-256, the signatures, the certificate.
pub struct Signing<'a> {
    pub kind: &'static str,
    pub payload: &'a [u8],
    pub signatures: &'a [Vec<u8>],
    pub leaf: &'a [u8],
}

fn b64(text: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|_| "a log entry field is not base64".to_string())
}

/// Rekor writes 64-bit numbers as strings in bundles and as numbers in the legacy annotation.
fn number(value: &serde_json::Value) -> Option<i64> {
    value.as_i64().or_else(|| value.as_str()?.parse().ok())
}

impl LogKeys {
    /// The `tlogs` of a trusted root (ECDSA P-256 keys, as Rekor's), as its one bounded read
    /// (`keyless::TrustedRoot::parse`) found them.
    pub(super) fn from_written(tlogs: Vec<WrittenLog>) -> Result<LogKeys, String> {
        if tlogs.len() > MAX_LOGS {
            return Err(format!(
                "trusted_root.json has over {MAX_LOGS} transparency logs"
            ));
        }
        let mut keys = Vec::new();
        for log in tlogs {
            let der = b64(&log.public_key.raw_bytes)?;
            // Other key types are not Rekor's: such a log's entries do not verify.
            if let Ok(key) = VerifyingKey::from_public_key_der(&der) {
                let id = Sha256::digest(&der).to_vec();
                keys.push((id, key, log.public_key.valid_for));
            }
        }
        Ok(LogKeys(keys))
    }

    /// Checks `entry` records `signing` and carries a promise of a trusted log; returns its
    /// integrated time (Unix seconds).
    pub fn verify(&self, entry: &Entry, signing: &Signing<'_>) -> Result<i64, String> {
        let (_, key, valid) = self
            .0
            .iter()
            .find(|(id, ..)| *id == entry.log_id)
            .ok_or("its log is not one of the trusted root's")?;
        if !valid.contains(entry.integrated_time) {
            return Err(format!(
                "its log's key was not trusted at its integrated time {} (trusted_root.json validFor)",
                entry.integrated_time
            ));
        }
        // The promise signs the canonical JSON of body, time, log id (hex) and index.
        let signed = serde_json::json!({
            "body": entry.body_text,
            "integratedTime": entry.integrated_time,
            "logID": hex(&entry.log_id),
            "logIndex": entry.log_index,
        });
        let signed = serde_json::to_vec(&signed).map_err(|e| e.to_string())?;
        let promise = Signature::from_der(&entry.promise)
            .map_err(|_| "its signed entry timestamp is not an ECDSA signature")?;
        key.verify(&signed, &promise)
            .map_err(|_| "its signed entry timestamp does not verify with the log's key")?;
        check_body(&entry.body, signing)?;
        if let Some(proof) = &entry.proof {
            proof.verify(&entry.body, key, &entry.log_id)?;
        }
        Ok(entry.integrated_time)
    }
}

impl Entry {
    /// The entries of a bundle's `verificationMaterial.tlogEntries`.
    pub fn from_bundle(entries: &[serde_json::Value]) -> Result<Vec<Entry>, String> {
        entries
            .iter()
            .take(MAX_ENTRIES)
            .map(|e| {
                let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
                let body_text = text(&e["canonicalizedBody"]);
                let version = e["kindVersion"]["version"].as_str().unwrap_or_default();
                let integrated_time = number(&e["integratedTime"]).filter(|t| *t != 0);
                let kind = e["kindVersion"]["kind"].as_str();
                let v2 = version == REKOR_V2_VERSION && matches!(kind, Some("dsse" | "hashedrekord"));
                if integrated_time.is_none() && v2 {
                    return Err(format!(
                        "a Rekor v2 entry ({} {version}), which has no integrated time: its signing time is a timestamp authority's, and this controller reads neither yet (docs/compatibility.md)",
                        text(&e["kindVersion"]["kind"])
                    ));
                }
                Ok(Entry {
                    body: b64(&body_text)?,
                    body_text,
                    integrated_time: integrated_time.ok_or("no integrated time")?,
                    log_index: number(&e["logIndex"]).ok_or("no log index")?,
                    log_id: b64(&text(&e["logId"]["keyId"]))?,
                    promise: b64(&text(&e["inclusionPromise"]["signedEntryTimestamp"]))?,
                    proof: proof::InclusionProof::from_entry(e)?,
                })
            })
            .collect()
    }

    /// The entry of the legacy layout's `dev.sigstore.cosign/bundle` annotation.
    pub fn from_annotation(text: &str) -> Result<Entry, String> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("a signature's log bundle is not JSON ({e})"))?;
        let payload = &value["Payload"];
        let body_text = payload["body"].as_str().unwrap_or_default().to_string();
        let log_id = payload["logID"].as_str().unwrap_or_default();
        Ok(Entry {
            body: b64(&body_text)?,
            body_text,
            integrated_time: number(&payload["integratedTime"]).ok_or("no integrated time")?,
            log_index: number(&payload["logIndex"]).ok_or("no log index")?,
            log_id: unhex(log_id).ok_or("a log id is not hex")?,
            promise: b64(value["SignedEntryTimestamp"].as_str().unwrap_or_default())?,
            proof: None,
        })
    }
}

/// The body records this signing: a `dsse` entry (a bundle's envelope) or a `hashedrekord`
/// (the legacy layout's payload), with the same signature and certificate.
fn check_body(body: &[u8], signing: &Signing<'_>) -> Result<(), String> {
    let body: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| "its body is not JSON".to_string())?;
    let spec = &body["spec"];
    let sha = format!("{:x}", Sha256::digest(signing.payload));
    let encoded: Vec<String> = signing
        .signatures
        .iter()
        .map(|s| base64::engine::general_purpose::STANDARD.encode(s))
        .collect();
    let kind = body["kind"].as_str();
    if kind != Some(signing.kind) {
        // sigstore-go: a DSSE envelope's entry is dsse (or intoto), a payload's hashedrekord;
        // another kind's fields record something else.
        return Err(format!(
            "its body is of kind {kind:?}; this signature is logged as {}",
            signing.kind
        ));
    }
    let (hash, records) = match kind {
        Some("dsse") => (
            &spec["payloadHash"]["value"],
            spec["signatures"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| (&s["signature"], &s["verifier"]))
                .collect::<Vec<_>>(),
        ),
        Some("hashedrekord") => (
            &spec["data"]["hash"]["value"],
            vec![(
                &spec["signature"]["content"],
                &spec["signature"]["publicKey"]["content"],
            )],
        ),
        other => {
            return Err(format!(
                "its body is of kind {other:?}, not dsse or hashedrekord"
            ))
        }
    };
    if hash.as_str() != Some(sha.as_str()) {
        return Err("its body records another payload".into());
    }
    let recorded = records.iter().any(|(signature, verifier)| {
        let signature = signature.as_str().unwrap_or_default();
        let certificate = verifier
            .as_str()
            .and_then(|v| b64(v).ok())
            .and_then(|pem| pem_der(&pem));
        encoded.iter().any(|e| e == signature) && certificate.as_deref() == Some(signing.leaf)
    });
    if !recorded {
        return Err("its body records another signature or certificate".into());
    }
    Ok(())
}

/// The DER of a PEM certificate.
fn pem_der(pem: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(pem).ok()?;
    let body: String = text
        .split("-----BEGIN CERTIFICATE-----")
        .nth(1)?
        .split("-----END CERTIFICATE-----")
        .next()?
        .split_whitespace()
        .collect();
    b64(&body).ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    text.len()
        .is_multiple_of(2)
        .then(|| {
            (0..text.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
                .collect()
        })
        .flatten()
}

/// The logs of a trusted root's JSON, for tests of roots without authorities (the controller
/// reads logs only through `keyless::TrustedRoot::parse`).
#[cfg(test)]
impl LogKeys {
    pub(super) fn from_root(root: &[u8]) -> Result<LogKeys, String> {
        #[derive(Deserialize)]
        struct Root {
            #[serde(default)]
            tlogs: Vec<WrittenLog>,
        }
        let root: Root = serde_json::from_slice(root).map_err(|e| e.to_string())?;
        Self::from_written(root.tlogs)
    }
}

#[cfg(test)]
mod tests;
