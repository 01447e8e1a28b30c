//! Checkpoints: signed notes (the C2SP `signed-note` format Go's `golang.org/x/mod/sumdb/note`
//! reads) in which a log commits to a tree size and root hash. The note's text is its lines up
//! to the last blank line; each signature line after it is `— <name> <base64(key hash || sig)>`.
//! A line counts when its name and 4-byte key hash are the log's and its signature verifies;
//! lines of other signers (witnesses) are skipped, as `note.Open` skips unknown keys.

use super::b64;
use super::LogKey;
use sha2::{Digest, Sha256};

/// A checkpoint is a few lines; its signatures, one per witness.
pub const MAX_CHECKPOINT_BYTES: usize = 16 << 10;
pub const MAX_CHECKPOINT_SIGNATURES: usize = 16;

/// What a verified checkpoint commits to.
#[derive(Debug, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Vec<u8>,
}

/// Who signs a checkpoint: the log's key, the note name its lines carry (`None`: any, as a
/// Rekor v1 checkpoint is read) and the 4 bytes that hint at the key.
pub struct NoteKey<'a> {
    pub key: &'a LogKey,
    pub name: Option<&'a str>,
    pub hash: [u8; 4],
}

impl NoteKey<'_> {
    /// A Rekor v2 log's note key, as rekor-tiles derives it from the log's origin (the host of
    /// its `baseUrl`) and key: an ECDSA key's hash is the SHA-256 of its DER, an Ed25519 key's
    /// that of `origin`, a newline, the algorithm byte 1 and the key.
    pub fn rekor_v2<'a>(key: &'a LogKey, der: &[u8], origin: &'a str) -> NoteKey<'a> {
        let sum: [u8; 32] = match key {
            LogKey::P256(_) => Sha256::digest(der).into(),
            LogKey::Ed25519(raw) => Sha256::new()
                .chain_update(origin.as_bytes())
                .chain_update(b"\n\x01")
                .chain_update(raw)
                .finalize()
                .into(),
        };
        NoteKey {
            key,
            name: Some(origin),
            hash: [sum[0], sum[1], sum[2], sum[3]],
        }
    }
}

/// The checkpoint `envelope` commits to, once a line of `signer` verifies over its text; with a
/// name, the checkpoint's origin (its first line) must be that name, as `ParseCheckpoint` checks.
pub fn open(envelope: &str, signer: &NoteKey<'_>) -> Result<Checkpoint, String> {
    if envelope.len() > MAX_CHECKPOINT_BYTES {
        return Err(format!(
            "its checkpoint is over {MAX_CHECKPOINT_BYTES} bytes"
        ));
    }
    let split = envelope
        .rfind("\n\n")
        .ok_or("its checkpoint is not a signed note")?;
    // The text keeps its last newline; the signatures follow the blank line.
    let (text, rest) = envelope.split_at(split + 1);
    let signatures = rest.strip_prefix('\n').unwrap_or(rest);
    let signed = signatures
        .lines()
        .take(MAX_CHECKPOINT_SIGNATURES)
        .filter_map(|line| line.strip_prefix("\u{2014} ")?.split_once(' '))
        .filter(|(name, _)| signer.name.is_none_or(|n| n == *name))
        .filter_map(|(_, sig)| b64(sig).ok())
        // A line whose key hash is another key's is another signer's.
        .any(|sig| match sig.split_at_checked(4) {
            Some((hash, sig)) => hash == signer.hash && signer.key.verifies(text.as_bytes(), sig),
            None => false,
        });
    if !signed {
        return Err("its checkpoint is not signed by its log".into());
    }
    let mut lines = text.lines();
    let origin = lines.next().unwrap_or_default().to_string();
    if let Some(name) = signer.name {
        if origin != name {
            return Err(format!(
                "its checkpoint is the log {origin:?}'s, not {name:?}'s"
            ));
        }
    }
    let size = lines.next().and_then(|l| l.parse().ok());
    let root = lines.next().and_then(|l| b64(l).ok());
    match (size, root) {
        (Some(size), Some(root)) => Ok(Checkpoint { origin, size, root }),
        _ => Err("its checkpoint does not name a tree size and root".into()),
    }
}
