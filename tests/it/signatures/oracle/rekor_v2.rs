//! A bundle the real cosign v3 made through a real Rekor v2 and timestamp authority (the unit
//! tests' fixture, `src/verify/fixtures/rekor-v2/`), and each thing it rests on spoiled in turn,
//! as `verify/tlog/v2/tests.rs` spoils it: judged by sigstore-go too.

use super::{Case, Ours};
use base64::Engine;
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub(super) const BUNDLE: &str =
    include_str!("../../../../src/verify/fixtures/rekor-v2/bundle.json");
const OTHER: &str = include_str!("../../../../src/verify/fixtures/rekor-v2/other-bundle.json");
pub(super) const ROOT: &str =
    include_str!("../../../../src/verify/fixtures/rekor-v2/trusted_root.json");
/// The subject of the bundle's statement (what `cosign sign` signed).
const DIGEST: &str = "sha256:6f98f6a265c80a24252daa443bad61ee68dce67eb5f1ee79a273ae73922500e0";
const ISSUER: &str = "^https://token\\.actions\\.githubusercontent\\.com$";

pub(super) fn case(name: &str, bundle: &Value, root: &Value, subject: &str) -> Case {
    let identities = vec![(ISSUER.to_string(), subject.to_string())];
    let (bundle, root) = (bundle.to_string(), root.to_string());
    let judge = json!({"cosign": {"bundle": bundle, "trustedRoot": root, "keys": [],
        "identities": [{"issuer": ISSUER, "subject": subject}], "requireTlog": true,
        "digest": DIGEST}});
    Case {
        id: format!("rekor-v2/{name}"),
        judge,
        ours: Ours::Cosign {
            data: BTreeMap::from([("trusted_root.json".to_string(), root.into_bytes())]),
            identities,
            require_tlog: true,
            bundle: bundle.into_bytes(),
        },
        image: ("registry.invalid/team/app".to_string(), DIGEST.to_string()),
    }
}

/// A copy of `value` with the field at `pointer` set (added when absent).
pub(super) fn with(value: &Value, pointer: &str, new: Value) -> Value {
    let mut changed = value.clone();
    let (parent, field) = pointer.rsplit_once('/').unwrap();
    let parent = changed.pointer_mut(parent).unwrap();
    match parent {
        Value::Array(items) => items[field.parse::<usize>().unwrap()] = new,
        _ => parent[field] = new,
    }
    changed
}

pub fn cases() -> Vec<Case> {
    let bundle: Value = serde_json::from_str(BUNDLE).unwrap();
    let other: Value = serde_json::from_str(OTHER).unwrap();
    let root: Value = serde_json::from_str(ROOT).unwrap();
    let dev = "^dev@example\\.com$";
    let entry = "/verificationMaterial/tlogEntries/0";
    let stamps = "/verificationMaterial/timestampVerificationData/rfc3161Timestamps";
    let ca = root["certificateAuthorities"][0]["certChain"]["certificates"][0].clone();
    let note = bundle
        .pointer(&format!("{entry}/inclusionProof/checkpoint/envelope"))
        .unwrap();
    let spoiled_note = note
        .as_str()
        .unwrap()
        .replace("rekor.local Mk+tIjg+", "rekor.local Mk+tIjg/");
    let bundles = [
        ("valid", bundle.clone()),
        (
            "unknown-log",
            with(&bundle, &format!("{entry}/logId/keyId"), "AAAA".into()),
        ),
        (
            "other-path",
            with(
                &bundle,
                &format!("{entry}/inclusionProof/hashes/0"),
                "Q3u8unqkmQoMJ66KoUE5K0zH1lWYHNVGpMFXlo7QOTQ=".into(),
            ),
        ),
        (
            "other-index",
            with(&bundle, &format!("{entry}/logIndex"), "1".into()),
        ),
        (
            "no-proof",
            with(&bundle, &format!("{entry}/inclusionProof"), Value::Null),
        ),
        (
            "spoiled-checkpoint",
            with(
                &bundle,
                &format!("{entry}/inclusionProof/checkpoint/envelope"),
                spoiled_note.into(),
            ),
        ),
        ("no-timestamp", with(&bundle, stamps, json!([]))),
        (
            "other-signatures-timestamp",
            with(&bundle, stamps, other.pointer(stamps).unwrap().clone()),
        ),
        ("other-statement", other.clone()),
        // A time no promise vouches for: judged by it, as cosign judges a Rekor v1 entry.
        (
            "integrated-time-without-promise",
            with(
                &bundle,
                &format!("{entry}/integratedTime"),
                "1795780675".into(),
            ),
        ),
    ];
    // A body that records no signature: the leaf is rebuilt, but the body must be shaped.
    let written = bundle
        .pointer(&format!("{entry}/canonicalizedBody"))
        .unwrap();
    let mut body: Value = serde_json::from_slice(&decode(written.as_str().unwrap())).unwrap();
    body["spec"]["hashedRekordV002"]["signature"]
        .as_object_mut()
        .unwrap()
        .remove("content");
    let unsigned = with(
        &bundle,
        &format!("{entry}/canonicalizedBody"),
        encode(body.to_string().as_bytes()).into(),
    );
    let mut cases: Vec<Case> = bundles
        .iter()
        .map(|(name, b)| case(name, b, &root, dev))
        .collect();
    cases.push(case("body-without-signature", &unsigned, &root, dev));
    cases.push(case(
        "other-identity",
        &bundle,
        &root,
        "^ops@example\\.com$",
    ));
    let roots = [
        (
            "other-origin",
            with(&root, "/tlogs/0/baseUrl", "https://rekor.example".into()),
        ),
        (
            "no-authority",
            with(&root, "/timestampAuthorities", json!([])),
        ),
        (
            "authority-ended",
            with(
                &root,
                "/timestampAuthorities/0/validFor",
                json!({"start": "2020-01-01T00:00:00Z", "end": "2021-01-01T00:00:00Z"}),
            ),
        ),
        (
            "authority-other-root",
            with(
                &root,
                "/timestampAuthorities/0/certChain/certificates/2",
                ca.clone(),
            ),
        ),
        (
            "authority-no-leaf",
            with(
                &root,
                "/timestampAuthorities/0/certChain/certificates",
                json!([ca]),
            ),
        ),
        (
            "ca-ended",
            with(
                &root,
                "/certificateAuthorities/0/validFor",
                json!({"start": "2020-01-01T00:00:00Z", "end": "2021-01-01T00:00:00Z"}),
            ),
        ),
    ];
    cases.extend(roots.iter().map(|(name, r)| case(name, &bundle, r, dev)));
    cases
}

fn decode(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
