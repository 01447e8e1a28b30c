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
}
