//! What a Rekor v1 body records, beside the kinds `tlog::tests` covers (`dsse`,
//! `hashedrekord`).

use super::super::tests::{enc, Log};
use super::super::{Entry, LogKeys, Logged, Signing};
use sha2::{Digest, Sha256};

/// Rekor v1's `intoto` 0.0.2 logs an envelope too: its first signature twice base64 (a base64
/// field holding the envelope's base64), its key's PEM once, the payload's hash.
#[test]
fn an_intoto_body_records_an_envelope() {
    let log = Log::new(9);
    let keys = LogKeys::from_root(log.trusted_root().as_bytes()).unwrap();
    let cert = "-----BEGIN CERTIFICATE-----\nAAEC\n-----END CERTIFICATE-----\n";
    let (payload, signature, leaf) = (b"payload".to_vec(), vec![1, 2, 3], vec![0, 1, 2]);
    let signing = Signing {
        kind: "dsse",
        signed: &payload,
        payload: &payload,
        signatures: std::slice::from_ref(&signature),
        leaf: &leaf,
    };
    let intoto = |sig: String, hash: &[u8]| {
        serde_json::json!({"apiVersion": "0.0.2", "kind": "intoto", "spec": {"content": {
            "envelope": {"payloadType": "application/vnd.in-toto+json",
                "signatures": [{"sig": sig, "publicKey": enc(cert.as_bytes())}]},
            "payloadHash": {"algorithm": "sha256", "value": format!("{:x}", Sha256::digest(hash))}}}})
    };
    let twice = enc(enc(&signature).as_bytes());
    let entry = |body| Entry::from_bundle(&[log.entry(&body, 1_700_000_000)]).unwrap();
    let logged = entry(intoto(twice.clone(), &payload));
    assert_eq!(
        keys.verify(&logged[0], &signing),
        Ok(Logged::At(1_700_000_000))
    );
    let once = entry(intoto(enc(&signature), &payload));
    let err = keys.verify(&once[0], &signing).unwrap_err();
    assert_eq!(err, "its body records another signature or certificate");
    let other = entry(intoto(twice, b"other"));
    let err = keys.verify(&other[0], &signing).unwrap_err();
    assert_eq!(err, "its body records another payload");
}
