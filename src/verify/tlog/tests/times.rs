//! When a logged keyless signature is judged: at its log's time, and at each time a timestamp
//! beside it vouches for.

use super::*;

/// A keyless bundle whose certificate expired since, logged while it was valid: with the
/// log's promise it counts (judged at its signing time), without it it does not.
#[test]
fn a_logged_keyless_signature_is_judged_at_its_signing_time() {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, KeyUsagePurpose,
    };
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let one_day = [(2023, 11, 14), (2023, 11, 15)];
    let (leaf, signer) = keyless_leaf(&ca, Some(one_day));
    let (payload, signature) = signed_statement(&signer);
    let log = Log::new(9);
    // 2023-11-14T22:13:20Z: within the certificate's one day.
    let entry = log.entry(&dsse_body(&payload, &signature, &leaf.pem()), 1_700_000_000);
    let bundle = |entries: Vec<serde_json::Value>| {
        // v0.1: a promise is all the entry has (v0.2 and later also need a proof).
        Signed::Bundle(serde_json::to_vec(&serde_json::json!({
            "mediaType": "application/vnd.dev.sigstore.bundle+json;version=0.1",
            "verificationMaterial": {"certificate": {"rawBytes": enc(leaf.der())}, "tlogEntries": entries},
            "dsseEnvelope": {"payload": enc(&payload), "payloadType": "application/vnd.in-toto+json",
                             "signatures": [{"sig": enc(&signature)}]}})).unwrap())
    };
    let root = serde_json::json!({"tlogs": [log.root_entry()], "certificateAuthorities": [
        {"certChain": {"certificates": [{"rawBytes": enc(ca.der())}]}}]});
    let secret = BTreeMap::from([(TRUSTED_ROOT.to_string(), root.to_string().into_bytes())]);
    let identity = trusted_identity();
    let trust = TrustedKeys::from_secret(&secret, &identity, true).unwrap();
    let image = ImageReference::parse("registry.example/team/app", false).unwrap();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    assert_eq!(
        trust.verify(&[bundle(vec![entry.clone()])], &image, DIGEST, now),
        Ok("dev@example.com (https://issuer.example)".into())
    );
    // Every entry must verify (sigstore-go): a broken one beside a good one refuses.
    let broken = log.entry_at(&dsse_body(b"o", &signature, &leaf.pem()), 1_700_000_000, 8);
    let two = vec![entry.clone(), broken];
    let err = format!("{:?}", trust.verify(&[bundle(two)], &image, DIGEST, now));
    assert!(err.contains("records another payload"), "{err}");
    let err = trust
        .verify(&[bundle(vec![])], &image, DIGEST, now)
        .unwrap_err();
    assert_eq!(err.checks(), [Check::Log]);
    let err = err.to_string();
    assert!(
        err.contains("not in the transparency log: the signature has no log entry"),
        "{err}"
    );
    // Without the log, the certificate is judged now, and it has expired.
    let optional = TrustedKeys::from_secret(&secret, &identity, false).unwrap();
    let err = optional
        .verify(&[bundle(vec![])], &image, DIGEST, now)
        .unwrap_err();
    assert_eq!(err.checks(), [Check::Time]);
    let err = err.to_string();
    assert!(err.contains("the signing certificate expired at"), "{err}");
    // A CA or a log the root retired before the signature was made vouches for nothing.
    let retired = |ca_end: &str, log_end: &str| {
        let mut root = root.clone();
        root["certificateAuthorities"][0]["validFor"] =
            serde_json::json!({"start": "2020-01-01T00:00:00Z", "end": ca_end});
        root["tlogs"][0]["publicKey"]["validFor"] =
            serde_json::json!({"start": "2020-01-01T00:00:00Z", "end": log_end});
        let secret = BTreeMap::from([(TRUSTED_ROOT.to_string(), root.to_string().into_bytes())]);
        let trust = TrustedKeys::from_secret(&secret, &identity, true).unwrap();
        let verified = trust.verify(&[bundle(vec![entry.clone()])], &image, DIGEST, now);
        verified.map_err(|refusal| format!("{:?} {refusal}", refusal.checks()))
    };
    let (later, earlier) = ("2030-01-01T00:00:00Z", "2023-01-01T00:00:00Z");
    assert!(retired(later, later).is_ok());
    let err = retired(earlier, later).unwrap_err();
    let want = "chains to a certificate authority the trusted root did not trust at Tue, 14 Nov 2023 22:13:20 GMT";
    assert!(err.starts_with("[Time]") && err.contains(want), "{err}");
    let err = retired(later, earlier).unwrap_err();
    let want = "its log's key was not trusted at its integrated time 1700000000";
    assert!(err.contains(want), "{err}");
    // A promise by a log the root does not name is no evidence.
    let foreign = Log::new(3).entry(&dsse_body(&payload, &signature, &leaf.pem()), 1_700_000_000);
    let err = optional
        .verify(&[bundle(vec![foreign])], &image, DIGEST, now)
        .unwrap_err();
    assert_eq!(err.checks(), [Check::Log]);
    let err = err.to_string();
    assert!(
        err.contains("its log entry does not verify: its log is not one of the trusted root's"),
        "{err}"
    );
}

/// Every established time counts, as sigstore-go's observer timestamps and sigstore-python
/// count them (sigstore-conformance's intoto-tsa-timestamp-outside-cert-validity_fail): a
/// timestamp of a trusted authority beside a Rekor v1 entry is a time the certificate must be
/// valid at; one that does not verify is no time.
#[test]
fn a_timestamp_beside_a_logged_time_is_a_time_the_certificate_must_be_valid_at() {
    use crate::verify::timestamp::tests::made::{response_over, Key, Made, Tsa};
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let (leaf, signer) = keyless_leaf(&ca, Some([(2023, 11, 14), (2023, 11, 15)]));
    let (payload, signature) = signed_statement(&signer);
    let log = Log::new(9);
    let entry = log.entry(&dsse_body(&payload, &signature, &leaf.pem()), 1_700_000_000);
    // A timestamp of 2026-01-01, after the certificate's one day.
    let tsa = Tsa::good(Key::P256);
    let stamp = response_over(&tsa, Key::P256, Made::default(), &signature);
    let bundle = Signed::Bundle(serde_json::to_vec(&serde_json::json!({
        "mediaType": "application/vnd.dev.sigstore.bundle+json;version=0.1",
        "verificationMaterial": {"certificate": {"rawBytes": enc(leaf.der())}, "tlogEntries": [entry],
            "timestampVerificationData": {"rfc3161Timestamps": [{"signedTimestamp": enc(&stamp)}]}},
        "dsseEnvelope": {"payload": enc(&payload), "payloadType": "application/vnd.in-toto+json",
                         "signatures": [{"sig": enc(&signature)}]}})).unwrap());
    let judged_as = |authorities: serde_json::Value, identities: &[(String, String)]| {
        let root = serde_json::json!({"tlogs": [log.root_entry()], "certificateAuthorities": [
            {"certChain": {"certificates": [{"rawBytes": enc(ca.der())}]}}],
            "timestampAuthorities": authorities});
        let secret = BTreeMap::from([(TRUSTED_ROOT.to_string(), root.to_string().into_bytes())]);
        let trust = TrustedKeys::from_secret(&secret, identities, true).unwrap();
        let image = ImageReference::parse("registry.example/team/app", false).unwrap();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        trust.verify(std::slice::from_ref(&bundle), &image, DIGEST, now)
    };
    let judged = |authorities| judged_as(authorities, &trusted_identity());
    let authority = serde_json::json!([{"uri": "https://tsa.example", "certChain": {"certificates": [
        {"rawBytes": enc(&tsa.leaf)}, {"rawBytes": enc(tsa.root.der())}]},
        "validFor": {"start": "2020-01-01T00:00:00Z"}}]);
    let err = judged(authority.clone()).unwrap_err().to_string();
    let want =
        "at its timestamp's time Thu, 01 Jan 2026 00:00:00 GMT: the signing certificate expired";
    assert!(err.contains(want), "{err}");
    // Another identity is not a matter of time: said as it is, not at the timestamp's time.
    let other = [(
        "^https://issuer\\.example$".into(),
        "^ops@example\\.com$".into(),
    )];
    let err = judged_as(authority.clone(), &other)
        .unwrap_err()
        .to_string();
    assert!(err.contains("certificate identity mismatch"), "{err}");
    assert!(!err.contains("at its timestamp's time"), "{err}");
    // Of no trusted authority: not a time, the log's alone counts.
    assert_eq!(
        judged(serde_json::json!([])),
        Ok("dev@example.com (https://issuer.example)".into())
    );
}
