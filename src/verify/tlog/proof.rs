//! A log entry's inclusion proof (RFC 9162, section 2.1.3): the audit path from the entry's leaf
//! to the root of a tree of `treeSize` entries, and the checkpoint, a signed note in which the
//! log commits to that size and root. Checked when a bundle carries one, as sigstore-go does
//! offline: a proof that does not lead to its checkpoint's root, or a checkpoint the entry's log
//! did not sign, fails the entry even when its promise verifies.

use super::{b64, number};
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use sha2::{Digest, Sha256};

/// A tree of under 2^64 leaves has an audit path of at most 64 hashes.
pub const MAX_PROOF_HASHES: usize = 64;
/// A checkpoint is a few lines; its signatures, one per witness.
pub const MAX_CHECKPOINT_BYTES: usize = 16 << 10;
pub const MAX_CHECKPOINT_SIGNATURES: usize = 16;

/// `verificationMaterial.tlogEntries[].inclusionProof` of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InclusionProof {
    /// The leaf's index in this tree (a shard's own index, not the entry's global one).
    index: u64,
    tree_size: u64,
    root_hash: Vec<u8>,
    hashes: Vec<Vec<u8>>,
    checkpoint: String,
}

impl InclusionProof {
    /// The entry's proof, if it has one.
    pub fn from_entry(entry: &serde_json::Value) -> Result<Option<InclusionProof>, String> {
        let proof = &entry["inclusionProof"];
        if proof.is_null() {
            return Ok(None);
        }
        let hashes = proof["hashes"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if hashes.len() > MAX_PROOF_HASHES {
            return Err(format!(
                "its inclusion proof has over {MAX_PROOF_HASHES} hashes"
            ));
        }
        let checkpoint = proof["checkpoint"]["envelope"].as_str().unwrap_or_default();
        if checkpoint.len() > MAX_CHECKPOINT_BYTES {
            return Err(format!(
                "its checkpoint is over {MAX_CHECKPOINT_BYTES} bytes"
            ));
        }
        let unsigned = |v: &serde_json::Value| number(v).and_then(|n| u64::try_from(n).ok());
        Ok(Some(InclusionProof {
            index: unsigned(&proof["logIndex"]).ok_or("its inclusion proof has no index")?,
            tree_size: unsigned(&proof["treeSize"]).ok_or("its inclusion proof has no size")?,
            root_hash: b64(proof["rootHash"].as_str().unwrap_or_default())?,
            hashes: hashes
                .iter()
                .map(|h| b64(h.as_str().unwrap_or_default()))
                .collect::<Result<_, _>>()?,
            checkpoint: checkpoint.to_string(),
        }))
    }

    /// Checks that `body` (the canonicalized entry) is the leaf at this index of the tree whose
    /// root the log `key` (with id `key_id`) signed in the checkpoint.
    pub fn verify(&self, body: &[u8], key: &VerifyingKey, key_id: &[u8]) -> Result<(), String> {
        let root = root_from_path(self.index, self.tree_size, leaf_hash(body), &self.hashes)?;
        if root.as_slice() != self.root_hash.as_slice() {
            return Err("its inclusion proof does not lead to the proof's root hash".into());
        }
        let (size, signed_root) = checkpoint(&self.checkpoint, key, key_id)?;
        if size != self.tree_size || signed_root != self.root_hash {
            return Err(format!(
                "its checkpoint commits to another tree (size {size}, not {})",
                self.tree_size
            ));
        }
        Ok(())
    }
}

fn leaf_hash(leaf: &[u8]) -> [u8; 32] {
    Sha256::new()
        .chain_update([0])
        .chain_update(leaf)
        .finalize()
        .into()
}

fn node_hash(left: &[u8], right: &[u8]) -> [u8; 32] {
    let hasher = Sha256::new().chain_update([1]).chain_update(left);
    hasher.chain_update(right).finalize().into()
}

/// The root the audit path leads to (RFC 9162, 2.1.3.2): the inner part climbs by the index's
/// bits up to where the paths of `index` and the last leaf part, the border part joins the
/// right edge.
fn root_from_path(
    index: u64,
    size: u64,
    leaf: [u8; 32],
    path: &[Vec<u8>],
) -> Result<[u8; 32], String> {
    if index >= size {
        return Err(format!(
            "its inclusion proof's index {index} is not inside its tree of {size}"
        ));
    }
    let inner = (u64::BITS - (index ^ (size - 1)).leading_zeros()) as usize;
    // Sizes are read as i64, so `inner` stays under 64; checked all the same.
    let border = index.checked_shr(inner as u32).unwrap_or(0).count_ones() as usize;
    if path.len() != inner + border || path.iter().any(|h| h.len() != 32) {
        return Err("its inclusion proof's path does not fit its index and tree size".into());
    }
    let mut hash = leaf;
    for (level, sibling) in path[..inner].iter().enumerate() {
        hash = match (index >> level) & 1 {
            0 => node_hash(&hash, sibling),
            _ => node_hash(sibling, &hash),
        };
    }
    for sibling in &path[inner..] {
        hash = node_hash(sibling, &hash);
    }
    Ok(hash)
}

/// A checkpoint's tree size and root hash, once a signature line of the log (its key hint the
/// first 4 bytes of its key id) verifies over the note: origin, size, base64 root, optional
/// lines, up to the blank line.
fn checkpoint(envelope: &str, key: &VerifyingKey, key_id: &[u8]) -> Result<(u64, Vec<u8>), String> {
    let (note, signatures) = envelope
        .split_once("\n\n")
        .ok_or("its checkpoint is not a signed note")?;
    let note = format!("{note}\n");
    let signed = signatures
        .lines()
        .take(MAX_CHECKPOINT_SIGNATURES)
        .filter_map(|line| line.strip_prefix("\u{2014} "))
        .filter_map(|line| b64(line.rsplit(' ').next()?).ok())
        // A line whose key hint is another key's is another signer's, as Rekor reads it.
        .filter(|sig| sig.get(..4).is_some_and(|hint| key_id.starts_with(hint)))
        .any(|sig| {
            Signature::from_der(&sig[4..]).is_ok_and(|s| key.verify(note.as_bytes(), &s).is_ok())
        });
    if !signed {
        return Err("its checkpoint is not signed by its log".into());
    }
    let mut lines = note.lines().skip(1);
    let size = lines.next().and_then(|l| l.parse().ok());
    let root = lines.next().and_then(|l| b64(l).ok());
    match (size, root) {
        (Some(size), Some(root)) => Ok((size, root)),
        _ => Err("its checkpoint does not name a tree size and root".into()),
    }
}

#[cfg(test)]
mod tests;
