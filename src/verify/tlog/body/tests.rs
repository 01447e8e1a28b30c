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

/// A legacy attestation layer's entry is compared as cosign compares it: the envelope as
/// stored hashed (`intoto` 0.0.1 as cosign v2 writes it, 0.0.2 and `dsse` with exactly one
/// signature), its key the leaf; any other kind, hash, algorithm or key refuses it.
#[test]
fn an_attestation_layers_body_records_its_envelope() {
    let log = Log::new(9);
    let keys = LogKeys::from_root(log.trusted_root().as_bytes()).unwrap();
    let pem =
        |b64: &str| format!("-----BEGIN CERTIFICATE-----\n{b64}\n-----END CERTIFICATE-----\n");
    let (cert, other_cert) = (enc(pem("AAEC").as_bytes()), enc(pem("AAED").as_bytes()));
    let (envelope, leaf) = (
        br#"{"payloadType":"t","payload":"","signatures":[]}"#.to_vec(),
        vec![0, 1, 2],
    );
    let signing = Signing {
        kind: "attestation",
        signed: b"pae",
        payload: &envelope,
        signatures: &[],
        leaf: &leaf,
    };
    let hash = |bytes: &[u8], algorithm: &str| serde_json::json!({"algorithm": algorithm, "value": format!("{:x}", Sha256::digest(bytes))});
    let sha = hash(&envelope, "sha256");
    let v001 = |hash: serde_json::Value, key: &str| {
        serde_json::json!({"apiVersion": "0.0.1", "kind": "intoto",
            "spec": {"content": {"hash": hash, "payloadHash": sha}, "publicKey": key}})
    };
    let v002 = |signatures: serde_json::Value| {
        serde_json::json!({"apiVersion": "0.0.2", "kind": "intoto",
            "spec": {"content": {"hash": sha, "envelope": {"signatures": signatures}}}})
    };
    let dsse = |signatures: serde_json::Value| {
        serde_json::json!({"apiVersion": "0.0.1", "kind": "dsse",
            "spec": {"envelopeHash": sha, "signatures": signatures}})
    };
    let judged = |body: serde_json::Value| {
        let entry = Entry::from_bundle(&[log.entry(&body, 1_700_000_000)]).unwrap();
        keys.verify(&entry[0], &signing)
    };
    let logged = Ok(Logged::At(1_700_000_000));
    assert_eq!(judged(v001(sha.clone(), &cert)), logged);
    let one = serde_json::json!([{"publicKey": cert, "sig": "AA=="}]);
    assert_eq!(judged(v002(one)), logged);
    assert_eq!(
        judged(dsse(serde_json::json!([{"verifier": cert}]))),
        logged
    );
    let refused = |body, why: &str| assert_eq!(judged(body), Err(why.to_string()));
    refused(
        v001(hash(b"other", "sha256"), &cert),
        "its body records another envelope",
    );
    refused(
        v001(hash(&envelope, "sha512"), &cert),
        "its body records another envelope",
    );
    refused(
        v001(sha.clone(), &other_cert),
        "its body records another certificate",
    );
    let two = serde_json::json!([{"verifier": cert}, {"verifier": other_cert}]);
    refused(dsse(two), "its body records other than one signature");
    refused(
        v002(serde_json::json!([])),
        "its body records other than one signature",
    );
    let mut rekord = v001(sha.clone(), &cert);
    rekord["kind"] = "hashedrekord".into();
    refused(
        rekord,
        "its body is of kind Some(\"hashedrekord\") Some(\"0.0.1\"); an attestation is logged as intoto or dsse",
    );
}
