//! Audit paths made by the recursive definition of RFC 9162 (2.1.3.1) for every leaf of every
//! small tree lead to the tree's root; checkpoints signed here with a log key; an entry whose
//! promise verifies still fails on a proof or checkpoint that does not.

use super::super::note::MAX_CHECKPOINT_SIGNATURES;
use super::super::tests::{dsse_entry, Log};
use super::super::{Entry, LogKeys, Logged};
use super::*;
use base64::Engine;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::Signature;
use p256::ecdsa::SigningKey;

fn enc(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The largest power of two below `n` (n > 1).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

/// MTH(D[n]).
fn tree_hash(leaves: &[Vec<u8>]) -> [u8; 32] {
    match leaves.len() {
        1 => leaf_hash(&leaves[0]),
        n => {
            let k = split(n);
            node_hash(&tree_hash(&leaves[..k]), &tree_hash(&leaves[k..]))
        }
    }
}

/// PATH(m, D[n]).
fn audit_path(m: usize, leaves: &[Vec<u8>]) -> Vec<Vec<u8>> {
    if leaves.len() == 1 {
        return Vec::new();
    }
    let k = split(leaves.len());
    let (mut path, other) = match m < k {
        true => (audit_path(m, &leaves[..k]), tree_hash(&leaves[k..])),
        false => (audit_path(m - k, &leaves[k..]), tree_hash(&leaves[..k])),
    };
    path.push(other.to_vec());
    path
}

/// A checkpoint for a tree of `size` with `root`, signed by `key`.
fn checkpoint_by(key: &SigningKey, size: usize, root: &[u8]) -> String {
    use p256::pkcs8::EncodePublicKey;
    let note = format!("rekor.example - 42\n{size}\n{}\n", enc(root));
    let signature: Signature = key.sign(note.as_bytes());
    let der = key.verifying_key().to_public_key_der().unwrap();
    let mut signed = Sha256::digest(der.as_bytes())[..4].to_vec();
    signed.extend_from_slice(signature.to_der().as_bytes());
    format!("{note}\n\u{2014} rekor.example {}\n", enc(&signed))
}

#[test]
fn every_leaf_of_every_small_tree_leads_to_its_root() {
    for size in 1..=33usize {
        let leaves: Vec<Vec<u8>> = (0..size)
            .map(|i| format!("leaf {i}").into_bytes())
            .collect();
        let root = tree_hash(&leaves);
        for (m, leaf) in leaves.iter().enumerate() {
            let path = audit_path(m, &leaves);
            let got = root_from_path(m as u64, size as u64, leaf_hash(leaf), &path);
            assert_eq!(got, Ok(root), "leaf {m} of {size}");
            if let Some(first) = path.first() {
                let mut wrong = path.clone();
                wrong[0] = node_hash(first, first).to_vec();
                let got = root_from_path(m as u64, size as u64, leaf_hash(leaf), &wrong);
                assert_ne!(got, Ok(root), "a changed sibling, leaf {m} of {size}");
                let short = &path[1..];
                assert!(root_from_path(m as u64, size as u64, leaf_hash(leaf), short).is_err());
            }
        }
    }
    let err = root_from_path(5, 5, [0; 32], &[]).unwrap_err();
    assert!(err.contains("index 5 is not inside its tree of 5"), "{err}");
    assert!(
        root_from_path(0, 2, [0; 32], &[vec![0; 31]]).is_err(),
        "a hash of 31 bytes"
    );
}

/// An entry for a signing, promised by `log`, with a proof for leaf 2 of a tree of 5 whose
/// checkpoint `signer` signed, changed by `change` first.
fn proven(
    log: &Log,
    signer: &SigningKey,
    change: impl FnOnce(&mut serde_json::Value),
) -> Result<Logged, String> {
    let (mut entry, made) = dsse_entry(log);
    let body = b64(entry["canonicalizedBody"].as_str().unwrap()).unwrap();
    let mut leaves: Vec<Vec<u8>> = (0..5).map(|i| vec![i]).collect();
    leaves[2] = body;
    let root = tree_hash(&leaves);
    let hashes: Vec<String> = audit_path(2, &leaves).iter().map(|h| enc(h)).collect();
    entry["inclusionProof"] = serde_json::json!({"logIndex": "2", "treeSize": "5",
        "rootHash": enc(&root), "hashes": hashes,
        "checkpoint": {"envelope": checkpoint_by(signer, 5, &root)}});
    change(&mut entry);
    let keys = LogKeys::from_root(log.trusted_root().as_bytes()).unwrap();
    let entries = Entry::from_bundle(&[entry])?;
    keys.verify(&entries[0], &made.signing())
}

#[test]
fn a_proof_must_lead_to_the_root_its_log_signed() {
    let log = Log::new(9);
    assert_eq!(proven(&log, &log.0, |_| {}), Ok(Logged::At(1_700_000_000)));
    let err = |change: fn(&mut serde_json::Value)| proven(&log, &log.0, change).unwrap_err();
    assert!(
        err(|e| e["inclusionProof"]["hashes"][0] = enc(&[7; 32]).into())
            .contains("does not lead to the proof's root hash")
    );
    assert!(err(|e| e["inclusionProof"]["logIndex"] = "3".into())
        .contains("does not lead to the proof's root hash"));
    assert!(
        err(|e| e["inclusionProof"]["rootHash"] = enc(&[7; 32]).into())
            .contains("does not lead to the proof's root hash")
    );
    let other = Log::new(8);
    let by_other = proven(&log, &other.0, |_| {}).unwrap_err();
    assert!(
        by_other.contains("its checkpoint carries a signature of another key"),
        "{by_other}"
    );
    // The log's own signature under another key's hint is not read as the log's.
    let hinted = proven(&log, &log.0, |e| {
        let envelope = e["inclusionProof"]["checkpoint"]["envelope"]
            .as_str()
            .unwrap();
        let (note, line) = envelope.split_once("\n\n").unwrap();
        let encoded = line.trim_end().rsplit(' ').next().unwrap();
        let mut signed = b64(encoded).unwrap();
        signed[0] ^= 0xff;
        e["inclusionProof"]["checkpoint"]["envelope"] =
            format!("{note}\n\n\u{2014} rekor.example {}\n", enc(&signed)).into();
    })
    .unwrap_err();
    assert!(hinted.contains("a signature of another key"), "{hinted}");
    let log_key = log.0.clone();
    let bigger = proven(&log, &log.0, move |e| {
        let root = b64(e["inclusionProof"]["rootHash"].as_str().unwrap()).unwrap();
        e["inclusionProof"]["checkpoint"]["envelope"] = checkpoint_by(&log_key, 6, &root).into();
    })
    .unwrap_err();
    assert!(
        bigger.contains("commits to another tree (size 6, not 5)"),
        "{bigger}"
    );
    assert!(
        err(|e| e["inclusionProof"]["checkpoint"]["envelope"] = "no note".into())
            .contains("not a signed note")
    );
}

#[test]
fn proofs_and_checkpoints_are_bounded() {
    // The documented numbers (docs/security.md): 64 hashes, 16 KiB, 100 signature lines.
    assert_eq!(
        (
            MAX_PROOF_HASHES,
            MAX_CHECKPOINT_BYTES,
            MAX_CHECKPOINT_SIGNATURES
        ),
        (64, 16_384, 100)
    );
    let log = Log::new(9);
    let long = proven(&log, &log.0, |e| {
        e["inclusionProof"]["hashes"] = vec![enc(&[0; 32]); MAX_PROOF_HASHES + 1].into();
    })
    .unwrap_err();
    assert!(long.contains("over 64 hashes"), "{long}");
    let big = proven(&log, &log.0, |e| {
        let text = "x".repeat(MAX_CHECKPOINT_BYTES + 1);
        e["inclusionProof"]["checkpoint"]["envelope"] = text.into();
    })
    .unwrap_err();
    assert!(big.contains("checkpoint is over 16384 bytes"), "{big}");
    // Exactly at each bound: read, and refused for what it is.
    let exactly = proven(&log, &log.0, |e| {
        e["inclusionProof"]["hashes"] = vec![enc(&[0; 32]); MAX_PROOF_HASHES].into();
    })
    .unwrap_err();
    assert!(!exactly.contains("over 64 hashes"), "{exactly}");
    let exactly = proven(&log, &log.0, |e| {
        let text = "x".repeat(MAX_CHECKPOINT_BYTES);
        e["inclusionProof"]["checkpoint"]["envelope"] = text.into();
    })
    .unwrap_err();
    assert!(!exactly.contains("over 16384 bytes"), "{exactly}");
}

/// A Rekor v1 checkpoint as rekor's SignedCheckpoint reads it, which sigstore-go verifies a v1
/// entry's with: every signature line is the log's and verifies.
#[test]
fn a_rekor_v1_checkpoint_is_signed_by_its_log_alone() {
    let log = Log::new(9);
    let with_lines = |lines: &'static str, after: bool| {
        proven(&log, &log.0, move |e| {
            let envelope = e["inclusionProof"]["checkpoint"]["envelope"]
                .as_str()
                .unwrap();
            let (note, own) = envelope.split_once("\n\n").unwrap();
            let lines = match after {
                true => format!("{own}{lines}"),
                false => format!("{lines}{own}"),
            };
            e["inclusionProof"]["checkpoint"]["envelope"] = format!("{note}\n\n{lines}").into();
        })
    };
    // A witness's line beside the log's, before or after it: refused.
    for after in [false, true] {
        let err = with_lines("\u{2014} witness AAAAAAAA\n", after).unwrap_err();
        assert!(
            err.contains("a signature of another key (witness)"),
            "{err}"
        );
    }
    // A line that does not parse, or too short a signature.
    for line in [
        "garbage\n",
        "\u{2014} witness\n",
        "\u{2014} w AAAA\n",
        // No name (two spaces), or a name with a tab: as Go's Fscanf reads "%s", none.
        "\u{2014}  AAAAAAAA\n",
        "\u{2014} wit\tness AAAAAAAA\n",
    ] {
        let err = with_lines(line, true).unwrap_err();
        assert!(
            err.contains("a signature line that does not parse"),
            "{err}"
        );
    }
    // The log's own line twice: read as one.
    let twice = proven(&log, &log.0, |e| {
        let envelope = e["inclusionProof"]["checkpoint"]["envelope"]
            .as_str()
            .unwrap();
        let (note, own) = envelope.split_once("\n\n").unwrap();
        e["inclusionProof"]["checkpoint"]["envelope"] = format!("{note}\n\n{own}{own}").into();
    });
    assert!(twice.is_ok());
    assert!(with_lines("", true).is_ok());
    // No final newline.
    let unterminated = proven(&log, &log.0, |e| {
        let envelope = e["inclusionProof"]["checkpoint"]["envelope"]
            .as_str()
            .unwrap()
            .trim_end()
            .to_string();
        e["inclusionProof"]["checkpoint"]["envelope"] = envelope.into();
    });
    assert!(unterminated
        .unwrap_err()
        .contains("do not end with a newline"));
}
