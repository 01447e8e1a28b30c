//! Attestations read from the Rekor v2 fixture (a bundle cosign v3 signed: its statement's type
//! is the signing predicate, which serves here as "an attestation of that type").

use crate::verify::bundle::statement::SIGNING_PREDICATE;
use crate::verify::{Signed, TrustedKeys, TRUSTED_ROOT};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

const BUNDLE: &str = include_str!("../../fixtures/rekor-v2/bundle.json");
const ROOT: &str = include_str!("../../fixtures/rekor-v2/trusted_root.json");
const DIGEST: &str = "sha256:6f98f6a265c80a24252daa443bad61ee68dce67eb5f1ee79a273ae73922500e0";

fn trust(subject: &str) -> TrustedKeys {
    let data = BTreeMap::from([(TRUSTED_ROOT.to_string(), ROOT.as_bytes().to_vec())]);
    let identity = [(
        "^https://token\\.actions\\.githubusercontent\\.com$".to_string(),
        subject.to_string(),
    )];
    TrustedKeys::from_secret(&data, &identity, true).unwrap()
}

#[test]
fn the_statements_of_a_type_that_verify_are_returned() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(4_102_444_800);
    let signed = [
        Signed::Bundle(BUNDLE.as_bytes().to_vec()),
        Signed::Bundle(b"not a bundle".to_vec()),
    ];
    let trusted = trust("^dev@example\\.com$");
    let found = trusted
        .attested(&signed, DIGEST, SIGNING_PREDICATE, now)
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["predicateType"], SIGNING_PREDICATE);
    assert_eq!(found[0]["subject"][0]["digest"]["sha256"], &DIGEST[7..]);
    // Of another type: not read.
    let other = trusted.attested(&signed, DIGEST, "https://slsa.dev/provenance/v1", now);
    assert_eq!(other, Err("1 attestation, not valid: a signature bundle is not a Sigstore bundle (expected ident at line 1 column 2)".into()));
    // Signed by another identity; for another digest.
    let stranger =
        trust("^ops@example\\.com$").attested(&signed[..1], DIGEST, SIGNING_PREDICATE, now);
    assert!(stranger
        .unwrap_err()
        .starts_with("1 attestation, not valid: certificate identity mismatch"));
    let elsewhere = format!("sha256:{}", "0".repeat(64));
    let moved = trusted.attested(&signed[..1], &elsewhere, SIGNING_PREDICATE, now);
    assert!(moved.unwrap_err().contains("is for sha256:6f98"));
    assert_eq!(
        trusted.attested(&[], DIGEST, SIGNING_PREDICATE, now),
        Err("no attestation of that type among its referrers or its .att tag".into())
    );
    // Two refused alike: counted twice, their reason said once.
    let twice = [signed[1].clone(), signed[1].clone()];
    assert_eq!(
        trusted.attested(&twice, DIGEST, SIGNING_PREDICATE, now),
        Err("2 attestations, none valid: a signature bundle is not a Sigstore bundle (expected ident at line 1 column 2)".into())
    );
}

/// The fixture's bundle with its statement's type changed: what an attestation claims, read
/// without verifying it (its signature no longer verifies).
fn attestation() -> Signed {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut bundle: serde_json::Value = serde_json::from_str(BUNDLE).unwrap();
    let payload = &mut bundle["dsseEnvelope"]["payload"];
    let mut statement: serde_json::Value =
        serde_json::from_slice(&b64.decode(payload.as_str().unwrap()).unwrap()).unwrap();
    statement["predicateType"] = "https://slsa.dev/provenance/v1".into();
    *payload = b64.encode(statement.to_string()).into();
    Signed::Bundle(bundle.to_string().into_bytes())
}

/// An attestation among an image's referrers is not one of its signatures: alone, the image
/// is unsigned and told how many attestations it has; beside a valid signature, the image is
/// signed; nothing at all is said as such.
#[test]
fn attestations_are_not_signatures() {
    use crate::reference::ImageReference;
    use crate::verify::Refusal;
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(4_102_444_800);
    let trusted = trust("^dev@example\\.com$");
    let image = ImageReference::parse("registry.example/team/app", false).unwrap();
    let verify = |signed: &[Signed]| trusted.verify_until(signed, &image, DIGEST, now);
    let tag = format!("no tag sha256-{}.sig", &DIGEST[7..]);
    assert_eq!(
        verify(&[attestation()]).unwrap_err(),
        Refusal::Unsigned(format!(
            "no cosign signature among its referrers, 1 attestation; {tag}"
        ))
    );
    assert_eq!(
        verify(&[attestation(), attestation()]).unwrap_err(),
        Refusal::Unsigned(format!(
            "no cosign signature among its referrers, 2 attestations; {tag}"
        ))
    );
    assert_eq!(
        verify(&[]).unwrap_err(),
        Refusal::Unsigned(format!("no cosign bundle among its referrers, {tag}"))
    );
    let signature = Signed::Bundle(BUNDLE.as_bytes().to_vec());
    let signed = verify(&[attestation(), signature]).unwrap();
    assert!(signed.who.contains("dev@example.com"), "{}", signed.who);
}

/// A legacy `.att` layer (cosign v2's attestation: a DSSE envelope, its signature inside),
/// signed by a trusted key, is an attestation like a bundle: returned when it names the digest;
/// another key's, another type's (by its statement, whatever it claims), another digest's are
/// not; and it is never a signature.
#[test]
fn a_legacy_attestation_layer_is_an_attestation() {
    use crate::verify::bundle::pae;
    use crate::verify::SignedPayload;
    use base64::Engine;
    use p256::ecdsa::{signature::Signer, Signature, SigningKey};
    use p256::pkcs8::{EncodePublicKey, LineEnding};
    const SLSA: &str = "https://slsa.dev/provenance/v1";
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let key = |seed: u8| SigningKey::from_bytes(&[seed; 32].into()).unwrap();
    let layer = |signer: &SigningKey, predicate_type: &str, digest: &str| {
        let statement = serde_json::json!({"_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "app", "digest": {"sha256": &digest[7..]}}],
            "predicateType": predicate_type, "predicate": {"built": true}});
        let payload = serde_json::to_vec(&statement).unwrap();
        let kind = "application/vnd.in-toto+json";
        let signature: Signature = signer.sign(&pae(kind, &payload));
        let envelope = serde_json::json!({"payloadType": kind, "payload": b64(&payload),
            "signatures": [{"keyid": "", "sig": b64(&signature.to_der().to_bytes())}]});
        Signed::Attestation(SignedPayload {
            payload: serde_json::to_vec(&envelope).unwrap(),
            ..Default::default()
        })
    };
    let public = key(1).verifying_key().to_public_key_pem(LineEnding::LF);
    let data = BTreeMap::from([("cosign.pub".to_string(), public.unwrap().into_bytes())]);
    let trusted = TrustedKeys::from_secret(&data, &[], false).unwrap();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let found = trusted.attested(&[layer(&key(1), SLSA, DIGEST)], DIGEST, SLSA, now);
    assert_eq!(found.unwrap()[0]["predicate"]["built"], true);
    let other = trusted.attested(&[layer(&key(2), SLSA, DIGEST)], DIGEST, SLSA, now);
    assert_eq!(
        other,
        Err("1 attestation, not valid: signature does not verify with any trusted key".into())
    );
    let elsewhere = format!("sha256:{}", "0".repeat(64));
    let moved = trusted.attested(&[layer(&key(1), SLSA, &elsewhere)], DIGEST, SLSA, now);
    assert!(moved.unwrap_err().contains("is for sha256:0000"));
    let typed = trusted.attested(
        &[layer(&key(1), "https://spdx.dev/Document", DIGEST)],
        DIGEST,
        SLSA,
        now,
    );
    assert_eq!(
        typed,
        Err("no attestation of that type among its referrers or its .att tag".into())
    );
    let image = crate::reference::ImageReference::parse("registry.example/app", false).unwrap();
    let as_signature = trusted.verify(&[layer(&key(1), SLSA, DIGEST)], &image, DIGEST, now);
    assert!(as_signature
        .unwrap_err()
        .to_string()
        .contains("1 attestation"));
}

/// A keyless legacy layer's log entry is its `dev.sigstore.cosign/bundle` annotation, read
/// before anything else of the certificate: one that does not read refuses it, saying so (a
/// mutant reading none said "no log entry").
#[test]
fn a_legacy_layers_log_annotation_is_read() {
    use crate::verify::SignedPayload;
    use base64::Engine;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let envelope = serde_json::json!({"payloadType": "application/vnd.in-toto+json",
        "payload": b64(b"{}"), "signatures": [{"sig": b64(b"sig")}]});
    let layer = Signed::Attestation(SignedPayload {
        payload: serde_json::to_vec(&envelope).unwrap(),
        certificates: vec![b"a leaf".to_vec()],
        log_entry: Some("not json".into()),
        ..Default::default()
    });
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let refused = trust("^dev@example\\.com$").attested(&[layer], DIGEST, SIGNING_PREDICATE, now);
    let why = refused.unwrap_err();
    assert!(
        why.contains("not in the transparency log: a signature's log bundle is not JSON"),
        "{why}"
    );
}
