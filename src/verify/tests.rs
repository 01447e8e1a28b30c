use super::*;
use crate::reference::ImageReference;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::Signature;
use p256::ecdsa::SigningKey;
use p256::pkcs8::{EncodePublicKey, LineEnding};
use std::collections::BTreeMap;
use std::time::SystemTime;

fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32].into()).unwrap()
}

fn pem(key: &SigningKey) -> Vec<u8> {
    key.verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .unwrap()
        .into_bytes()
}

fn payload(reference: &str, digest: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "critical": {
            "identity": {"docker-reference": reference},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature"
        },
        "optional": null
    }))
    .unwrap()
}

fn sign(key: &SigningKey, payload: Vec<u8>) -> Signed {
    let signature: Signature = key.sign(&payload);
    Signed::Simple(SignedPayload {
        payload,
        signature: signature.to_der().as_bytes().to_vec(),
        ..Default::default()
    })
}

const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const OTHER: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

fn image() -> ImageReference {
    ImageReference::parse("registry.example:5000/team/app", false).unwrap()
}

fn keys(entries: &[(&str, Vec<u8>)]) -> Result<TrustedKeys, String> {
    TrustedKeys::from_secret(
        &entries
            .iter()
            .map(|(n, b)| (n.to_string(), b.clone()))
            .collect(),
        &[],
        true,
    )
}

#[test]
fn a_signature_counts_with_a_trusted_key_for_this_digest_and_repository() {
    let trusted = keys(&[("cosign.pub", pem(&key(1))), ("other.pub", pem(&key(2)))]).unwrap();
    let good = sign(&key(2), payload("registry.example:5000/team/app", DIGEST));
    assert_eq!(
        trusted.verify(
            std::slice::from_ref(&good),
            &image(),
            DIGEST,
            SystemTime::now()
        ),
        Ok("other.pub".into())
    );

    let wrong_key = sign(&key(3), payload("registry.example:5000/team/app", DIGEST));
    let err = trusted
        .verify(
            std::slice::from_ref(&wrong_key),
            &image(),
            DIGEST,
            SystemTime::now(),
        )
        .unwrap_err();
    assert_eq!(err.checks(), [Check::Authenticity]);
    let err = err.to_string();
    assert!(
        err.contains("does not verify with any trusted key"),
        "{err}"
    );

    let for_other = sign(&key(1), payload("registry.example:5000/team/app", OTHER));
    let err = trusted
        .verify(&[for_other], &image(), DIGEST, SystemTime::now())
        .unwrap_err();
    assert_eq!(err.checks(), [Check::Subject]);
    let err = err.to_string();
    assert!(err.contains("is for sha256:2222"), "{err}");

    let other_repo = sign(&key(1), payload("registry.example:5000/team/evil", DIGEST));
    let err = trusted
        .verify(&[other_repo], &image(), DIGEST, SystemTime::now())
        .unwrap_err();
    assert_eq!(err.checks(), [Check::Subject]);
    let err = err.to_string();
    assert!(err.contains("names the repository"), "{err}");

    let Signed::Simple(mut tampered) = good.clone() else {
        unreachable!()
    };
    tampered.payload = payload("registry.example:5000/team/app", OTHER);
    let tampered = Signed::Simple(tampered);
    let err = trusted
        .verify(&[tampered], &image(), DIGEST, SystemTime::now())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("does not verify with any trusted key"),
        "{err}"
    );

    let garbage = Signed::Simple(SignedPayload {
        payload: b"{}".to_vec(),
        signature: b"junk".to_vec(),
        ..Default::default()
    });
    assert!(trusted
        .verify(
            std::slice::from_ref(&garbage),
            &image(),
            DIGEST,
            SystemTime::now()
        )
        .is_err());
    assert_eq!(
        trusted.verify(
            &[garbage, wrong_key, good],
            &image(),
            DIGEST,
            SystemTime::now()
        ),
        Ok("other.pub".into()),
        "one valid signature among bad ones is enough"
    );
    let none = trusted
        .verify(&[], &image(), DIGEST, SystemTime::now())
        .unwrap_err();
    assert!(none.checks().is_empty());
    let none = none.to_string();
    assert!(none.contains("sha256-1111"), "{none}");
}

#[test]
fn keys_come_from_pub_entries_only() {
    let err = keys(&[("cosign.key", b"secret".to_vec())]).err().unwrap();
    assert!(err.contains("no *.pub entry"), "{err}");
    let err = keys(&[("cosign.pub", b"not pem".to_vec())]).err().unwrap();
    assert!(err.contains("'cosign.pub' is not an ECDSA P-256"), "{err}");
    // The documented bounds (docs/security.md), written out: 16 keys of 16 KiB each.
    assert_eq!((MAX_KEYS, MAX_KEY_BYTES), (16, 16384));
    let err = keys(&[("big.pub", vec![b'a'; 16385])]).err().unwrap();
    assert!(err.contains("'big.pub' is over 16384 bytes"), "{err}");
    let padded = |i: usize| {
        let mut pem = pem(&key(1));
        pem.resize(16384, b'\n');
        (format!("k{i:02}.pub"), pem)
    };
    let sixteen: Vec<(String, Vec<u8>)> = (0..16).map(padded).collect();
    let refs: Vec<(&str, Vec<u8>)> = sixteen
        .iter()
        .map(|(n, b)| (n.as_str(), b.clone()))
        .collect();
    assert!(keys(&refs).is_ok(), "16 keys of 16 KiB are taken");
    let seventeen: Vec<(String, Vec<u8>)> = (0..17).map(padded).collect();
    let refs: Vec<(&str, Vec<u8>)> = seventeen
        .iter()
        .map(|(n, b)| (n.as_str(), b.clone()))
        .collect();
    assert!(keys(&refs)
        .err()
        .unwrap()
        .contains("more than 16 *.pub entries"));
    let a = keys(&[("cosign.pub", pem(&key(1)))]).unwrap();
    let b = keys(&[("cosign.pub", pem(&key(2)))]).unwrap();
    assert_ne!(a.fingerprint, b.fingerprint, "other keys, another verdict");
}

#[test]
fn signature_tags_are_cosigns() {
    assert_eq!(
        signature_tag(DIGEST),
        format!("sha256-{}.sig", &DIGEST[7..])
    );
}

/// At notation's `skip` level nothing is verified, so an unsigned image passes, as
/// docs/imagepolicy.md says and notation-go does; before, an unsigned image was held back.
#[test]
fn notations_skip_level_needs_no_signature() {
    let ca = rcgen::CertificateParams::new(Vec::<String>::new())
        .unwrap()
        .self_signed(&rcgen::KeyPair::generate().unwrap())
        .unwrap();
    // A skip statement takes no trust store or identity (notation-go refuses one that does).
    let policy = |level: &str| {
        let mut statement = serde_json::json!({"name": "apps", "registryScopes": ["*"],
            "signatureVerification": {"level": level}});
        if level != "skip" {
            statement["trustStores"] = serde_json::json!(["ca:apps"]);
            statement["trustedIdentities"] = serde_json::json!(["*"]);
        }
        serde_json::json!({"version": "1.0", "trustPolicies": [statement]})
            .to_string()
            .into_bytes()
    };
    let trust = |level: &str| {
        let data = std::collections::BTreeMap::from([
            ("trustpolicy.json".to_string(), policy(level)),
            ("ca.crt".to_string(), ca.pem().into_bytes()),
        ]);
        TrustedKeys::notation(&data).unwrap()
    };
    let image = ImageReference::parse("registry.example/team/app", false).unwrap();
    let now = SystemTime::now();
    assert_eq!(
        trust("skip").verify(&[], &image, DIGEST, now),
        Ok("trust policy 'apps' (skip)".into())
    );
    let err = trust("strict")
        .verify(&[], &image, DIGEST, now)
        .unwrap_err();
    assert!(matches!(err, Refusal::Unsigned(_)), "{err}");
}

/// The documented bounds (docs/security.md, docs/imagepolicy.md), written out as the numbers
/// the docs say, so that a constant changed without its docs fails here: the tests beside each
/// bound test it by its constant.
#[test]
fn signatures_and_keys_are_bounded_by_their_documented_numbers() {
    use super::bundle::MAX_BUNDLE_BYTES;
    use super::keyless::{
        MAX_AUTHORITIES, MAX_CHAIN, MAX_IDENTITIES, MAX_PATTERN_BYTES, MAX_ROOT_BYTES,
    };
    use super::notation::{MAX_CERTIFICATES, MAX_ENTRY_BYTES, MAX_ENVELOPE_BYTES, MAX_POLICIES};
    use super::tlog::{MAX_ENTRIES, MAX_LOGS};
    use super::{MAX_KEYS, MAX_KEY_BYTES, MAX_PAYLOAD_BYTES, MAX_SIGNATURES};
    // 16 signatures an image, a payload of 64 KiB, 16 keys of 16 KiB, a bundle of 256 KiB.
    assert_eq!(
        (MAX_SIGNATURES, MAX_PAYLOAD_BYTES, MAX_KEYS, MAX_KEY_BYTES),
        (16, 65_536, 16, 16_384)
    );
    assert_eq!(MAX_BUNDLE_BYTES, 262_144);
    // Keyless: a root of 256 KiB with 16 authorities of at most 8 certificates (a signature's
    // chain too), 16 identities of 1 KiB expressions, 16 logs, 32 entries a signature.
    assert_eq!(
        (MAX_ROOT_BYTES, MAX_AUTHORITIES, MAX_CHAIN),
        (262_144, 16, 8)
    );
    assert_eq!((MAX_IDENTITIES, MAX_PATTERN_BYTES), (16, 1024));
    assert_eq!((MAX_LOGS, MAX_ENTRIES), (16, 32));
    // Notation: a trust policy and each entry 256 KiB, 32 statements, 32 certificates, an
    // envelope 256 KiB.
    assert_eq!(
        (
            MAX_ENTRY_BYTES,
            MAX_POLICIES,
            MAX_CERTIFICATES,
            MAX_ENVELOPE_BYTES
        ),
        (262_144, 32, 32, 262_144)
    );
}

/// A trust document of exactly its bound is read; one byte more is not.
#[test]
fn a_trust_document_is_read_up_to_its_bound() {
    let at = |n: usize| {
        let mut text = b"{}".to_vec();
        text.resize(n, b' ');
        super::trust_document::<serde_json::Value>(&text, "f.json", 16, "JSON")
    };
    assert_eq!(at(16), Ok(serde_json::json!({})));
    assert_eq!(at(17), Err("f.json is over 16 bytes".to_string()));
}

/// Which signatures a policy reads follows its provider.
#[test]
fn a_policy_reads_its_providers_signatures() {
    let cosign = keys(&[("cosign.pub", pem(&key(1)))]).unwrap();
    assert!(!cosign.is_notation());
    let ca = rcgen::CertificateParams::new(Vec::<String>::new())
        .unwrap()
        .self_signed(&rcgen::KeyPair::generate().unwrap())
        .unwrap();
    let policy = serde_json::json!({"version": "1.0", "trustPolicies": [{"name": "p",
        "registryScopes": ["*"], "signatureVerification": {"level": "strict"},
        "trustStores": ["ca:p"], "trustedIdentities": ["*"]}]});
    let data = std::collections::BTreeMap::from([
        (
            "trustpolicy.json".to_string(),
            policy.to_string().into_bytes(),
        ),
        ("ca.crt".to_string(), ca.pem().into_bytes()),
    ]);
    let notation = TrustedKeys::notation(&data).unwrap();
    assert!(notation.is_notation());
    // Each refused as another provider's, and an unreadable bundle as unreadable.
    let envelope = Signed::Notation {
        media_type: "application/jose+json".into(),
        bytes: b"{}".to_vec(),
        subject: None,
    };
    let simple = sign(&key(1), payload("registry.example:5000/team/app", DIGEST));
    let now = SystemTime::now();
    let refused = |trust: &TrustedKeys, signed: Signed| {
        trust.verify(&[signed], &image(), DIGEST, now).unwrap_err()
    };
    assert_eq!(refused(&cosign, envelope).checks(), [Check::Provider]);
    assert_eq!(refused(&notation, simple).checks(), [Check::Provider]);
    let garbage = Signed::Bundle(b"not json".to_vec());
    assert_eq!(refused(&cosign, garbage).checks(), [Check::Format]);
}

/// At most 16 identities (16 are read); the same reason from two signatures is said once.
#[test]
fn identities_are_bounded_and_reasons_said_once() {
    let root = TRUSTED_ROOT.to_string();
    let identities = |n: usize| vec![(".*".to_string(), ".*".to_string()); n];
    let data = BTreeMap::from([(root, b"{}".to_vec())]);
    let err = TrustedKeys::from_secret(&data, &identities(17), true)
        .err()
        .unwrap();
    assert_eq!(err, "more than 16 matchOIDCIdentity entries");
    let err = TrustedKeys::from_secret(&data, &identities(16), true)
        .err()
        .unwrap();
    assert!(err.contains("names no certificate authority"), "{err}");
    let trust = keys(&[("cosign.pub", pem(&key(1)))]).unwrap();
    let other = sign(&key(2), payload("registry.example/team/app", DIGEST));
    let err = trust
        .verify(&[other.clone(), other], &image(), DIGEST, SystemTime::now())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "2 signatures, none valid: signature does not verify with any trusted key"
    );
}
