//! Families of cases issue 70 named, made from the Rekor v2 fixture (a real cosign v3 bundle, a
//! real Rekor v2 and timestamp authority) and judged by sigstore-go too; each family's count of
//! accepted and refused cases is asserted ([`FAMILIES`]), so a family cannot thin out unseen.

use super::rekor_v2::{case, with, BUNDLE, ROOT};
use super::Case;
use crate::support::same_named::{anchor, carrying, same_named, Name};
use base64::Engine;
use serde_json::{json, Value};

/// Each family, and how many of its cases the reference verifier accepts and refuses.
pub const FAMILIES: &[(&str, usize, usize)] = &[
    ("checkpoint-lines", 4, 6),
    ("carried-certificates", 4, 0),
    ("decoy-authorities", 4, 0),
];

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

pub fn cases() -> Vec<Case> {
    let bundle: Value = serde_json::from_str(BUNDLE).unwrap();
    let root: Value = serde_json::from_str(ROOT).unwrap();
    let mut cases = checkpoint_lines(&bundle, &root);
    cases.extend(carried_certificates(&bundle, &root));
    cases.extend(decoy_authorities(&bundle, &root));
    cases
}

const DEV: &str = "^dev@example\\.com$";

/// Go's note.Open: witnesses' lines skipped, up to 100 lines, each well formed.
fn checkpoint_lines(bundle: &Value, root: &Value) -> Vec<Case> {
    let pointer = "/verificationMaterial/tlogEntries/0/inclusionProof/checkpoint/envelope";
    let note = bundle.pointer(pointer).unwrap().as_str().unwrap();
    let (text, own) = note.split_once("\n\n").unwrap();
    let witness = "\u{2014} witness AAAAAAAA\n";
    let lines = [
        ("witnesses-0", String::new()),
        ("witnesses-1", witness.to_string()),
        ("witnesses-50", witness.repeat(50)),
        ("witnesses-99", witness.repeat(99)),
        ("witnesses-100", witness.repeat(100)),
        ("witnesses-150", witness.repeat(150)),
        ("name-with-plus", "\u{2014} wit+ness AAAAAAAA\n".into()),
        ("short-signature", "\u{2014} witness AAAA\n".into()),
        ("no-prefix", "witness AAAAAAAA\n".into()),
        (
            "control-character",
            "\u{2014} wit\u{1}ness AAAAAAAA\n".into(),
        ),
    ];
    lines
        .iter()
        .map(|(name, before)| {
            let changed = with(bundle, pointer, format!("{text}\n\n{before}{own}").into());
            case(&format!("checkpoint-lines/{name}"), &changed, root, DEV)
        })
        .collect()
}

/// The bundle's timestamp with its signer and same-named certificates added to the token, and
/// the fixture's authority with and without its leaf.
fn carried_certificates(bundle: &Value, root: &Value) -> Vec<Case> {
    let stamps = "/verificationMaterial/timestampVerificationData/rfc3161Timestamps";
    let real = bundle.pointer(stamps).unwrap()[0]["signedTimestamp"].clone();
    let real = b64().decode(real.as_str().unwrap()).unwrap();
    let chain = "/timestampAuthorities/0/certChain/certificates";
    let signer = root.pointer(chain).unwrap()[0]["rawBytes"].clone();
    let signer = b64().decode(signer.as_str().unwrap()).unwrap();
    let stamped = |count: usize| {
        let mut carried = vec![signer.clone()];
        carried.extend(same_named(Name::TsaIntermediate, count));
        let token = b64().encode(carrying(&real, &carried));
        with(bundle, stamps, json!([{"signedTimestamp": token}]))
    };
    let mut without_leaf = root.clone();
    let certificates = without_leaf.pointer_mut(chain).unwrap();
    certificates.as_array_mut().unwrap().remove(0);
    vec![
        case("carried-certificates/0", &stamped(0), root, DEV),
        case("carried-certificates/8", &stamped(8), root, DEV),
        case("carried-certificates/24", &stamped(24), root, DEV),
        case(
            "carried-certificates/24-no-leaf",
            &stamped(24),
            &without_leaf,
            DEV,
        ),
    ]
}

/// Timestamp and certificate authorities of the tenant's own before the real ones, each with
/// 7 intermediates named as the real signers' issuers: within the paths' budget of 32 checks.
fn decoy_authorities(bundle: &Value, root: &Value) -> Vec<Case> {
    let decoys = |name: Name, count: usize, tsa: bool| -> Vec<Value> {
        (0..count)
            .map(|i| {
                let mut certificates = same_named(name, 7);
                certificates.push(anchor(i));
                let raw: Vec<Value> = certificates
                    .iter()
                    .map(|c| json!({"rawBytes": b64().encode(c)}))
                    .collect();
                let mut authority = json!({"certChain": {"certificates": raw},
                    "validFor": {"start": "2020-01-01T00:00:00Z"}});
                if tsa {
                    authority["uri"] = format!("https://decoy-{i}.example").into();
                }
                authority
            })
            .collect()
    };
    let before = |field: &str, name: Name, count: usize, tsa: bool| {
        let mut changed = root.clone();
        let mut all = decoys(name, count, tsa);
        all.extend(root[field].as_array().unwrap().iter().cloned());
        changed[field] = all.into();
        changed
    };
    vec![
        case(
            "decoy-authorities/timestamp-1",
            bundle,
            &before("timestampAuthorities", Name::TsaIntermediate, 1, true),
            DEV,
        ),
        case(
            "decoy-authorities/timestamp-3",
            bundle,
            &before("timestampAuthorities", Name::TsaIntermediate, 3, true),
            DEV,
        ),
        case(
            "decoy-authorities/certificate-1",
            bundle,
            &before("certificateAuthorities", Name::FulcioRoot, 1, false),
            DEV,
        ),
        case(
            "decoy-authorities/certificate-3",
            bundle,
            &before("certificateAuthorities", Name::FulcioRoot, 3, false),
            DEV,
        ),
    ]
}
