//! A trusted root and identities are bounded; a leaf's subject, key and usages are read as
//! sigstore-go reads them.

use super::*;
use base64::Engine;

fn root(authorities: usize, chain: usize) -> Vec<u8> {
    let authority = serde_json::json!({"certChain": {"certificates": vec![
        serde_json::json!({"rawBytes": "AA=="}); chain]}});
    serde_json::to_vec(&serde_json::json!({
        "certificateAuthorities": vec![authority; authorities]
    }))
    .unwrap()
}

#[test]
fn a_trusted_root_is_bounded_before_it_is_decoded() {
    let err = TrustedRoot::parse(&vec![b' '; MAX_ROOT_BYTES + 1]).unwrap_err();
    assert!(err.contains("over 262144 bytes"), "{err}");
    let err = TrustedRoot::parse(&root(MAX_AUTHORITIES + 1, 1)).unwrap_err();
    assert!(
        err.contains("over 16 certificate or timestamp authorities"),
        "{err}"
    );
    let mut stamped: serde_json::Value = serde_json::from_slice(&root(1, 1)).unwrap();
    stamped["timestampAuthorities"] = vec![stamped["certificateAuthorities"][0].clone(); 17].into();
    let err = TrustedRoot::parse(stamped.to_string().as_bytes()).unwrap_err();
    assert!(
        err.contains("over 16 certificate or timestamp authorities"),
        "{err}"
    );
    stamped["timestampAuthorities"] = vec![stamped["certificateAuthorities"][0].clone(); 16].into();
    let err = TrustedRoot::parse(stamped.to_string().as_bytes()).unwrap_err();
    assert!(err.contains("not X.509 DER"), "{err}");
    let err = TrustedRoot::parse(&root(1, MAX_CHAIN + 1)).unwrap_err();
    assert!(err.contains("over 8 certificates"), "{err}");
    let err = TrustedRoot::parse(&root(1, 1)).unwrap_err();
    assert!(err.contains("not X.509 DER"), "{err}");
    let err = TrustedRoot::parse(&root(0, 0)).unwrap_err();
    assert!(err.contains("names no certificate authority"), "{err}");
    // Exactly at each bound: read on (and refused later, for what the entries are).
    for (authorities, chain) in [(MAX_AUTHORITIES, 1), (1, MAX_CHAIN)] {
        let err = TrustedRoot::parse(&root(authorities, chain)).unwrap_err();
        assert!(
            err.contains("not X.509 DER"),
            "{authorities} x {chain}: {err}"
        );
    }
    let err = TrustedRoot::parse(&vec![b' '; MAX_ROOT_BYTES]).unwrap_err();
    assert!(err.contains("is not a Sigstore trusted root"), "{err}");
    // The logs are read in the same bounded read: over the size, nothing of them is parsed.
    let mut big = serde_json::to_vec(&serde_json::json!({"tlogs": vec![
        serde_json::json!({"publicKey": {"rawBytes": "not base64"}}); 17]}))
    .unwrap();
    big.resize(MAX_ROOT_BYTES + 1, b' ');
    let err = TrustedRoot::parse(&big).unwrap_err();
    assert!(err.contains("over 262144 bytes"), "{err}");
    let logs =
        serde_json::json!({"tlogs": vec![serde_json::json!({"publicKey": {"rawBytes": ""}}); 17]});
    let err = TrustedRoot::parse(logs.to_string().as_bytes()).unwrap_err();
    assert!(err.contains("over 16 transparency logs"), "{err}");
}

#[test]
fn identities_are_bounded_regular_expressions() {
    let long = "a".repeat(MAX_PATTERN_BYTES + 1);
    let err = Identity::new(&long, ".*").unwrap_err();
    assert!(err.contains("issuer is over 1024 bytes"), "{err}");
    let err = Identity::new(".*", "(").unwrap_err();
    assert!(
        err.contains("subject \"(\" is not a regular expression"),
        "{err}"
    );
    // Compiled within a size limit: a pattern that expands past it is refused.
    let err = Identity::new("(((a{100}){100}){100})", ".*").unwrap_err();
    assert!(err.contains("not a regular expression"), "{err}");
}

#[test]
fn a_signature_chain_is_bounded() {
    let keyless = Keyless {
        root: TrustedRoot {
            authorities: Vec::new(),
            logs: Default::default(),
            timestamps: Vec::new(),
            ctlogs: Default::default(),
            ctlogs_named: false,
        },
        identities: Vec::new(),
    };
    let err = keyless
        .signer(&vec![vec![0]; MAX_CHAIN + 1], SystemTime::now())
        .unwrap_err();
    assert!(err.contains("over 8 certificates"), "{err}");
    let err = keyless
        .signer(&vec![vec![0]; MAX_CHAIN], SystemTime::now())
        .unwrap_err();
    assert!(err.contains("not a usable X.509 certificate"), "{err}");
    let err = keyless.signer(&[], SystemTime::now()).unwrap_err();
    assert!(err.contains("carries no certificate"), "{err}");
}

/// A root CA and a leaf it issues with `sans`, `eku`, on a key of `alg`.
fn issued(
    sans: Vec<rcgen::SanType>,
    eku: Vec<rcgen::ExtendedKeyUsagePurpose>,
    alg: &'static rcgen::SignatureAlgorithm,
) -> (Vec<u8>, Vec<u8>, rcgen::KeyPair) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
    leaf.subject_alt_names = sans;
    leaf.extended_key_usages = eku;
    let issuer = "https://issuer.example";
    let mut value = vec![12, issuer.len() as u8];
    value.extend_from_slice(issuer.as_bytes());
    leaf.custom_extensions = vec![rcgen::CustomExtension::from_oid_content(
        &[1, 3, 6, 1, 4, 1, 57264, 1, 8],
        value,
    )];
    let key = KeyPair::generate_for(alg).unwrap();
    let cert = leaf.signed_by(&key, &ca).unwrap();
    (ca.der().to_vec(), cert.der().to_vec(), key)
}

fn email(text: &str) -> rcgen::SanType {
    rcgen::SanType::Rfc822Name(text.try_into().unwrap())
}

/// sigstore-go reads one SAN: the first URI, else the first email; a second email is not the
/// subject, and a DNS name is none.
#[test]
fn the_subject_is_the_first_uri_else_the_first_email() {
    use rcgen::{ExtendedKeyUsagePurpose as Eku, SanType, PKCS_ECDSA_P256_SHA256 as P256};
    let uri = SanType::URI("https://ci.example/release".try_into().unwrap());
    let subject = |sans| {
        read_leaf(&issued(sans, vec![Eku::CodeSigning], &P256).1)
            .unwrap()
            .1
    };
    assert_eq!(
        subject(vec![email("a@example.com"), email("b@example.com")]),
        Some("a@example.com".into())
    );
    assert_eq!(
        subject(vec![email("a@example.com"), uri.clone()]),
        Some("https://ci.example/release".into())
    );
    assert_eq!(
        subject(vec![SanType::DnsName("ci.example".try_into().unwrap())]),
        None
    );
    let (_, leaf, _) = issued(vec![email("a@example.com")], vec![], &P256);
    assert_eq!(
        read_leaf(&leaf).unwrap().0.as_deref(),
        Some("https://issuer.example")
    );
    let second = SanType::URI("https://ci.example/other".try_into().unwrap());
    assert_eq!(
        subject(vec![email("a@example.com"), uri.clone(), second]),
        Some("https://ci.example/release".into())
    );
    // Fulcio's username otherName, when there is neither URI nor email; another otherName is
    // not it.
    let other_name = |oid: &[u64], text: &str| {
        SanType::OtherName((oid.to_vec(), rcgen::OtherNameValue::Utf8String(text.into())))
    };
    let username = other_name(&[1, 3, 6, 1, 4, 1, 57264, 1, 7], "dev");
    let unknown = other_name(&[1, 2, 3, 4], "nobody");
    assert_eq!(
        subject(vec![username.clone(), unknown.clone()]),
        Some("dev".into())
    );
    assert_eq!(
        subject(vec![unknown.clone(), username.clone()]),
        Some("dev".into())
    );
    assert_eq!(subject(vec![unknown]), None);
    let later = other_name(&[1, 3, 6, 1, 4, 1, 57264, 1, 7], "later");
    assert_eq!(subject(vec![username, later]), Some("dev".into()));
}

/// Extended key usages as Go's x509 reads them: none allows code signing, some must include it;
/// a P-384 leaf's key is read (and verifies with SHA-384).
#[test]
fn usages_and_keys_are_read_as_sigstore_go_reads_them() {
    use rcgen::{
        ExtendedKeyUsagePurpose as Eku, PKCS_ECDSA_P256_SHA256 as P256,
        PKCS_ECDSA_P384_SHA384 as P384,
    };
    let identity = Identity::new("^https://issuer\\.example$", "^a@example\\.com$").unwrap();
    let signer = |eku, alg| {
        let (ca, leaf, key) = issued(vec![email("a@example.com")], eku, alg);
        let root = serde_json::json!({"certificateAuthorities": [
            {"certChain": {"certificates": [{"rawBytes": base64::engine::general_purpose::STANDARD.encode(ca)}]}}]});
        let keyless = Keyless {
            root: TrustedRoot::parse(root.to_string().as_bytes()).unwrap(),
            identities: vec![identity.clone()],
        };
        (keyless.signer(&[leaf], SystemTime::now()), key)
    };
    assert!(
        signer(vec![], &P256).0.is_ok(),
        "no EKU allows code signing"
    );
    // Both halves of an identity must match.
    for (issuer, subject) in [
        ("^https://issuer\\.example$", "^b@"),
        ("^https://other$", "^a@"),
    ] {
        let (ca, leaf, _) = issued(vec![email("a@example.com")], vec![], &P256);
        let root = serde_json::json!({"certificateAuthorities": [{"certChain": {"certificates": [
            {"rawBytes": base64::engine::general_purpose::STANDARD.encode(ca)}]}}]});
        let keyless = Keyless {
            root: TrustedRoot::parse(root.to_string().as_bytes()).unwrap(),
            identities: vec![Identity::new(issuer, subject).unwrap()],
        };
        let err = keyless.signer(&[leaf], SystemTime::now()).unwrap_err();
        assert!(
            err.contains("certificate identity mismatch"),
            "{issuer} {subject}: {err}"
        );
    }
    assert!(signer(vec![Eku::CodeSigning], &P256).0.is_ok());
    let err = signer(vec![Eku::ServerAuth], &P256).0.unwrap_err();
    assert!(err.contains("RequiredEkuNotFound"), "{err}");
    let (found, key) = signer(vec![Eku::CodeSigning], &P384);
    let (key_read, who) = found.unwrap();
    assert_eq!(who, "a@example.com (https://issuer.example)");
    let message = b"signed bytes";
    let signature = rcgen::SigningKey::sign(&key, message).unwrap();
    let sha256 = <sha2::Sha256 as sha2::Digest>::digest(message);
    assert!(key_read.verifies(message, &sha256, &signature));
    assert!(!key_read.verifies(b"other bytes", &sha256, &signature));
}

/// A timestamp authority's first certificate is its one leaf only when its basic constraints
/// do not make it a CA, as sigstore-go splits the chain: a leaf saying `CA:FALSE` (or saying
/// nothing) signs; a CA first (here the root twice) is no leaf, only an intermediate.
#[test]
fn a_timestamp_chains_leaf_is_its_first_certificate_unless_a_ca() {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let leaf = |is_ca| {
        let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
        leaf.is_ca = is_ca;
        leaf.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::TimeStamping];
        let key = KeyPair::generate().unwrap();
        leaf.signed_by(&key, &ca).unwrap().der().to_vec()
    };
    let explicit = leaf(IsCa::ExplicitNoCa);
    let silent = leaf(IsCa::NoCa);
    let root_der = ca.der().to_vec();
    let read = |first: &[u8]| {
        let root = serde_json::json!({
            "certificateAuthorities": [{"certChain": {"certificates": [
                {"rawBytes": b64.encode(&root_der)}]}}],
            "timestampAuthorities": [{"certChain": {"certificates": [
                {"rawBytes": b64.encode(first)}, {"rawBytes": b64.encode(&root_der)}]}}]});
        let root = TrustedRoot::parse(root.to_string().as_bytes()).unwrap();
        root.timestamps.into_iter().next().unwrap()
    };
    assert_eq!(read(&explicit).leaf.as_deref(), Some(&explicit[..]));
    assert_eq!(read(&silent).leaf.as_deref(), Some(&silent[..]));
    let ca_first = read(&root_der);
    assert_eq!(ca_first.leaf, None);
    assert_eq!(ca_first.intermediates.ders().count(), 1);
}
