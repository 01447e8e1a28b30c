//! Transparency-log entries of keyless signatures (docs/imagepolicy.md, "Keyless"), of
//! Rekor v1 and Rekor v2.
//!
//! A Rekor v1 entry's signed entry timestamp (its inclusion promise) must verify with a log key
//! of the trusted root, and its body must record this very signature (the signed payload's
//! hash, the signature, the signing certificate; [`body`]). Its integrated time is when the
//! signature was made: the certificate is checked at that time. A bundle keeps the entry in
//! `verificationMaterial.tlogEntries` (kind `dsse` or `intoto`); the legacy layout in the
//! `dev.sigstore.cosign/bundle` annotation (kind `hashedrekord`). A bundle's entry may also
//! carry an inclusion proof with a checkpoint ([`proof`]); when it does, that must verify too.
//! The promise is still required: it alone vouches for the integrated time.
//!
//! A Rekor v2 entry ([`v2`]) has neither promise nor integrated time: its inclusion proof and
//! checkpoint say it is logged, and a timestamp authority says when it was made.

mod body;
mod note;
mod proof;

mod v2;

use super::valid_for::ValidFor;
use base64::Engine;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use x509_cert::der::Decode;
use x509_cert::spki::SubjectPublicKeyInfoOwned;

/// Logs a trusted root names, entries read per signature.
pub const MAX_LOGS: usize = 16;
/// sigstore-go's bound (`MaxAllowedTlogEntries`).
pub const MAX_ENTRIES: usize = 32;
/// id-Ed25519 (RFC 8410), the key Rekor v2 logs sign checkpoints with.
const ED25519: &str = "1.3.101.112";

/// The logs of a trusted root, with the period the root trusts each for.
#[derive(Debug, Clone, Default)]
pub struct LogKeys(Vec<Log>);

/// One log of a trusted root.
#[derive(Debug, Clone)]
pub struct Log {
    /// The id entries name it by: the root's `logId.keyId` (else the SHA-256 of the key's DER,
    /// which is a Rekor v1 log's id).
    id: Vec<u8>,
    key: LogKey,
    /// The key's DER, which a Rekor v2 ECDSA log's note key hash is taken over.
    der: Vec<u8>,
    valid: ValidFor,
    /// The host of its `baseUrl`: a Rekor v2 log's checkpoint origin and note name.
    origin: Option<String>,
}

/// A log's key: ECDSA P-256 (Rekor v1, and v2 logs that choose it) or Ed25519 (Rekor v2).
#[derive(Debug, Clone)]
pub enum LogKey {
    P256(VerifyingKey),
    Ed25519(Vec<u8>),
}

impl LogKey {
    pub(super) fn from_der(der: &[u8]) -> Option<LogKey> {
        if let Ok(key) = VerifyingKey::from_public_key_der(der) {
            return Some(LogKey::P256(key));
        }
        let spki = SubjectPublicKeyInfoOwned::from_der(der).ok()?;
        let raw = spki.subject_public_key.raw_bytes();
        (spki.algorithm.oid.to_string() == ED25519 && raw.len() == 32)
            .then(|| LogKey::Ed25519(raw.to_vec()))
    }

    /// Whether `signature` (ECDSA: ASN.1 DER over SHA-256) over `message` verifies.
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        match self {
            LogKey::P256(key) => {
                Signature::from_der(signature).is_ok_and(|s| key.verify(message, &s).is_ok())
            }
            LogKey::Ed25519(raw) => {
                ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, raw)
                    .verify(message, signature)
                    .is_ok()
            }
        }
    }
}

/// A log of a trusted root's `tlogs`, as written.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WrittenLog {
    public_key: WrittenKey,
    #[serde(default)]
    base_url: String,
    #[serde(default)]
    log_id: Option<WrittenId>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WrittenId {
    key_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WrittenKey {
    raw_bytes: String,
    /// Required, with its start: sigstore-go refuses a root whose log has none.
    valid_for: Option<ValidFor>,
}

/// An entry, as far as its promise and body are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The canonicalized body as the log signed it (base64), and decoded.
    body_text: String,
    body: Vec<u8>,
    /// Rekor v1's; a Rekor v2 entry has none.
    integrated_time: Option<i64>,
    log_index: i64,
    log_id: Vec<u8>,
    promise: Option<Vec<u8>>,
    proof: Option<proof::InclusionProof>,
}

/// What the entry must record: its kind (`dsse` for a bundle's envelope, `hashedrekord` for
/// the legacy layout), the signed bytes (a Rekor v2 entry records their digest), the bytes
/// whose SHA-256 a Rekor v1 entry records, the signatures, the certificate.
pub struct Signing<'a> {
    pub kind: &'static str,
    pub signed: &'a [u8],
    pub payload: &'a [u8],
    pub signatures: &'a [Vec<u8>],
    pub leaf: &'a [u8],
}

/// What a verified entry says of when the signature was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logged {
    /// A Rekor v1 entry's integrated time (Unix seconds), which its promise vouches for.
    At(i64),
    /// A Rekor v2 entry: logged, at a time only a timestamp authority can vouch for.
    Untimed,
}

/// Standard base64, padded: what Go's decoders take, less the line breaks they skip (held,
/// where they pass); spaces are refused, as Go refuses them.
fn b64(text: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|_| "a log entry field is not base64".to_string())
}

/// Rekor writes 64-bit numbers as strings in bundles and as numbers in the legacy annotation.
fn number(value: &serde_json::Value) -> Option<i64> {
    value.as_i64().or_else(|| value.as_str()?.parse().ok())
}

impl LogKeys {
    /// The `tlogs` of a trusted root (ECDSA P-256 or Ed25519 keys), as its one bounded read
    /// (`keyless::TrustedRoot::parse`) found them.
    pub(super) fn from_written(tlogs: Vec<WrittenLog>) -> Result<LogKeys, String> {
        if tlogs.len() > MAX_LOGS {
            return Err(format!(
                "trusted_root.json has over {MAX_LOGS} transparency logs"
            ));
        }
        let mut logs = Vec::new();
        for log in tlogs {
            let valid = log.public_key.valid_for.filter(ValidFor::has_start);
            let valid = valid.ok_or_else(|| {
                format!(
                    "trusted_root.json: the log {:.256} has no validFor start (the period its key \
                     vouches for, which sigstore-go requires)",
                    log.base_url
                )
            })?;
            let der = b64(&log.public_key.raw_bytes)?;
            // Other key types are not Rekor's: such a log's entries do not verify.
            let Some(key) = LogKey::from_der(&der) else {
                continue;
            };
            let id = match log.log_id {
                Some(id) => b64(&id.key_id)?,
                None => Sha256::digest(&der).to_vec(),
            };
            let origin = url::Url::parse(&log.base_url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string));
            logs.push(Log {
                id,
                key,
                der,
                valid,
                origin,
            });
        }
        Ok(LogKeys(logs))
    }

    /// The key and period of the log of id `id`.
    pub fn find(&self, id: &[u8]) -> Option<(&LogKey, ValidFor)> {
        let log = self.0.iter().find(|log| log.id == id)?;
        Some((&log.key, log.valid))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Checks `entry` records `signing` in a trusted log: a Rekor v1 entry by its promise
    /// (and proof, if any), a Rekor v2 entry by its proof and checkpoint.
    pub fn verify(&self, entry: &Entry, signing: &Signing<'_>) -> Result<Logged, String> {
        let log = self
            .0
            .iter()
            .find(|log| log.id == entry.log_id)
            .ok_or("its log is not one of the trusted root's")?;
        let body: serde_json::Value =
            serde_json::from_slice(&entry.body).map_err(|_| "its body is not JSON".to_string())?;
        if v2::is_v2(&body) {
            v2::check_shape(&body)?;
            v2::verify(log, entry, signing)?;
            return Ok(Logged::Untimed);
        }
        let time = entry.integrated_time.ok_or("no integrated time")?;
        let LogKey::P256(key) = &log.key else {
            return Err("its log's key is not ECDSA P-256, which signs Rekor v1 promises".into());
        };
        if !log.valid.contains(time) {
            return Err(format!(
                "its log's key was not trusted at its integrated time {time} (trusted_root.json validFor)"
            ));
        }
        let promise = entry
            .promise
            .as_deref()
            .ok_or("a Rekor v1 entry carries no inclusion promise")?;
        // The promise signs the canonical JSON of body, time, log id (hex) and index.
        let signed = serde_json::json!({
            "body": entry.body_text,
            "integratedTime": time,
            "logID": hex(&entry.log_id),
            "logIndex": entry.log_index,
        });
        let signed = serde_json::to_vec(&signed).map_err(|e| e.to_string())?;
        let promise = Signature::from_der(promise)
            .map_err(|_| "its signed entry timestamp is not an ECDSA signature")?;
        key.verify(&signed, &promise)
            .map_err(|_| "its signed entry timestamp does not verify with the log's key")?;
        body::check(&body, signing)?;
        if let Some(proof) = &entry.proof {
            proof.verify(&entry.body, &log.key, &entry.log_id)?;
        }
        Ok(Logged::At(time))
    }
}

/// `entries`, none twice: sigstore-go refuses two entries of one log at one index ("duplicate
/// tlog entries found"), which could count one entry twice toward a threshold.
fn no_twice(entries: Vec<Entry>) -> Result<Vec<Entry>, String> {
    for (i, entry) in entries.iter().enumerate() {
        let twice = entries[..i]
            .iter()
            .any(|e| e.log_id == entry.log_id && e.log_index == entry.log_index);
        if twice {
            return Err(format!(
                "the bundle has two log entries of one log at index {} (sigstore-go refuses \
                 duplicate entries)",
                entry.log_index
            ));
        }
    }
    Ok(entries)
}

impl Entry {
    /// Whether cosign reads this entry as Rekor v2's: it has no integrated time.
    pub fn untimed(&self) -> bool {
        self.integrated_time.is_none()
    }

    /// The entries of a bundle's `verificationMaterial.tlogEntries`.
    pub fn from_bundle(entries: &[serde_json::Value]) -> Result<Vec<Entry>, String> {
        // Each must verify: none past the bound is left unread, the bundle is refused.
        if entries.len() > MAX_ENTRIES {
            return Err(format!(
                "the bundle has over {MAX_ENTRIES} log entries (sigstore-go's bound)"
            ));
        }
        entries
            .iter()
            .map(|e| {
                let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
                let body_text = text(&e["canonicalizedBody"]);
                let promise = &e["inclusionPromise"]["signedEntryTimestamp"];
                Ok(Entry {
                    body: b64(&body_text)?,
                    body_text,
                    integrated_time: number(&e["integratedTime"]).filter(|t| *t != 0),
                    // Protobuf's JSON leaves out a zero: the first entry of a log or shard.
                    log_index: match e["logIndex"].is_null() {
                        true => 0,
                        false => number(&e["logIndex"])
                            .filter(|i| *i >= 0)
                            .ok_or("its log index is not a number of 0 or more")?,
                    },
                    log_id: b64(&text(&e["logId"]["keyId"]))?,
                    promise: match promise.as_str() {
                        Some(text) => Some(b64(text)?),
                        None => None,
                    },
                    proof: proof::InclusionProof::from_entry(e)?,
                })
            })
            .collect::<Result<Vec<Entry>, String>>()
            .and_then(no_twice)
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
            integrated_time: Some(number(&payload["integratedTime"]).ok_or("no integrated time")?),
            log_index: number(&payload["logIndex"])
                .filter(|i| *i >= 0)
                .ok_or("no log index of 0 or more")?,
            log_id: unhex(log_id).ok_or("a log id is not hex")?,
            promise: Some(b64(value["SignedEntryTimestamp"]
                .as_str()
                .unwrap_or_default())?),
            proof: None,
        })
    }
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
