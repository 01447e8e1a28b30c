//! A log entry's inclusion proof (RFC 9162, section 2.1.3): the audit path from the entry's leaf
//! to the root of a tree of `treeSize` entries, and the checkpoint, a signed note in which the
//! log commits to that size and root. Checked when a bundle carries one, as sigstore-go does
//! offline: a proof that does not lead to its checkpoint's root, or a checkpoint the entry's log
//! did not sign, fails the entry even when its promise verifies.

pub use super::note::MAX_CHECKPOINT_BYTES;
use super::note::{self, NoteKey};
use super::{b64, number, LogKey};
use sha2::{Digest, Sha256};

/// A tree of under 2^64 leaves has an audit path of at most 64 hashes.
pub const MAX_PROOF_HASHES: usize = 64;

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
        // Protobuf's JSON leaves out a zero: the first leaf's index (a Rekor v2 shard's too).
        let unsigned = |v: &serde_json::Value| match v.is_null() {
            true => Some(0),
            false => number(v).and_then(|n| u64::try_from(n).ok()),
        };
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
    /// root the log `key` (with id `key_id`) signed in the checkpoint (Rekor v1: the line's key
    /// hash is the first 4 bytes of the log id, whatever its name).
    pub fn verify(&self, body: &[u8], key: &LogKey, key_id: &[u8]) -> Result<(), String> {
        let root = root_from_path(self.index, self.tree_size, leaf_hash(body), &self.hashes)?;
        if root.as_slice() != self.root_hash.as_slice() {
            return Err("its inclusion proof does not lead to the proof's root hash".into());
        }
        let hash = key_id
            .get(..4)
            .and_then(|h| h.try_into().ok())
            .unwrap_or_default();
        let signer = NoteKey {
            key,
            name: None,
            hash,
        };
        let checkpoint = note::open(&self.checkpoint, &signer)?;
        if checkpoint.size != self.tree_size || checkpoint.root != self.root_hash {
            return Err(format!(
                "its checkpoint commits to another tree (size {}, not {})",
                checkpoint.size, self.tree_size
            ));
        }
        Ok(())
    }

    /// Rekor v2's reading (rekor-tiles' `VerifyLogEntryWithHash`): the leaf `leaf` at the
    /// entry's own `index` is in the tree the checkpoint `signer` signed commits to, by this
    /// proof's path; the proof's own size and root are not consulted.
    pub fn verify_v2(
        &self,
        index: u64,
        leaf: [u8; 32],
        signer: &NoteKey<'_>,
    ) -> Result<(), String> {
        let checkpoint = note::open(&self.checkpoint, signer)?;
        let root = root_from_path(index, checkpoint.size, leaf, &self.hashes)?;
        if root.as_slice() != checkpoint.root.as_slice() {
            // The leaf is rebuilt from the signature in hand: another signature, certificate
            // or signed bytes than those logged (the suite's rekor2-dsse cases) end here.
            return Err(
                "its inclusion proof does not lead to the root its checkpoint signs from the \
                 entry this signature makes (its signature, certificate and signed bytes): \
                 the log holds another"
                    .into(),
            );
        }
        Ok(())
    }
}

pub(super) fn leaf_hash(leaf: &[u8]) -> [u8; 32] {
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

#[cfg(test)]
mod tests;
