//! Fuzzing entry points for the verifier's parsers of untrusted bytes: trusted keys, signed
//! payloads, Sigstore bundles, trust documents and notation envelopes. Each function feeds one
//! of them raw bytes and asserts what must hold. Used by the targets in `fuzz/` and replayed
//! over the checked-in corpora by `tests/it/policy/fuzz_replay.rs`. Not an API.

use super::{Signed, SignedPayload, TrustedKeys};
use crate::reference::ImageReference;
use std::collections::BTreeMap;

/// Splits the first line off: a target's second input.
pub(crate) fn first_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}

/// A cosign public key (`cosign.pub` of a Secret): read or refused, never a panic; a refusal
/// names the entry and stays short.
pub fn cosign_key(data: &[u8]) {
    let secret = BTreeMap::from([("cosign.pub".to_string(), data.to_vec())]);
    if let Err(reason) = TrustedKeys::from_secret(&secret, &[], true) {
        assert!(reason.contains("cosign.pub"), "{reason}");
        assert!(reason.len() < 1024, "{} bytes", reason.len());
    }
}

/// A cosign simple-signing payload, signed with a trusted key so that it is read: elected
/// only when it names this digest and this repository; refused with a short reason (the
/// payload's own text in it is at most the payload), never a panic.
pub fn cosign_payload(data: &[u8]) {
    use p256::ecdsa::signature::Signer;
    use p256::ecdsa::{Signature, SigningKey};
    use p256::pkcs8::{EncodePublicKey, LineEnding};
    static KEY: std::sync::OnceLock<(SigningKey, TrustedKeys)> = std::sync::OnceLock::new();
    let (signing, trusted) = KEY.get_or_init(|| {
        let signing = SigningKey::from_slice(&[7u8; 32]).expect("a valid scalar");
        let pem = signing
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .expect("a PEM");
        let secret = BTreeMap::from([("cosign.pub".to_string(), pem.into_bytes())]);
        (
            signing,
            TrustedKeys::from_secret(&secret, &[], true).expect("the key reads"),
        )
    });
    let signature: Signature = signing.sign(data);
    let signed = SignedPayload {
        payload: data.to_vec(),
        signature: signature.to_der().as_bytes().to_vec(),
        ..Default::default()
    };
    let image = ImageReference::parse("registry.example/team/app", false).unwrap();
    let digest = format!("sha256:{}", "ab".repeat(32));
    match trusted.verify(
        &[Signed::Simple(signed)],
        &image,
        &digest,
        std::time::SystemTime::now(),
    ) {
        Ok(key) => {
            assert_eq!(key, "cosign.pub");
            let payload: serde_json::Value = serde_json::from_slice(data).expect("read as JSON");
            let critical = &payload["critical"];
            assert_eq!(critical["image"]["docker-manifest-digest"], digest.as_str());
        }
        Err(refusal) => {
            // The key made it: only what it names can be wrong.
            assert_eq!(refusal.checks(), [super::Check::Subject], "{refusal}");
            let reason = refusal.to_string();
            assert!(reason.len() <= data.len() + 256, "{} bytes", reason.len());
        }
    }
}

/// A Sigstore bundle as a registry serves it, judged by a trusted key and a keyless root:
/// held back with a short reason (never a panic), or, when it verifies, signed by the key;
/// and the same bytes as a legacy attestation layer's envelope, judged likewise.
pub fn signature_bundle(data: &[u8]) {
    use super::TRUSTED_ROOT;
    static TRUST: std::sync::OnceLock<TrustedKeys> = std::sync::OnceLock::new();
    let trust = TRUST.get_or_init(|| {
        use p256::pkcs8::{EncodePublicKey, LineEnding};
        let key = p256::ecdsa::SigningKey::from_slice(&[7u8; 32]).expect("a valid scalar");
        let pem = key
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .expect("a PEM");
        let root = br#"{"certificateAuthorities": [], "tlogs": []}"#.to_vec();
        let secret = BTreeMap::from([
            ("cosign.pub".to_string(), pem.into_bytes()),
            (TRUSTED_ROOT.to_string(), root),
        ]);
        TrustedKeys::from_secret(&secret, &[], true).expect("the key reads")
    });
    let image = ImageReference::parse("registry.example/team/app", false).unwrap();
    let digest = format!("sha256:{}", "ab".repeat(32));
    let now = std::time::SystemTime::now();
    if let Err(refusal) = trust.verify(&[Signed::Bundle(data.to_vec())], &image, &digest, now) {
        let reason = refusal.to_string();
        assert!(reason.len() <= data.len() + 512, "{} bytes", reason.len());
    }
    // The same bytes as a legacy `.att` layer's envelope (cosign v2's attestations).
    let layer = Signed::Attestation(SignedPayload {
        payload: data.to_vec(),
        ..Default::default()
    });
    if let Err(reason) = trust.attested(&[layer], &digest, "https://slsa.dev/provenance/v1", now) {
        assert!(reason.len() <= data.len() + 512, "{} bytes", reason.len());
    }
}

/// A trusted root and a notation trust policy (the two documents a Secret may hold): read or
/// refused with a short reason, never a panic. The first line is the root, the rest the policy.
pub fn trust_documents(data: &[u8]) {
    let (root, policy) = first_line(data);
    if let Err(reason) = super::keyless::TrustedRoot::parse(root) {
        assert!(reason.len() <= root.len() + 512, "{} bytes", reason.len());
    }
    let secret = BTreeMap::from([
        ("trustpolicy.json".to_string(), policy.to_vec()),
        ("ca.crt".to_string(), root.to_vec()),
    ]);
    if let Err(reason) = super::notation::NotationTrust::from_secret(&secret) {
        assert!(reason.len() <= data.len() + 512, "{} bytes", reason.len());
    }
}

/// A notation envelope, JWS when it starts with `{`, else COSE, checked against a trust
/// store: held back with a short reason, never a panic (none of these verifies).
pub fn notation_envelope(data: &[u8]) {
    use super::notation::NotationTrust;
    static TRUST: std::sync::OnceLock<NotationTrust> = std::sync::OnceLock::new();
    let trust = TRUST.get_or_init(|| {
        let ca = fuzz_ca_pem();
        let policy = br#"{"version": "1.0", "trustPolicies": [{"name": "p", "registryScopes": ["*"],
            "signatureVerification": {"level": "strict"}, "trustStores": ["ca:p"], "trustedIdentities": ["*"]}]}"#;
        let secret = BTreeMap::from([
            ("trustpolicy.json".to_string(), policy.to_vec()),
            ("ca.crt".to_string(), ca),
        ]);
        NotationTrust::from_secret(&secret).expect("the trust reads")
    });
    let media = match data.first() {
        Some(b'{') => "application/jose+json",
        _ => "application/cose",
    };
    let digest = format!("sha256:{}", "ab".repeat(32));
    let now = std::time::SystemTime::now();
    let target = (digest.as_str(), None);
    match trust.verify("registry.example/team/app", media, data, target, now) {
        Ok((who, _)) => panic!("an envelope from nowhere verified, as {who}"),
        Err(refused) => {
            let reason = refused.to_string();
            assert!(reason.len() <= data.len() + 512, "{} bytes", reason.len());
        }
    }
}

/// A self-signed CA certificate (PEM, EC P-256, `CN=fuzz CA`, made once with openssl): the
/// trust store of the notation target, which builds no PKI.
fn fuzz_ca_pem() -> Vec<u8> {
    concat!(
        "-----BEGIN CERTIFICATE-----\n",
        "MIIBfDCCASGgAwIBAgIUC3EWIJvYXLbrJaYD39974OIe+fswCgYIKoZIzj0EAwIw\n",
        "EjEQMA4GA1UEAwwHZnV6eiBDQTAgFw0yNjExMjUxMzM0MDJaGA8yMTI2MTEwMTEz\n",
        "MzQwMlowEjEQMA4GA1UEAwwHZnV6eiBDQTBZMBMGByqGSM49AgEGCCqGSM49AwEH\n",
        "A0IABGkkGsb/3hBEK+u/ROBk6+IhpokCXVmIMchVJRpEUlwjlWB2DSFIIUnnFWts\n",
        "dLeqpg+QgrneJCdwKLpHneNdSjGjUzBRMB0GA1UdDgQWBBS8V34KUOQ14T6SuWeC\n",
        "2gIkIvgitDAfBgNVHSMEGDAWgBS8V34KUOQ14T6SuWeC2gIkIvgitDAPBgNVHRMB\n",
        "Af8EBTADAQH/MAoGCCqGSM49BAMCA0kAMEYCIQCIKdZD4M5p+VVbkqAm4exmW++Y\n",
        "7G2c3ARqXkgFEDCtmQIhAJut3M3kAgPgAMvdeFzuTBIwy2f6otcPEFqygnzxwpuv\n",
        "-----END CERTIFICATE-----\n",
    )
    .as_bytes()
    .to_vec()
}
