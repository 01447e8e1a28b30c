//! Certificates signed with each algorithm a chain may use, made once with openssl
//! (`fixtures/`: self-signed CAs of P-256 with SHA-384, P-384 with SHA-256, RSA 2048, 3072 and
//! 4096 with SHA-256, -384 and -512), and chains made here: each signature verifies with its
//! issuer's key only, each key maps to the algorithm notation signs with.

use super::*;
use x509_cert::der::{DecodePem, Encode};

const FIXTURES: [(&str, &str, Option<&str>); 5] = [
    (
        "P-256, SHA-384",
        include_str!("fixtures/p256-sha384.crt"),
        Some("ES256"),
    ),
    (
        "P-384, SHA-256",
        include_str!("fixtures/p384-sha256.crt"),
        Some("ES384"),
    ),
    (
        "RSA 2048, SHA-256",
        include_str!("fixtures/rsa2048-sha256.crt"),
        Some("PS256"),
    ),
    (
        "RSA 3072, SHA-384",
        include_str!("fixtures/rsa3072-sha384.crt"),
        Some("PS384"),
    ),
    (
        "RSA 4096, SHA-512",
        include_str!("fixtures/rsa4096-sha512.crt"),
        Some("PS512"),
    ),
];

fn cert(pem: &str) -> Cert {
    let der = Certificate::from_pem(pem).unwrap().to_der().unwrap();
    read(&[der]).unwrap().remove(0)
}

/// Each fixture's self-signature verifies by its own algorithm; changed by a byte, it does not;
/// another fixture's key does not verify it; its key maps to notation's algorithm.
#[test]
fn every_signature_algorithm_verifies_with_its_issuers_key_only() {
    let certs: Vec<Cert> = FIXTURES.iter().map(|(_, pem, _)| cert(pem)).collect();
    for (i, (what, _, alg)) in FIXTURES.iter().enumerate() {
        assert!(certs[i].signed(&certs[i]), "{what}");
        assert!(certs[i].issued_by(&certs[i]), "{what}");
        let other = &certs[(i + 1) % certs.len()];
        assert!(!other.signed(&certs[i]), "{what} by another key");
        let mut changed = Certificate::from_pem(FIXTURES[i].1).unwrap();
        changed.tbs_certificate.serial_number =
            x509_cert::serial_number::SerialNumber::new(&[1, 2, 3]).unwrap();
        let tampered = read(&[changed.to_der().unwrap()]).unwrap().remove(0);
        assert!(!certs[i].signed(&tampered), "{what} changed");
        // Named by its issuer is not enough: the issuer's key must have signed it.
        assert!(!tampered.issued_by(&certs[i]), "{what} changed, same names");
        assert_eq!(signing_algorithm(&certs[i]).ok(), *alg, "{what}");
    }
}

/// A modulus's length, read from its DER header in short and long forms.
#[test]
fn an_rsa_modulus_is_measured_from_its_der() {
    // SEQUENCE (long form, 2 length bytes) { INTEGER (long form) 0x00 + 256 bytes, INTEGER 3 }
    let mut der = vec![0x30, 0x82, 0x01, 0x0a, 0x02, 0x82, 0x01, 0x01, 0x00];
    der.extend(std::iter::repeat_n(0xff, 256));
    der.extend([0x02, 0x01, 0x03]);
    assert_eq!(rsa_modulus_bytes(&der), Some(256));
    // Short forms: a 3-byte modulus.
    assert_eq!(
        rsa_modulus_bytes(&[0x30, 0x08, 0x02, 0x03, 0x01, 0x02, 0x03, 0x02, 0x01, 0x03]),
        Some(3)
    );
    assert_eq!(rsa_modulus_bytes(&[0x30, 0x82, 0x01]), None);
    assert_eq!(rsa_modulus_bytes(&[]), None);
    // One length byte in long form (0x81): a 128-byte modulus.
    let mut der = vec![0x30, 0x81, 0x87, 0x02, 0x81, 0x81, 0x00];
    der.extend(std::iter::repeat_n(0xff, 128));
    der.extend([0x02, 0x01, 0x03]);
    assert_eq!(rsa_modulus_bytes(&der), Some(128));
    // 0x80 is the long form with no length bytes, not a length of 128.
    assert_eq!(rsa_modulus_bytes(&[0x30, 0x03, 0x02, 0x80, 0x05]), Some(0));
}

/// The subject is named in what a refusal says.
#[test]
fn a_refusal_names_the_certificate() {
    let p256 = cert(FIXTURES[0].1);
    assert_eq!(p256.subject(), "CN=p256-sha384");
    let err = check(std::slice::from_ref(&p256), "ES256").unwrap_err();
    assert!(err.contains("'CN=p256-sha384' is a CA"), "{err}");
}

/// Chains made with rcgen: a root, what it issues, and the chain's DER, leaf first.
mod made {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
        KeyUsagePurpose,
    };

    pub fn ca_params(name: &str, path_len: Option<u8>) -> CertificateParams {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = match path_len {
            Some(n) => IsCa::Ca(BasicConstraints::Constrained(n)),
            None => IsCa::Ca(BasicConstraints::Unconstrained),
        };
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        params
    }

    pub fn root(params: CertificateParams) -> CertifiedIssuer<'static, KeyPair> {
        CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
    }

    pub fn below(
        params: CertificateParams,
        issuer: &CertifiedIssuer<'static, KeyPair>,
    ) -> CertifiedIssuer<'static, KeyPair> {
        CertifiedIssuer::signed_by(params, KeyPair::generate().unwrap(), issuer).unwrap()
    }

    pub fn leaf(usages: Vec<KeyUsagePurpose>, name: &str) -> CertificateParams {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = usages;
        params
    }
}

fn ders(certs: &[&[u8]]) -> Vec<Cert> {
    read(&certs.iter().map(|c| c.to_vec()).collect::<Vec<_>>()).unwrap()
}

/// Path lengths, CA rules and the leaf's key usages, each at its edge.
#[test]
fn each_rule_of_the_chain_holds_at_its_edge() {
    use rcgen::KeyUsagePurpose as Ku;
    let signer = rcgen::KeyPair::generate().unwrap();
    let leaf_of = |issuer: &rcgen::CertifiedIssuer<'static, rcgen::KeyPair>, usages: Vec<Ku>| {
        made::leaf(usages, "leaf")
            .signed_by(&signer, issuer)
            .unwrap()
    };
    // A root allowing one CA below it takes one intermediate; allowing none, it does not.
    for (path_len, ok) in [(1, true), (0, false)] {
        let root = made::root(made::ca_params("root", Some(path_len)));
        let middle = made::below(made::ca_params("middle", None), &root);
        let leaf = leaf_of(&middle, vec![Ku::DigitalSignature]);
        let chain = ders(&[leaf.der(), middle.der(), root.der()]);
        let got = check(&chain, "ES256");
        assert_eq!(got.is_ok(), ok, "path length {path_len}: {got:?}");
        if !ok {
            assert!(got
                .unwrap_err()
                .contains("path length does not allow 1 CAs"));
        }
    }
    let root = made::root(made::ca_params("root", None));
    // The root twice: a self-signed certificate before the last is refused, as notation-go
    // refuses it, though the next one (itself) did sign it.
    let leaf = leaf_of(&root, vec![Ku::DigitalSignature]);
    let err = check(&ders(&[leaf.der(), root.der(), root.der()]), "ES256").unwrap_err();
    assert!(err.contains("is self-signed before the root"), "{err}");
    // An issuer that is no CA, or may not sign certificates, is refused.
    let mut not_ca = made::ca_params("not a CA", None);
    not_ca.is_ca = rcgen::IsCa::ExplicitNoCa;
    let not_ca = made::below(not_ca, &root);
    let leaf = leaf_of(&not_ca, vec![Ku::DigitalSignature]);
    let err = check(&ders(&[leaf.der(), not_ca.der(), root.der()]), "ES256").unwrap_err();
    assert!(err.contains("do not make it a CA"), "{err}");
    let mut no_sign = made::ca_params("no cert sign", None);
    no_sign.key_usages = vec![Ku::CrlSign];
    let no_sign = made::below(no_sign, &root);
    let leaf = leaf_of(&no_sign, vec![Ku::DigitalSignature]);
    let err = check(&ders(&[leaf.der(), no_sign.der(), root.der()]), "ES256").unwrap_err();
    assert!(err.contains("lacks certificate signing"), "{err}");
    // Digital signature alone (content commitment allowed); each other usage refused.
    let ok = leaf_of(&root, vec![Ku::DigitalSignature, Ku::ContentCommitment]);
    assert_eq!(check(&ders(&[ok.der(), root.der()]), "ES256"), Ok(()));
    for usage in [
        Ku::KeyEncipherment,
        Ku::DataEncipherment,
        Ku::KeyAgreement,
        Ku::KeyCertSign,
        Ku::CrlSign,
        Ku::EncipherOnly,
        Ku::DecipherOnly,
    ] {
        let leaf = leaf_of(&root, vec![Ku::DigitalSignature, usage]);
        let err = check(&ders(&[leaf.der(), root.der()]), "ES256").unwrap_err();
        assert!(err.contains("beyond digital signature"), "{usage:?}: {err}");
    }
}

/// A lone certificate must sign itself: its own name and its own key.
#[test]
fn a_lone_leaf_signs_itself() {
    use rcgen::KeyUsagePurpose as Ku;
    let key = rcgen::KeyPair::generate().unwrap();
    let alone = made::leaf(vec![Ku::DigitalSignature], "alone")
        .self_signed(&key)
        .unwrap();
    assert_eq!(check(&ders(&[alone.der()]), "ES256"), Ok(()));
    // Named as its issuer, signed by the issuer's key: not self-signed.
    let root = made::root(made::ca_params("same name", None));
    let named = made::leaf(vec![Ku::DigitalSignature], "same name")
        .signed_by(&key, &root)
        .unwrap();
    let err = check(&ders(&[named.der()]), "ES256").unwrap_err();
    assert!(err.contains("is alone and not self-signed"), "{err}");
    // Another's name, its own key: not self-issued.
    let root = made::root(made::ca_params("issuer", None));
    let other = made::leaf(vec![Ku::DigitalSignature], "other")
        .signed_by(&key, &root)
        .unwrap();
    assert!(check(&ders(&[other.der()]), "ES256").is_err());
}

/// Valid from its first second to its last, not before or after.
#[test]
fn a_chain_is_valid_within_every_certificates_dates() {
    let mut params = made::ca_params("dated", None);
    params.not_before = rcgen::date_time_ymd(2030, 1, 1);
    params.not_after = rcgen::date_time_ymd(2031, 1, 1);
    let dated = made::root(params);
    let chain = ders(&[dated.der()]);
    let at = |secs: u64| {
        valid_at(
            &chain,
            SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs),
        )
    };
    let (start, end) = (1_893_456_000, 1_924_992_000);
    assert!(at(start).is_ok() && at(end).is_ok());
    assert!(at(start - 1).unwrap_err().reason.contains("not valid yet"));
    assert!(at(end + 1).unwrap_err().reason.contains("expired at"));
    assert_eq!(
        not_after(&chain),
        Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(end))
    );
}

/// P-384 with SHA-384, made here: the fourth ECDSA pairing.
#[test]
fn a_p384_certificate_signed_with_sha384_verifies() {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).unwrap();
    let root = rcgen::CertifiedIssuer::self_signed(made::ca_params("p384", None), key).unwrap();
    let cert = &ders(&[root.der()])[0];
    assert!(cert.signed(cert));
    assert_eq!(signing_algorithm(cert), Ok("ES384"));
}

/// CA certificates signed as Go's x509 verifies them and ring alone does not: ECDSA with a
/// digest longer than the curve, RSASSA-PSS, a P-521 key (made once with openssl,
/// `fixtures/`); each self-signature verifies, and not once changed.
#[test]
fn certificates_go_verifies_beyond_rings_pairs_verify() {
    for (what, pem) in [
        ("P-256, SHA-512", include_str!("fixtures/p256-sha512.crt")),
        (
            "RSA-PSS 2048, SHA-256",
            include_str!("fixtures/rsa2048-pss-sha256.crt"),
        ),
        ("P-521, SHA-512", include_str!("fixtures/p521-sha512.crt")),
        ("P-521, SHA-256", include_str!("fixtures/p521-sha256.crt")),
        ("P-521, SHA-384", include_str!("fixtures/p521-sha384.crt")),
    ] {
        let ca = cert(pem);
        assert!(ca.signed(&ca), "{what}");
        let mut changed = Certificate::from_pem(pem).unwrap();
        changed.tbs_certificate.serial_number =
            x509_cert::serial_number::SerialNumber::new(&[1, 2, 3]).unwrap();
        let tampered = read(&[changed.to_der().unwrap()]).unwrap().remove(0);
        assert!(!ca.signed(&tampered), "{what} changed");
        let other = cert(FIXTURES[0].1);
        assert!(!other.signed(&ca), "{what} by another key");
    }
    // A P-521 key signs as ES512, which envelope.rs verifies.
    let p521 = cert(include_str!("fixtures/p521-sha512.crt"));
    assert_eq!(signing_algorithm(&p521), Ok("ES512"));
}
