//! The trust policy and store are bounded; envelopes are notation's; and a chain, its
//! signature, its target and its times are judged as notation-go judges them, level by level.

use super::*;
use base64::Engine;

fn data(policy: &[u8], certs: &[(&str, &[u8])]) -> BTreeMap<String, Vec<u8>> {
    let mut data = BTreeMap::from([(TRUST_POLICY.to_string(), policy.to_vec())]);
    for (name, bytes) in certs {
        data.insert(name.to_string(), bytes.to_vec());
    }
    data
}

fn statement(name: &str) -> serde_json::Value {
    serde_json::json!({"name": name, "registryScopes": ["*"],
        "signatureVerification": {"level": "strict"}, "trustStores": ["ca:x"],
        "trustedIdentities": ["*"]})
}

#[test]
fn the_trust_policy_and_store_are_bounded_and_checked() {
    let big = vec![b' '; MAX_ENTRY_BYTES + 1];
    let err = NotationTrust::from_secret(&data(&big, &[])).unwrap_err();
    assert!(err.contains("is over 262144 bytes"), "{err}");
    let many = serde_json::json!({"version": "1.0",
        "trustPolicies": vec![statement("p"); MAX_POLICIES + 1]});
    let err = NotationTrust::from_secret(&data(many.to_string().as_bytes(), &[])).unwrap_err();
    assert!(err.contains("over 32 statements"), "{err}");
    let one = serde_json::json!({"version": "1.0", "trustPolicies": [statement("p")]});
    let err = NotationTrust::from_secret(&data(one.to_string().as_bytes(), &[])).unwrap_err();
    assert!(err.contains("no CA certificate"), "{err}");
    let err = NotationTrust::from_secret(&data(one.to_string().as_bytes(), &[("ca.crt", &big)]))
        .unwrap_err();
    assert!(err.contains("entry 'ca.crt' is over"), "{err}");
    let err = NotationTrust::from_secret(&BTreeMap::new()).unwrap_err();
    assert!(err.contains("no trustpolicy.json entry"), "{err}");
    let bad_level = serde_json::json!({"version": "1.0", "trustPolicies": [
        {"name": "p", "registryScopes": ["*"], "signatureVerification": {"level": "lax"}}]});
    let err = parse_policy(bad_level.to_string().as_bytes()).unwrap_err();
    assert!(err.contains("unknown level 'lax'"), "{err}");
    let bad_identity = serde_json::json!({"version": "1.0", "trustPolicies": [
        {"name": "p", "registryScopes": ["*"], "signatureVerification": {"level": "strict"},
         "trustStores": ["ca:x"], "trustedIdentities": ["CN=x"]}]});
    let err = parse_policy(bad_identity.to_string().as_bytes()).unwrap_err();
    assert!(err.contains("is not x509.subject"), "{err}");
}

#[test]
fn envelopes_are_bounded_and_must_be_notations() {
    let err = Envelope::parse("application/jose+json", &vec![b' '; MAX_ENVELOPE_BYTES + 1])
        .err()
        .unwrap();
    assert!(err.contains("over 262144 bytes"), "{err}");
    let err = Envelope::parse("application/jose+json", &vec![b' '; MAX_ENVELOPE_BYTES])
        .err()
        .unwrap();
    assert!(err.contains("not a JWS envelope"), "{err}");
    let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let jws = |header: serde_json::Value, x5c: usize| {
        serde_json::to_vec(&serde_json::json!({
            "protected": url.encode(header.to_string()), "payload": url.encode("{}"),
            "signature": url.encode("sig"), "header": {"x5c": vec!["AAAA"; x5c]}}))
        .unwrap()
    };
    let good = serde_json::json!({"alg": "PS256", "cty": "application/vnd.cncf.notary.payload.v1+json",
        "io.cncf.notary.signingScheme": "notary.x509", "crit": ["io.cncf.notary.signingScheme"]});
    assert!(Envelope::parse("application/jose+json", &jws(good.clone(), 1)).is_ok());
    assert!(Envelope::parse("application/jose+json", &jws(good.clone(), 8)).is_ok());
    let err = Envelope::parse("application/jose+json", &jws(good.clone(), 9))
        .err()
        .unwrap();
    assert!(err.contains("over 8 certificates"), "{err}");
    let mut unknown = good.clone();
    unknown["crit"] = serde_json::json!(["io.cncf.notary.signingScheme", "x-unknown"]);
    let err = Envelope::parse("application/jose+json", &jws(unknown, 1))
        .err()
        .unwrap();
    assert!(err.contains("critical header 'x-unknown'"), "{err}");
    let mut scheme = good.clone();
    scheme["io.cncf.notary.signingScheme"] = serde_json::json!("notary.x509.signingAuthority");
    let err = Envelope::parse("application/jose+json", &jws(scheme, 1))
        .err()
        .unwrap();
    assert!(err.contains("only notary.x509"), "{err}");
    // ES512: read, and verified with a P-521 key (envelope.rs's tests).
    let mut p521 = good.clone();
    p521["alg"] = serde_json::json!("ES512");
    let envelope = Envelope::parse("application/jose+json", &jws(p521, 1))
        .ok()
        .unwrap();
    let err = envelope.check_signature(&[]).unwrap_err();
    assert!(err.contains("is not X.509 DER"), "{err}");
    let err = Envelope::parse("application/cose", b"\x01").err().unwrap();
    assert!(err.contains("not a COSE_Sign1"), "{err}");
    let err = Envelope::parse("text/plain", b"{}").err().unwrap();
    assert!(err.contains("neither JWS nor COSE"), "{err}");
}

mod cose;
mod pki;

const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

/// A trust of `root`, one statement at `level` (with `extra` fields merged in).
fn trusting(root: &pki::Ca, level: &str, extra: serde_json::Value) -> NotationTrust {
    let mut statement = serde_json::json!({"name": "p", "registryScopes": ["*"],
        "signatureVerification": {"level": level}, "trustStores": ["ca:x"],
        "trustedIdentities": ["*"]});
    for (k, v) in extra.as_object().unwrap() {
        statement[k] = v.clone();
    }
    let policy = serde_json::json!({"version": "1.0", "trustPolicies": [statement]});
    let pem = root.0.pem();
    NotationTrust::from_secret(&data(
        policy.to_string().as_bytes(),
        &[("ca.crt", pem.as_bytes())],
    ))
    .unwrap()
}

fn judge(trust: &NotationTrust, jws: &pki::Jws<'_>) -> Result<String, String> {
    let served = super::super::Subject {
        media_type: "application/vnd.oci.image.manifest.v1+json".into(),
        size: 7,
    };
    trust
        .verify(
            "r.example/app",
            "application/jose+json",
            &jws.bytes(),
            (DIGEST, Some(&served)),
            SystemTime::now(),
        )
        .map(|(who, _)| who)
        .map_err(|refused| refused.to_string())
}

/// notation-core-go's chain rules are integrity: they fail a signature at every level but skip.
#[test]
fn a_chain_is_whole_and_shaped_for_code_signing_at_every_level() {
    use rcgen::{ExtendedKeyUsagePurpose as Eku, KeyUsagePurpose as Ku};
    let root = pki::Ca::root();
    let intermediate = root.below(None);
    let server = root.below(Some(Eku::ServerAuth));
    for level in ["strict", "permissive", "audit"] {
        let trust = trusting(&root, level, serde_json::json!({}));
        let ok = |jws: pki::Jws<'_>| {
            assert!(
                judge(&trust, &jws).is_ok(),
                "{level}: {:?}",
                judge(&trust, &jws)
            )
        };
        let err = |jws: pki::Jws<'_>, why: &str| {
            let got = judge(&trust, &jws).unwrap_err();
            assert!(got.contains(why), "{level}: {got}, not {why}");
        };
        ok(pki::Jws::new(&root));
        // Intermediates' extended key usages are not read; a leaf needs no code signing EKU.
        ok(pki::Jws {
            chain: vec![&intermediate, &root],
            ..pki::Jws::new(&intermediate)
        });
        ok(pki::Jws {
            chain: vec![&server, &root],
            ..pki::Jws::new(&server)
        });
        let mut no_eku = pki::Jws::new(&root);
        no_eku.leaf.eku = Vec::new();
        ok(no_eku);
        err(
            pki::Jws {
                chain: vec![],
                ..pki::Jws::new(&root)
            },
            "is alone and not self-signed",
        );
        err(
            pki::Jws {
                chain: vec![&intermediate],
                ..pki::Jws::new(&intermediate)
            },
            "must end with a self-signed root",
        );
        err(
            pki::Jws {
                chain: vec![&intermediate, &root],
                ..pki::Jws::new(&root)
            },
            "is not issued by",
        );
        let mut server_leaf = pki::Jws::new(&root);
        server_leaf.leaf.eku = vec![Eku::ServerAuth];
        err(
            server_leaf,
            "extended key usage 1.3.6.1.5.5.7.3.1, which notation excludes",
        );
        let mut no_usage = pki::Jws::new(&root);
        no_usage.leaf.usages = Vec::new();
        err(no_usage, "key usage extension must be present");
        let mut more = pki::Jws::new(&root);
        more.leaf.usages = vec![Ku::DigitalSignature, Ku::KeyEncipherment];
        err(more, "key usages beyond digital signature");
        let mut ca_leaf = pki::Jws::new(&root);
        ca_leaf.leaf.ca = true;
        err(ca_leaf, "is a CA");
        err(
            pki::Jws {
                alg: "ES384",
                ..pki::Jws::new(&root)
            },
            "names the algorithm ES384",
        );
        err(
            pki::Jws {
                signing_time: None,
                ..pki::Jws::new(&root)
            },
            "has no signing time",
        );
        err(
            pki::Jws {
                expiry: Some("2025-01-01T00:00:00Z"),
                ..pki::Jws::new(&root)
            },
            "expires before it was signed",
        );
        // The whole descriptor, as the registry serves the manifest.
        let mut size = pki::target();
        size["size"] = serde_json::json!(8);
        err(
            pki::Jws {
                target: size,
                ..pki::Jws::new(&root)
            },
            "as application/vnd.oci.image.manifest.v1+json, 8 bytes",
        );
        let mut media = pki::target();
        media["mediaType"] = serde_json::json!("application/vnd.oci.image.index.v1+json");
        err(
            pki::Jws {
                target: media,
                ..pki::Jws::new(&root)
            },
            "the registry serves",
        );
    }
}

/// Authenticity at strict and permissive, expiry and the chain's dates at strict, as the level
/// (or an override) enforces each; a tsa store wants a countersignature this reader lacks.
#[test]
fn each_check_fails_a_signature_only_where_its_level_enforces_it() {
    let root = pki::Ca::root();
    let stranger = pki::Ca::root();
    let outcome = |level: &str, extra: serde_json::Value, jws: &pki::Jws<'_>| {
        judge(&trusting(&root, level, extra), jws)
    };
    let none = serde_json::json!({});
    let untrusted = pki::Jws::new(&stranger);
    assert!(outcome("strict", none.clone(), &untrusted)
        .unwrap_err()
        .contains("does not chain to the trust store"));
    assert!(outcome("permissive", none.clone(), &untrusted).is_err());
    assert_eq!(
        outcome("audit", none.clone(), &untrusted),
        Ok("trust policy 'p' (audit)".into())
    );
    let log = serde_json::json!({"signatureVerification": {"level": "strict", "override": {"authenticity": "log"}}});
    assert_eq!(
        outcome("strict", log, &untrusted),
        Ok("trust policy 'p' (strict)".into())
    );
    let other = serde_json::json!({"trustedIdentities": ["x509.subject: C=US, ST=WA, O=Other"]});
    assert!(outcome("permissive", other, &pki::Jws::new(&root))
        .unwrap_err()
        .contains("certificate identity mismatch"));

    let expired = pki::Jws {
        expiry: Some("2025-06-01T00:00:00Z"),
        ..pki::Jws::new(&root)
    };
    assert!(outcome("strict", none.clone(), &expired)
        .unwrap_err()
        .contains("the signature expired at"));
    assert!(outcome("permissive", none.clone(), &expired).is_ok());
    let mut old = pki::Jws::new(&root);
    old.leaf.expired = true;
    assert!(outcome("strict", none.clone(), &old)
        .unwrap_err()
        .contains("expired at"));
    assert!(outcome("permissive", none.clone(), &old).is_ok());
    let log = serde_json::json!({"signatureVerification": {"level": "strict", "override": {"authenticTimestamp": "log"}}});
    assert!(outcome("strict", log, &old).is_ok());

    let tsa = |when: &str| {
        serde_json::json!({"trustStores": ["ca:x", "tsa:x"],
        "signatureVerification": {"level": "strict", "verifyTimestamp": when}})
    };
    let fresh = pki::Jws::new(&root);
    assert!(outcome("strict", tsa("always"), &fresh)
        .unwrap_err()
        .contains("requires a timestamp countersignature"));
    assert!(outcome("strict", tsa("afterCertExpiry"), &fresh).is_ok());
    assert!(outcome("strict", tsa("afterCertExpiry"), &old)
        .unwrap_err()
        .contains("countersignature"));
}

/// The bounds at their numbers: 32 CA certificates, entries of 256 KiB; an expiry is passed
/// only after its instant.
#[test]
fn bounds_and_expiry_hold_at_their_edges() {
    let root = pki::Ca::root();
    let policy = serde_json::json!({"version": "1.0", "trustPolicies": [{"name": "p",
        "registryScopes": ["*"], "signatureVerification": {"level": "strict"},
        "trustStores": ["ca:x"], "trustedIdentities": ["*"]}]})
    .to_string();
    let pem = root.0.pem();
    let certs = |n: usize| {
        let names: Vec<String> = (0..n).map(|i| format!("ca{i}.crt")).collect();
        let entries: Vec<(&str, &[u8])> =
            names.iter().map(|n| (n.as_str(), pem.as_bytes())).collect();
        NotationTrust::from_secret(&data(policy.as_bytes(), &entries)).map(|_| ())
    };
    assert_eq!(certs(MAX_CERTIFICATES), Ok(()));
    assert_eq!(
        certs(MAX_CERTIFICATES + 1),
        Err("over 32 CA certificates".into())
    );
    let mut padded = pem.clone().into_bytes();
    padded.resize(MAX_ENTRY_BYTES, b'\n');
    assert!(NotationTrust::from_secret(&data(policy.as_bytes(), &[("ca.crt", &padded)])).is_ok());
    let trust = NotationTrust::from_secret(&data(policy.as_bytes(), &[("ca.crt", pem.as_bytes())]))
        .unwrap();
    let jws = pki::Jws {
        expiry: Some("2030-01-01T00:00:00Z"),
        ..pki::Jws::new(&root)
    }
    .bytes();
    let expiry = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_893_456_000);
    let served = super::super::Subject {
        media_type: "application/vnd.oci.image.manifest.v1+json".into(),
        size: 7,
    };
    let at = |now| {
        trust.verify(
            "r.example/app",
            "application/jose+json",
            &jws,
            (DIGEST, Some(&served)),
            now,
        )
    };
    assert_eq!(at(expiry).map(|(_, until)| until), Ok(Some(expiry)));
    let err = at(expiry + std::time::Duration::from_secs(1)).unwrap_err();
    assert_eq!(err.check, Check::Time);
    assert!(err.reason.contains("the signature expired at"), "{err}");
}

/// The statement whose scopes name the repository applies, else `*`'s; the signer is named by
/// its subject when an identity is trusted.
#[test]
fn the_statement_naming_the_repository_applies() {
    let root = pki::Ca::root();
    let stranger = pki::Ca::root();
    let policy = serde_json::json!({"version": "1.0", "trustPolicies": [
        {"name": "app", "registryScopes": ["r.example/app"], "signatureVerification": {"level": "strict"},
         "trustStores": ["ca:x"], "trustedIdentities": ["x509.subject: C=US, ST=WA, O=Example"]},
        {"name": "rest", "registryScopes": ["*"], "signatureVerification": {"level": "audit"},
         "trustStores": ["ca:x"], "trustedIdentities": ["*"]}]});
    let pem = root.0.pem();
    let trust = NotationTrust::from_secret(&data(
        policy.to_string().as_bytes(),
        &[("ca.crt", pem.as_bytes())],
    ))
    .unwrap();
    let served = super::super::Subject {
        media_type: "application/vnd.oci.image.manifest.v1+json".into(),
        size: 7,
    };
    let at = |repository: &str, jws: &pki::Jws<'_>| {
        trust
            .verify(
                repository,
                "application/jose+json",
                &jws.bytes(),
                (DIGEST, Some(&served)),
                SystemTime::now(),
            )
            .map(|(who, _)| who)
    };
    assert_eq!(
        at("r.example/app", &pki::Jws::new(&root)),
        Ok("C=US, CN=rcgen self signed cert, O=Example, ST=WA".into())
    );
    let err = at("r.example/app", &pki::Jws::new(&stranger)).unwrap_err();
    assert_eq!(err.check, Check::Authenticity);
    assert!(
        err.reason.contains("does not chain to the trust store"),
        "{err}"
    );
    assert_eq!(
        at("r.example/other", &pki::Jws::new(&stranger)),
        Ok("trust policy 'rest' (audit)".into())
    );
}
