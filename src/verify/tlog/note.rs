//! Checkpoints: signed notes (the C2SP `signed-note` format Go's `golang.org/x/mod/sumdb/note`
//! reads) in which a log commits to a tree size and root hash. The note's text is its lines up
//! to the last blank line; each signature line after it is `— <name> <base64(key hash || sig)>`.
//! A Rekor v2 checkpoint is read as `note.Open` reads it (other signers' lines, witnesses,
//! skipped); a Rekor v1 checkpoint as rekor's `SignedCheckpoint` reads it (every line the
//! log's), as sigstore-go reads each.

use super::b64;
use super::LogKey;
use sha2::{Digest, Sha256};

/// A checkpoint is a few lines; its signatures, one per witness.
pub const MAX_CHECKPOINT_BYTES: usize = 16 << 10;
/// Signature lines, as Go's note.Open bounds them.
pub const MAX_CHECKPOINT_SIGNATURES: usize = 100;

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

/// The checkpoint `envelope` commits to, once its signature lines are as the log's verifier
/// reads them ([`rekor_v1_signed`] or [`note_signed`]); with a name, the checkpoint's origin (its
/// first line) must be that name, as `ParseCheckpoint` checks.
pub fn open(envelope: &str, signer: &NoteKey<'_>) -> Result<Checkpoint, String> {
    if envelope.len() > MAX_CHECKPOINT_BYTES {
        return Err(format!(
            "its checkpoint is over {MAX_CHECKPOINT_BYTES} bytes"
        ));
    }
    let split = envelope
        .rfind("\n\n")
        .ok_or("its checkpoint is not a signed note")?;
    // The text keeps its last newline; the signatures follow the blank line, and end with one.
    let (text, signatures) = (&envelope[..split + 1], &envelope[split + 2..]);
    if !signatures.ends_with('\n') {
        return Err("its checkpoint's signatures do not end with a newline".into());
    }
    match signer.name {
        None => rekor_v1_signed(text, signatures, signer)?,
        Some(name) => note_signed(envelope, text, signatures, signer, name)?,
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

/// A signature line `— <name> <base64>`: its name, key hash and signature, when well formed.
fn line_parts(line: &str) -> Option<(&str, [u8; 4], Vec<u8>)> {
    let (name, encoded) = line.strip_prefix("\u{2014} ")?.split_once(' ')?;
    let signed = b64(encoded).ok().filter(|s| s.len() >= 5)?;
    let (hash, signature) = signed.split_at(4);
    Some((name, hash.try_into().ok()?, signature.to_vec()))
}

/// Rekor v1's reading (rekor's `SignedCheckpoint`, which sigstore-go verifies a v1 entry's
/// checkpoint with): every line is the log's (its key hash, whatever its name) and verifies;
/// one line of anyone else, or one that does not parse, refuses the checkpoint.
fn rekor_v1_signed(text: &str, signatures: &str, signer: &NoteKey<'_>) -> Result<(), String> {
    let mut verified = std::collections::HashSet::new();
    for line in signatures.lines() {
        let (name, hash, signature) = line_parts(line)
            .filter(|(name, _, _)| !name.is_empty() && !name.contains(char::is_whitespace))
            .ok_or("its checkpoint has a signature line that does not parse")?;
        if hash != signer.hash {
            return Err(format!(
                "its checkpoint carries a signature of another key ({name}), which a Rekor v1 \
                 checkpoint may not"
            ));
        }
        // The same line twice is one verification.
        if verified.contains(line) || signer.key.verifies(text.as_bytes(), &signature) {
            verified.insert(line);
            continue;
        }
        return Err("its checkpoint is not signed by its log".into());
    }
    match verified.is_empty() {
        true => Err("its checkpoint is not signed by its log".into()),
        false => Ok(()),
    }
}

/// Go's `note.Open`, which sigstore-go reads a Rekor v2 checkpoint with: UTF-8 without control
/// characters but newlines; each line well formed (a name without spaces or `+`, a signature
/// of at least 5 bytes); at most [`MAX_CHECKPOINT_SIGNATURES`] lines; other signers' lines
/// (witnesses) skipped, the log's first line verified (a failure refuses the note), and at
/// least one of the log's.
fn note_signed(
    envelope: &str,
    text: &str,
    signatures: &str,
    signer: &NoteKey<'_>,
    origin: &str,
) -> Result<(), String> {
    if envelope.chars().any(|c| c < ' ' && c != '\n') {
        return Err("its checkpoint holds control characters".into());
    }
    let mut verified = false;
    for (count, line) in signatures.split_terminator('\n').enumerate() {
        let (name, hash, signature) = line_parts(line)
            .filter(|(name, _, _)| {
                !name.is_empty() && !name.contains(char::is_whitespace) && !name.contains('+')
            })
            .ok_or("its checkpoint has a signature line that does not parse")?;
        if count == MAX_CHECKPOINT_SIGNATURES {
            return Err(format!(
                "its checkpoint has over {MAX_CHECKPOINT_SIGNATURES} signature lines"
            ));
        }
        // Another signer's (a witness), or the log's again: skipped, as note.Open skips them.
        if name != origin || hash != signer.hash || verified {
            continue;
        }
        if !signer.key.verifies(text.as_bytes(), &signature) {
            return Err("its checkpoint's signature by its log does not verify".into());
        }
        verified = true;
    }
    match verified {
        true => Ok(()),
        false => Err("its checkpoint is not signed by its log".into()),
    }
}
