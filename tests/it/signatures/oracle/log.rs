//! A Rekor v1 log for the corpus: its key in a trusted root's `tlogs`, and bundle entries for a
//! body, with their promise (signed entry timestamp) and inclusion proof (RFC 9162 audit path
//! in a three-leaf tree, and the checkpoint the log signed), each of which a case may spoil.

use base64::Engine;
use rcgen::{KeyPair, PublicKeyData, SigningKey};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How an entry is made, and what of it a case spoils.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EntryShape {
    pub promise: bool,
    pub proof: bool,
    pub bad_promise: bool,
    pub bad_checkpoint: bool,
    /// The proof's root differs from the root its checkpoint signs.
    pub other_root: bool,
    /// The audit path leads elsewhere.
    pub bad_path: bool,
}

impl EntryShape {
    pub fn both() -> EntryShape {
        EntryShape {
            promise: true,
            proof: true,
            ..EntryShape::default()
        }
    }
}

pub struct Log {
    key: KeyPair,
}

impl Log {
    pub fn new() -> Log {
        Log {
            key: KeyPair::generate().unwrap(),
        }
    }

    fn der(&self) -> Vec<u8> {
        self.key.subject_public_key_info()
    }

    fn id(&self) -> Vec<u8> {
        Sha256::digest(self.der()).to_vec()
    }

    /// Its key, which signs as a CT log's too (an SCT).
    pub fn key(&self) -> &KeyPair {
        &self.key
    }

    /// This log in a trusted root's `tlogs` (or `ctlogs`: the shape is the same).
    pub fn root_entry(&self) -> Value {
        json!({"baseUrl": "https://rekor.invalid", "hashAlgorithm": "SHA2_256",
            "publicKey": {"rawBytes": b64(&self.der()), "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                "validFor": {"start": "2020-01-01T00:00:00Z"}},
            "logId": {"keyId": b64(&self.id())}})
    }

    /// A bundle's entry recording `body` (of `kind`) at `time`.
    pub fn entry(&self, kind: &str, body: &Value, time: i64, shape: EntryShape) -> Value {
        let body_bytes = body.to_string().into_bytes();
        let body_text = b64(&body_bytes);
        let id = self.id();
        let mut entry = json!({"logIndex": "7", "logId": {"keyId": b64(&id)},
            "kindVersion": {"kind": kind, "version": "0.0.1"},
            "integratedTime": time.to_string(), "canonicalizedBody": body_text});
        if shape.promise {
            let signed = json!({"body": body_text, "integratedTime": time,
                "logID": hex(&id), "logIndex": 7});
            let mut promise = self
                .key
                .sign(&serde_json::to_vec(&signed).unwrap())
                .unwrap();
            if shape.bad_promise {
                promise = self.key.sign(b"another entry").unwrap();
            }
            entry["inclusionPromise"] = json!({"signedEntryTimestamp": b64(&promise)});
        }
        if shape.proof {
            entry["inclusionProof"] = self.proof(&body_bytes, shape);
        }
        entry
    }

    /// The entry as leaf 1 of three, its audit path, and a checkpoint.
    fn proof(&self, body: &[u8], shape: EntryShape) -> Value {
        let leaves = [leaf_hash(b"leaf 0"), leaf_hash(body), leaf_hash(b"leaf 2")];
        let root = node_hash(&node_hash(&leaves[0], &leaves[1]), &leaves[2]);
        let mut path = [leaves[0], leaves[2]];
        if shape.bad_path {
            path[0] = leaf_hash(b"another leaf");
        }
        let signed_root = match shape.other_root {
            true => leaf_hash(b"another root"),
            false => root,
        };
        let note = format!("rekor.invalid - 42\n3\n{}\n", b64(&signed_root));
        let signature = match shape.bad_checkpoint {
            true => self.key.sign(b"another note").unwrap(),
            false => self.key.sign(note.as_bytes()).unwrap(),
        };
        let mut hinted = self.id()[..4].to_vec();
        hinted.extend_from_slice(&signature);
        let checkpoint = format!("{note}\n\u{2014} rekor.invalid {}\n", b64(&hinted));
        json!({"logIndex": "1", "treeSize": "3", "rootHash": b64(&root),
            "hashes": path.iter().map(|h| b64(h)).collect::<Vec<_>>(),
            "checkpoint": {"envelope": checkpoint}})
    }
}

fn leaf_hash(data: &[u8]) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update([0]);
    hash.update(data);
    hash.finalize().into()
}

fn node_hash(left: &[u8], right: &[u8]) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update([1]);
    hash.update(left);
    hash.update(right);
    hash.finalize().into()
}

/// A `dsse` body recording `signature` over `payload` (its envelope `envelope`) by `verifier`
/// (a certificate's or a key's PEM).
pub fn dsse_body(payload: &[u8], envelope: &Value, signature: &[u8], verifier: &str) -> Value {
    let hash = |b: &[u8]| json!({"algorithm": "sha256", "value": hex(&Sha256::digest(b))});
    json!({"apiVersion": "0.0.1", "kind": "dsse", "spec": {
        "envelopeHash": hash(envelope.to_string().as_bytes()),
        "payloadHash": hash(payload),
        "signatures": [{"signature": b64(signature), "verifier": b64(verifier.as_bytes())}]}})
}

/// A `hashedrekord` body recording `signature` over bytes hashing to `digest` by `verifier`.
pub fn hashedrekord_body(digest: &[u8], signature: &[u8], verifier: &str) -> Value {
    json!({"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": {
        "data": {"hash": {"algorithm": "sha256", "value": hex(digest)}},
        "signature": {"content": b64(signature), "publicKey": {"content": b64(verifier.as_bytes())}}}})
}
