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
        Err("no attestation of that type among its referrers".into())
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
