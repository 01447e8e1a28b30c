//! A bundle the real cosign v3 made through a real Rekor v2 (rekor-tiles' POSIX server, an
//! Ed25519 log key, origin `rekor.local`) and a real timestamp authority (Sigstore's
//! timestamp-server, its in-memory signer), signed with a certificate of a CA made for it
//! (`src/verify/fixtures/rekor-v2/`; tests/it/signatures/rekor_v2.rs makes such bundles anew on
//! every run of make e2e-signatures). `cosign sign` signed three images in turn, each with a
//! certificate valid for one day: `other-bundle.json` is the first entry (a tree of one),
//! `bundle.json` the third; its statement is a signature's (`https://sigstore.dev/cosign/sign/v1`). sigstore-go finds it valid under `trusted_root.json`;
//! each case spoils one thing it rests on.

use super::super::{b64, Signing};
use crate::reference::ImageReference;
use crate::verify::{Signed, TrustedKeys, TRUSTED_ROOT};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::SystemTime;

const BUNDLE: &str = include_str!("../../fixtures/rekor-v2/bundle.json");
/// Another signature of the same signer, log and authority (an earlier entry).
const OTHER: &str = include_str!("../../fixtures/rekor-v2/other-bundle.json");
const ROOT: &str = include_str!("../../fixtures/rekor-v2/trusted_root.json");
/// The subject of the bundle's in-toto statement.
const DIGEST: &str = "sha256:6f98f6a265c80a24252daa443bad61ee68dce67eb5f1ee79a273ae73922500e0";
const WHO: &str = "dev@example.com (https://token.actions.githubusercontent.com)";

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

/// Our verdict on `bundle` under `root` and the identity `subject`, the log required.
fn judge(bundle: &Value, root: &Value, subject: &str) -> Result<String, String> {
    let data = BTreeMap::from([(TRUSTED_ROOT.to_string(), root.to_string().into_bytes())]);
    let identity = [(
        "^https://token\\.actions\\.githubusercontent\\.com$".to_string(),
        subject.to_string(),
    )];
    let trust = TrustedKeys::from_secret(&data, &identity, true)?;
    let image = ImageReference::parse("registry.example/team/app", false).unwrap();
    let signed = [Signed::Bundle(bundle.to_string().into_bytes())];
    // Long after the signing certificate expired: only the authority's time counts.
    let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(4_102_444_800);
    trust
        .verify(&signed, &image, DIGEST, now)
        .map_err(|r| r.to_string())
}

fn refused(bundle: &Value, root: &Value) -> String {
    judge(bundle, root, "^dev@example\\.com$").unwrap_err()
}

#[test]
fn a_rekor_v2_entry_with_a_timestamp_is_elected_under_its_identity_only() {
    let (bundle, root) = (json(BUNDLE), json(ROOT));
    assert_eq!(judge(&bundle, &root, "^dev@example\\.com$"), Ok(WHO.into()));
    let other = judge(&bundle, &root, "^ops@example\\.com$").unwrap_err();
    assert!(other.contains("certificate identity mismatch"), "{other}");
    // The checkpoint of the first entry: a tree of one, no path.
    assert!(judge(&json(OTHER), &root, "^dev@example\\.com$").is_err_and(|e| e.contains("is for")));
}

/// The signing time is the timestamp authority's (the fixture was made on 2026-12-02), not
/// the verification's: what `minAge` reads as a third clock.
#[test]
fn the_signing_time_is_what_the_authority_vouches_for() {
    let data = BTreeMap::from([(TRUSTED_ROOT.to_string(), ROOT.as_bytes().to_vec())]);
    let identity = [(
        "^https://token\\.actions\\.githubusercontent\\.com$".to_string(),
        "^dev@example\\.com$".to_string(),
    )];
    let trust = TrustedKeys::from_secret(&data, &identity, true).unwrap();
    let image = ImageReference::parse("registry.example/team/app", false).unwrap();
    let signed = [Signed::Bundle(BUNDLE.as_bytes().to_vec())];
    let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(4_102_444_800);
    let verified = trust.verify_until(&signed, &image, DIGEST, now).unwrap();
    let at = verified
        .signed_at
        .expect("a time the authority vouches for");
    assert!((1_796_169_600..1_796_256_000).contains(&at), "{at}");
}

#[test]
fn the_entry_must_be_in_a_checkpoint_the_trusted_log_signed() {
    let (bundle, root) = (json(BUNDLE), json(ROOT));
    let entry = "/verificationMaterial/tlogEntries/0";
    // Another log's id: not one of the root's.
    let mut unknown = bundle.clone();
    *unknown
        .pointer_mut(&format!("{entry}/logId/keyId"))
        .unwrap() = "AAAA".into();
    assert!(refused(&unknown, &root).contains("its log is not one of the trusted root's"));
    // The log named by another host: its note name and key hash are not the checkpoint's.
    let mut elsewhere = root.clone();
    elsewhere["tlogs"][0]["baseUrl"] = "https://rekor.example".into();
    assert!(refused(&bundle, &elsewhere).contains("its checkpoint is not signed by its log"));
    let mut no_url = root.clone();
    no_url["tlogs"][0]["baseUrl"] = "".into();
    assert!(refused(&bundle, &no_url).contains("no baseUrl"));
    // A path that leads elsewhere, an index of another leaf, no proof at all.
    let mut path = bundle.clone();
    *path
        .pointer_mut(&format!("{entry}/inclusionProof/hashes/0"))
        .unwrap() = "Q3u8unqkmQoMJ66KoUE5K0zH1lWYHNVGpMFXlo7QOTQ=".into();
    assert!(refused(&path, &root).contains("does not lead to the root its checkpoint signs"));
    let mut index = bundle.clone();
    index.pointer_mut(entry).unwrap()["logIndex"] = "1".into();
    let err = refused(&index, &root);
    assert!(
        err.contains("its inclusion proof's path does not fit its index"),
        "{err}"
    );
    let mut proofless = bundle.clone();
    proofless.pointer_mut(entry).unwrap()["inclusionProof"] = Value::Null;
    assert!(judge(&proofless, &root, ".").is_err());
    // A checkpoint whose signature is spoiled.
    let mut signature = bundle.clone();
    let note = signature
        .pointer_mut(&format!("{entry}/inclusionProof/checkpoint/envelope"))
        .unwrap();
    *note = note
        .as_str()
        .unwrap()
        .replace("rekor.local Mk+tIjg+", "rekor.local Mk+tIjg/")
        .into();
    assert!(refused(&signature, &root)
        .contains("its checkpoint's signature by its log does not verify"));
}

#[test]
fn the_signing_time_is_a_trusted_authoritys() {
    let (bundle, root) = (json(BUNDLE), json(ROOT));
    let stamps = "/verificationMaterial/timestampVerificationData/rfc3161Timestamps";
    let mut none = bundle.clone();
    *none.pointer_mut(stamps).unwrap() = Value::Array(Vec::new());
    let err = refused(&none, &root);
    assert!(
        err.contains("no integrated time, and the bundle carries no timestamp"),
        "{err}"
    );
    // A timestamp of another signature (the other bundle's).
    let mut other = bundle.clone();
    *other.pointer_mut(stamps).unwrap() = json(OTHER).pointer(stamps).unwrap().clone();
    let err = refused(&other, &root);
    assert!(
        err.contains("of another signature (its message imprint)"),
        "{err}"
    );
    // No authority, or one whose period ended before the timestamp.
    let mut unstamped = root.clone();
    unstamped["timestampAuthorities"] = Value::Array(Vec::new());
    let err = refused(&bundle, &unstamped);
    assert!(
        err.contains("the trusted root names no timestamp authority"),
        "{err}"
    );
    let mut ended = root.clone();
    ended["timestampAuthorities"][0]["validFor"]["end"] = "2021-01-01T00:00:00Z".into();
    assert!(refused(&bundle, &ended).contains("outside the authority's validFor"));
    // Another root under the authority's leaf: the leaf does not chain to it. The token
    // carries no certificate, so without the leaf it names a signer no one has.
    let mut another = root.clone();
    let ca = root["certificateAuthorities"][0]["certChain"]["certificates"][0].clone();
    let chain = "/timestampAuthorities/0/certChain/certificates";
    another.pointer_mut(chain).unwrap()[2] = ca.clone();
    let err = refused(&bundle, &another);
    assert!(
        err.contains("does not chain to it at the token's time"),
        "{err}"
    );
    *another.pointer_mut(chain).unwrap() = Value::Array(vec![ca]);
    let err = refused(&bundle, &another);
    assert!(
        err.contains("carries no certificate, and the authority names no leaf"),
        "{err}"
    );
    // A response whose token's bytes are spoiled.
    let mut spoiled = bundle.clone();
    let stamp = spoiled
        .pointer_mut(&format!("{stamps}/0/signedTimestamp"))
        .unwrap();
    let mut der = b64(stamp.as_str().unwrap()).unwrap();
    let last = der.len() - 1;
    der[last] ^= 1;
    *stamp = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, der).into();
    let err = refused(&spoiled, &root);
    assert!(err.contains("no timestamp verifies"), "{err}");
}

#[test]
fn the_certificate_must_be_valid_at_the_authoritys_time() {
    let (bundle, root) = (json(BUNDLE), json(ROOT));
    // The CA's period ended before the timestamp: it did not vouch for the leaf then.
    let mut retired = root.clone();
    retired["certificateAuthorities"][0]["validFor"]["end"] = "2021-01-01T00:00:00Z".into();
    let err = refused(&bundle, &retired);
    assert!(err.contains("at its timestamp's time"), "{err}");
    assert!(err.contains("did not trust at"), "{err}");
}

/// The leaf sigstore-go rebuilds is the body rekor-tiles wrote, byte for byte.
#[test]
fn the_rebuilt_body_is_the_logs() {
    use base64::Engine;
    let bundle = json(BUNDLE);
    let entry = &bundle["verificationMaterial"]["tlogEntries"][0];
    let written = b64(entry["canonicalizedBody"].as_str().unwrap()).unwrap();
    let b64 = |v: &Value| {
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap())
            .unwrap()
    };
    let envelope = &bundle["dsseEnvelope"];
    let payload = b64(&envelope["payload"]);
    let signed = crate::verify::bundle::pae(envelope["payloadType"].as_str().unwrap(), &payload);
    let signatures = [b64(&envelope["signatures"][0]["sig"])];
    let leaf = b64(&bundle["verificationMaterial"]["certificate"]["rawBytes"]);
    let signing = Signing {
        kind: "dsse",
        signed: &signed,
        payload: &payload,
        signatures: &signatures,
        leaf: &leaf,
    };
    assert_eq!(
        String::from_utf8(super::rebuilt_for_tests(&signing)).unwrap(),
        String::from_utf8(written).unwrap()
    );
}

/// A log key is ECDSA P-256 or Ed25519; another key of 32 bytes (X25519) is none, nor is an
/// Ed25519 key of another length.
#[test]
fn only_p256_and_ed25519_keys_are_log_keys() {
    use super::super::LogKey;
    let spki = |oid_last: u8, key: &[u8]| {
        let mut der = vec![
            0x30,
            (10 + key.len()) as u8,
            0x30,
            0x05,
            0x06,
            0x03,
            0x2b,
            0x65,
        ];
        der.extend_from_slice(&[oid_last, 0x03, (key.len() + 1) as u8, 0x00]);
        der.extend_from_slice(key);
        der
    };
    assert!(matches!(
        LogKey::from_der(&spki(0x70, &[7; 32])),
        Some(LogKey::Ed25519(_))
    ));
    assert!(LogKey::from_der(&spki(0x6e, &[7; 32])).is_none(), "X25519");
    assert!(LogKey::from_der(&spki(0x70, &[7; 31])).is_none());
}

/// An entry that says it has an integrated time is judged by it, as cosign judges a bundle with
/// a Rekor v1 entry: a Rekor v2 body with a time and no promise vouching for it is refused, even
/// though its proof and timestamp verify.
#[test]
fn an_integrated_time_asks_for_a_promise_even_of_a_rekor_v2_body() {
    let (mut bundle, root) = (json(BUNDLE), json(ROOT));
    bundle["verificationMaterial"]["tlogEntries"][0]["integratedTime"] = "1795780675".into();
    let err = refused(&bundle, &root);
    assert!(
        err.ends_with("not in the transparency log: a Rekor v2 entry verifies, and no Rekor v1 entry beside it"),
        "{err}"
    );
}

/// rekor-tiles' note key for an ECDSA log: the SHA-256 of its key's DER, whatever the origin;
/// the checkpoint's origin must still be the log's.
#[test]
fn an_ecdsa_rekor_v2_log_signs_its_checkpoints_under_its_key_hash() {
    use super::super::note::{open, NoteKey};
    use super::super::LogKey;
    use p256::ecdsa::signature::Signer;
    use p256::pkcs8::EncodePublicKey;
    use sha2::{Digest, Sha256};
    let key = p256::ecdsa::SigningKey::from_slice(&[9; 32]).unwrap();
    let der = key.verifying_key().to_public_key_der().unwrap();
    let log = LogKey::P256(*key.verifying_key());
    let text = "rekor.example\n3\nb9UyCbLoFjjWZBy61dFJl2wtMvSrrUA4XzYMmyxbXh8=\n";
    let signature: p256::ecdsa::Signature = key.sign(text.as_bytes());
    let mut line = Sha256::digest(der.as_bytes())[..4].to_vec();
    line.extend_from_slice(signature.to_der().as_bytes());
    let line = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, line);
    let envelope = format!("{text}\n\u{2014} rekor.example {line}\n");
    let signer = NoteKey::rekor_v2(&log, der.as_bytes(), "rekor.example");
    let opened = open(&envelope, &signer).unwrap();
    assert_eq!((opened.origin.as_str(), opened.size), ("rekor.example", 3));
    // Another origin: the line's name is not the log's.
    let elsewhere = NoteKey::rekor_v2(&log, der.as_bytes(), "rekor.other");
    assert_eq!(
        open(&envelope, &elsewhere).unwrap_err(),
        "its checkpoint is not signed by its log"
    );
    // The log's name on the line, another origin on the first line.
    let moved = envelope.replacen("rekor.example\n3", "rekor.other\n3", 1);
    let moved = moved.replace("\u{2014} rekor.example", "\u{2014} rekor.other");
    assert!(
        open(&moved, &elsewhere).is_err(),
        "the signature covers the origin"
    );
}

/// The body is rebuilt, not read, but it must still be shaped as a Rekor v2 one (sigstore-go's
/// `ValidateEntry`): one that records no signature, or no verifier, is refused.
#[test]
fn a_rekor_v2_body_must_record_a_signature_and_a_verifier() {
    use base64::Engine;
    let (bundle, root) = (json(BUNDLE), json(ROOT));
    let enc = |v: &Value| base64::engine::general_purpose::STANDARD.encode(v.to_string());
    let entry = "/verificationMaterial/tlogEntries/0/canonicalizedBody";
    let written = bundle.pointer(entry).unwrap().as_str().unwrap();
    let body: Value = serde_json::from_slice(&b64(written).unwrap()).unwrap();
    let spec = "/spec/hashedRekordV002";
    for (field, why) in [
        (
            "/signature/content",
            "its Rekor v2 body records no signature",
        ),
        (
            "/signature/verifier",
            "its Rekor v2 body records no verifier or no digest",
        ),
        (
            "/data",
            "its Rekor v2 body records no verifier or no digest",
        ),
    ] {
        let mut spoiled = body.clone();
        let (parent, name) = field.rsplit_once('/').unwrap();
        spoiled
            .pointer_mut(&format!("{spec}{parent}"))
            .unwrap()
            .as_object_mut()
            .unwrap()
            .remove(name);
        let mut changed = bundle.clone();
        *changed.pointer_mut(entry).unwrap() = enc(&spoiled).into();
        let err = refused(&changed, &root);
        assert!(err.ends_with(why), "{field}: {err}");
    }
}

/// Only a body of `apiVersion` 0.0.2 is Rekor v2's: the same spec under 0.0.1 is read as a
/// Rekor v1 body, which needs the integrated time this entry lacks.
#[test]
fn a_rekor_v2_body_is_of_api_version_0_0_2() {
    use base64::Engine;
    let (bundle, root) = (json(BUNDLE), json(ROOT));
    let entry = "/verificationMaterial/tlogEntries/0/canonicalizedBody";
    let written = bundle.pointer(entry).unwrap().as_str().unwrap();
    let mut body: Value = serde_json::from_slice(&b64(written).unwrap()).unwrap();
    body["apiVersion"] = "0.0.1".into();
    let mut changed = bundle.clone();
    let text = base64::engine::general_purpose::STANDARD.encode(body.to_string());
    *changed.pointer_mut(entry).unwrap() = text.into();
    assert!(refused(&changed, &root).ends_with("its log entry does not verify: no integrated time"));
}

/// Two timestamps that fail alike are named once.
#[test]
fn a_reason_is_said_once() {
    let (bundle, root) = (json(BUNDLE), json(ROOT));
    let stamps = "/verificationMaterial/timestampVerificationData/rfc3161Timestamps";
    let theirs = json(OTHER).pointer(stamps).unwrap()[0].clone();
    let mut twice = bundle.clone();
    *twice.pointer_mut(stamps).unwrap() = Value::Array(vec![theirs.clone(), theirs]);
    let err = refused(&twice, &root);
    assert_eq!(err.matches("of another signature").count(), 1, "{err}");
}

/// A Rekor v2 checkpoint as Go's note.Open reads it, which sigstore-go reads one with:
/// witnesses' lines skipped, up to 100 lines, each well formed.
#[test]
fn a_rekor_v2_checkpoint_is_read_as_note_open_reads_it() {
    let (bundle, root) = (json(BUNDLE), json(ROOT));
    let pointer = "/verificationMaterial/tlogEntries/0/inclusionProof/checkpoint/envelope";
    let with = |witnesses: &str| {
        let mut changed = bundle.clone();
        let note = changed.pointer_mut(pointer).unwrap();
        let (text, own) = note.as_str().unwrap().split_once("\n\n").unwrap();
        *note = format!("{text}\n\n{witnesses}{own}").into();
        judge(&changed, &root, "^dev@example\\.com$")
    };
    let witness = "\u{2014} witness AAAAAAAA\n";
    // The log's name with another key's hash: another verifier's line, skipped.
    assert_eq!(with("\u{2014} rekor.local AAAAAAAA\n"), Ok(WHO.into()));
    // 99 witnesses and the log: the 100th line, read.
    assert_eq!(with(&witness.repeat(99)), Ok(WHO.into()));
    let err = with(&witness.repeat(100)).unwrap_err();
    assert!(err.contains("over 100 signature lines"), "{err}");
    for malformed in [
        "\u{2014} wit+ness AAAAAAAA\n",
        "\u{2014} witness AAAA\n",
        "witness\n",
    ] {
        let err = with(malformed).unwrap_err();
        assert!(
            err.contains("a signature line that does not parse"),
            "{err}"
        );
    }
    let err = with("\u{2014} witness\tx AAAAAAAA\n").unwrap_err();
    assert!(err.contains("control characters"), "{err}");
}
