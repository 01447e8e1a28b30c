//! How the cosign cases' bundles are made: the trusted root with its authorities and log, the
//! in-toto statement in a DSSE envelope signed as a case asks, the log entry recording it (or
//! spoiled as a case asks), and the bundles signed with a key.

use super::cosign::{Envelope, Logged, ENVELOPES, IN_TOTO, V03};
use super::log::{b64, dsse_body, hashedrekord_body, EntryShape, Log};
use super::pki::{at, key_pair, rfc3339, Alg, Ca};
use super::{Case, Ours, DIGEST, REPOSITORY};
// The library's encoding: sigstore-go checks every signature over its own, so a wrong one
// would show as a disagreement.
use image_reflector::verify::bundle::pae;
use rcgen::SigningKey;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// An authority of a trusted root: `chain` (leaf side first), valid between the two times.
pub(super) fn authority(chain: &[&Ca], start: i64, end: Option<i64>) -> Value {
    let certificates: Vec<Value> = chain
        .iter()
        .map(|c| json!({"rawBytes": b64(&c.der())}))
        .collect();
    let mut valid = json!({"start": rfc3339(at(start))});
    if let Some(end) = end {
        valid["end"] = json!(rfc3339(at(end)));
    }
    json!({"subject": {"organization": "corpus", "commonName": "corpus"},
        "uri": "https://fulcio.invalid", "certChain": {"certificates": certificates},
        "validFor": valid})
}

pub(super) fn trusted_root(authorities: Vec<Value>, logs: &[&Log]) -> String {
    json!({"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
        "tlogs": logs.iter().map(|l| l.root_entry()).collect::<Vec<_>>(),
        "certificateAuthorities": authorities, "ctlogs": [], "timestampAuthorities": []})
    .to_string()
}

/// An in-toto statement naming `digest`.
pub(super) fn statement(digest: &str) -> Vec<u8> {
    json!({"_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "registry.invalid/team/app", "digest": {"sha256": &digest[7..]}}],
        "predicateType": "https://sigstore.dev/cosign/sign/v1", "predicate": {}})
    .to_string()
    .into_bytes()
}

/// A signed envelope as `envelope` asks, and the one signature a log entry records.
pub(super) fn envelope(
    sign: &dyn Fn(&[u8]) -> Vec<u8>,
    shape: Envelope,
) -> (Value, Vec<u8>, Vec<u8>) {
    let payload = match shape {
        Envelope::OtherDigest => statement(&format!("sha256:{}", "2".repeat(64))),
        _ => statement(DIGEST),
    };
    let payload_type = match shape {
        Envelope::NotInToto => "application/vnd.dev.cosign.simplesigning.v1+json",
        _ => IN_TOTO,
    };
    let signature = match shape {
        Envelope::Forged => sign(b"something else"),
        _ => sign(&pae(payload_type, &payload)),
    };
    let signatures = match shape {
        Envelope::None => vec![],
        Envelope::Two => vec![
            json!({"sig": b64(&signature)}),
            json!({"sig": b64(&sign(&pae(payload_type, &payload)))}),
        ],
        _ => vec![json!({"sig": b64(&signature)})],
    };
    let envelope =
        json!({"payload": b64(&payload), "payloadType": payload_type, "signatures": signatures});
    (envelope, payload, signature)
}

/// The log entry `logged` asks for, recording `signature` over `payload` by `verifier`.
pub(super) fn entry(
    world_log: &Log,
    other_log: &Log,
    logged: Logged,
    parts: (&Value, &[u8], &[u8]),
    verifier: &str,
) -> Option<Value> {
    let (env, payload, signature) = parts;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let mut body = dsse_body(payload, env, signature, verifier);
    let mut shape = EntryShape::both();
    let mut log = world_log;
    let mut time = now - 60;
    let mut kind = "dsse";
    match logged {
        Logged::None => return None,
        Logged::Valid => {}
        Logged::PromiseOnly => shape.proof = false,
        Logged::ProofOnly => shape.promise = false,
        Logged::BadPromise => shape.bad_promise = true,
        Logged::BadCheckpoint => shape.bad_checkpoint = true,
        Logged::OtherRoot => shape.other_root = true,
        Logged::BadPath => shape.bad_path = true,
        Logged::UnknownLog => log = other_log,
        Logged::OtherSignature => body = dsse_body(payload, env, b"another signature", verifier),
        Logged::OtherPayload => body = dsse_body(b"another payload", env, signature, verifier),
        Logged::OtherVerifier => {
            let stranger = key_pair(Alg::P256).public_key_pem();
            body = dsse_body(payload, env, signature, &stranger)
        }
        Logged::HashedRekord => {
            kind = "hashedrekord";
            body = hashedrekord_body(&Sha256::digest(payload), signature, verifier)
        }
        Logged::Old => time = now - 2 * 86_400 - 3600,
    }
    Some(log.entry(kind, &body, time, shape))
}

pub(super) fn cosign_case(
    name: String,
    bundle: Value,
    data: BTreeMap<String, Vec<u8>>,
    keys: Vec<String>,
    identities: Vec<(String, String)>,
    root: String,
    require: bool,
) -> Case {
    let bundle_text = bundle.to_string();
    let judge_identities: Vec<Value> = identities
        .iter()
        .map(|(i, s)| json!({"issuer": i, "subject": s}))
        .collect();
    let judge = json!({"cosign": {"bundle": bundle_text, "trustedRoot": root, "keys": keys,
        "identities": judge_identities, "requireTlog": require, "digest": DIGEST}});
    Case {
        id: name,
        judge,
        ours: Ours::Cosign {
            data,
            identities,
            require_tlog: require,
            bundle: bundle_text.into_bytes(),
        },
        image: (REPOSITORY.to_string(), DIGEST.to_string()),
    }
}

/// Bundles signed with a key (cosign.pub), over the keys the Secret holds, the envelope, the
/// key's type, whether the bundle names its key, and a log entry.
pub(super) fn keyed_cases(log: &Log) -> Vec<Case> {
    let mut cases = Vec::new();
    let signer = key_pair(Alg::P256);
    let other = key_pair(Alg::P256);
    let p384 = key_pair(Alg::P384);
    let secrets: [(&str, Vec<&rcgen::KeyPair>, &rcgen::KeyPair); 4] = [
        ("right", vec![&signer], &signer),
        ("wrong", vec![&other], &signer),
        ("right-of-two", vec![&other, &signer], &signer),
        ("p384", vec![&p384], &p384),
    ];
    for (keys_name, keys, by) in &secrets {
        for shape in ENVELOPES {
            for hinted in [true, false] {
                for logged in [Logged::None, Logged::Valid] {
                    let sign = |m: &[u8]| by.sign(m).unwrap();
                    let (env, payload, signature) = envelope(&sign, shape);
                    let mut material = match hinted {
                        true => json!({"publicKey": {"hint": "cosign.pub"}}),
                        false => json!({}),
                    };
                    let entries: Vec<Value> = entry(
                        log,
                        log,
                        logged,
                        (&env, &payload, &signature),
                        &by.public_key_pem(),
                    )
                    .into_iter()
                    .collect();
                    material["tlogEntries"] = json!(entries);
                    let bundle = json!({"mediaType": V03, "verificationMaterial": material, "dsseEnvelope": env});
                    let pems: Vec<String> = keys.iter().map(|k| k.public_key_pem()).collect();
                    let data = pems
                        .iter()
                        .enumerate()
                        .map(|(i, p)| (format!("key{i}.pub"), p.clone().into_bytes()))
                        .collect();
                    let name = format!("keyed/{keys_name}/{shape:?}/hint={hinted}/{logged:?}");
                    cases.push(cosign_case(
                        name,
                        bundle,
                        data,
                        pems,
                        Vec::new(),
                        String::new(),
                        true,
                    ));
                }
            }
        }
    }
    cases
}
