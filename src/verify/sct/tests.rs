//! SCTs made here as a CT log makes them: the log signs the precertificate entry (the issuer's
//! key hash, the leaf's TBSCertificate without the list), and the CA then issues the same
//! certificate with the list embedded. tests/it/signatures/oracle has sigstore-go judge such
//! certificates too.

use super::super::keyless::{Identity, Keyless, TrustedRoot};
use base64::Engine;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::EncodePublicKey;
use rcgen::{CertificateParams, CertifiedIssuer, CustomExtension, KeyPair};
use sha2::{Digest, Sha256};
use std::time::{Duration, SystemTime};
use x509_cert::der::asn1::OctetString;
use x509_cert::der::{Decode, Encode};

const ISSUER: &str = "https://issuer.example";
/// 2026-01-01, when the certificates are valid and the SCTs made.
const AT: u64 = 1_767_225_600;

fn enc(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// How an SCT is spoiled.
#[derive(Clone, Copy, PartialEq)]
enum Sct {
    None,
    Good,
    /// Signed over the TBSCertificate with another serial number.
    OtherCertificate,
    /// Signed with SHA-384 and said so.
    OtherHash,
    Truncated,
    /// After this many SCTs of the log whose signatures do not verify, each another.
    AfterBogus(u8),
}

impl Ca {
    fn new() -> Ca {
        Ca::until(None)
    }

    /// A CA whose own certificate is valid only until `(year, month, day)`.
    fn until(until: Option<(i32, u8, u8)>) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        if let Some((year, month, day)) = until {
            params.not_after = rcgen::date_time_ymd(year, month, day);
        }
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Ca { issuer }
    }

    fn leaf_params(serial: u8) -> CertificateParams {
        let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
        leaf.subject_alt_names = vec![rcgen::SanType::Rfc822Name(
            "dev@example.com".try_into().unwrap(),
        )];
        leaf.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::CodeSigning];
        leaf.serial_number = Some(rcgen::SerialNumber::from(vec![1, serial]));
        leaf.not_before = rcgen::date_time_ymd(2025, 12, 31);
        leaf.not_after = rcgen::date_time_ymd(2026, 1, 2);
        let mut value = vec![12, ISSUER.len() as u8];
        value.extend_from_slice(ISSUER.as_bytes());
        leaf.custom_extensions = vec![CustomExtension::from_oid_content(
            &[1, 3, 6, 1, 4, 1, 57264, 1, 8],
            value,
        )];
        leaf
    }

    /// A leaf for a fresh key, with an SCT of `log` as `sct` says.
    fn leaf(&self, log: &SigningKey, sct: Sct) -> Vec<u8> {
        let key = KeyPair::generate().unwrap();
        let serial = if sct == Sct::OtherCertificate { 2 } else { 1 };
        let pre = Self::leaf_params(serial)
            .signed_by(&key, &self.issuer)
            .unwrap();
        let tbs = x509_cert::Certificate::from_der(pre.der())
            .unwrap()
            .tbs_certificate
            .to_der()
            .unwrap();
        let issuer_spki = x509_cert::Certificate::from_der(self.issuer.der())
            .unwrap()
            .tbs_certificate
            .subject_public_key_info
            .to_der()
            .unwrap();
        let log_id = Sha256::digest(log.verifying_key().to_public_key_der().unwrap().as_bytes());
        let time = AT * 1000;
        let mut signed = vec![0, 0];
        signed.extend_from_slice(&time.to_be_bytes());
        signed.extend_from_slice(&[0, 1]);
        signed.extend_from_slice(&Sha256::digest(&issuer_spki));
        signed.extend_from_slice(&(tbs.len() as u32).to_be_bytes()[1..]);
        signed.extend_from_slice(&tbs);
        signed.extend_from_slice(&[0, 0]);
        let signature: Signature = log.sign(&signed);
        let signature = signature.to_der().as_bytes().to_vec();
        let mut one = vec![0];
        one.extend_from_slice(&log_id);
        one.extend_from_slice(&time.to_be_bytes());
        one.extend_from_slice(&[0, 0]);
        one.extend_from_slice(if sct == Sct::OtherHash {
            &[5, 3]
        } else {
            &[4, 3]
        });
        one.extend_from_slice(&(signature.len() as u16).to_be_bytes());
        one.extend_from_slice(&signature);
        let bogus = match sct {
            Sct::AfterBogus(n) => n,
            _ => 0,
        };
        let mut entries = Vec::new();
        for i in 0..bogus {
            let mut spoiled = one.clone();
            let last = spoiled.len() - 1;
            spoiled[last - 1] ^= i.wrapping_add(1);
            entries.extend_from_slice(&(spoiled.len() as u16).to_be_bytes());
            entries.extend_from_slice(&spoiled);
        }
        entries.extend_from_slice(&(one.len() as u16).to_be_bytes());
        entries.extend_from_slice(&one);
        let mut list = (entries.len() as u16).to_be_bytes().to_vec();
        list.extend_from_slice(&entries);
        if sct == Sct::Truncated {
            list.truncate(list.len() - 1);
        }
        let mut params = Self::leaf_params(1);
        if sct != Sct::None {
            let value = OctetString::new(list).unwrap().to_der().unwrap();
            params
                .custom_extensions
                .push(CustomExtension::from_oid_content(
                    &[1, 3, 6, 1, 4, 1, 11129, 2, 4, 2],
                    value,
                ));
        }
        params.signed_by(&key, &self.issuer).unwrap().der().to_vec()
    }

    /// A keyless trust of this CA, with `ctlogs` (their keys, and validFor start) in its root.
    fn keyless(&self, ctlogs: &[(&SigningKey, &str)]) -> Keyless {
        let logs: Vec<serde_json::Value> = ctlogs
            .iter()
            .map(|(key, start)| {
                let der = key.verifying_key().to_public_key_der().unwrap();
                serde_json::json!({"baseUrl": "https://ctfe.example", "hashAlgorithm": "SHA2_256",
                    "publicKey": {"rawBytes": enc(der.as_bytes()),
                        "keyDetails": "PKIX_ECDSA_P256_SHA_256", "validFor": {"start": start}},
                    "logId": {"keyId": enc(&Sha256::digest(der.as_bytes()))}})
            })
            .collect();
        let root = serde_json::json!({"certificateAuthorities": [{
            "certChain": {"certificates": [{"rawBytes": enc(self.issuer.der())}]},
            "validFor": {"start": "2020-01-01T00:00:00Z"}}], "ctlogs": logs});
        Keyless {
            root: TrustedRoot::parse(root.to_string().as_bytes()).unwrap(),
            identities: vec![
                Identity::new("^https://issuer\\.example$", "^dev@example\\.com$").unwrap(),
            ],
        }
    }
}

fn judged(keyless: &Keyless, leaf: Vec<u8>) -> Result<String, String> {
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(AT);
    keyless.signer(&[leaf], at).map(|(_, who)| who)
}

/// A root whose CT logs' keys cannot be read (P-384, RSA: the verifier reads P-256) still asks
/// an SCT, and none can verify: refused, as sigstore-go refuses ("only able to verify 0 SCT
/// entries"), never taken for a root that names no CT log.
#[test]
fn a_root_whose_ct_log_keys_cannot_be_read_still_asks_an_sct() {
    let ca = Ca::new();
    let log = SigningKey::from_slice(&[7; 32]).unwrap();
    // A root naming one CT log, with a P-384 key: parsed, named, and no key read.
    let p384 = p384::SecretKey::from_slice(&[9; 48]).unwrap().public_key();
    let der = p384.to_public_key_der().unwrap();
    let root = serde_json::json!({"certificateAuthorities": [{
        "certChain": {"certificates": [{"rawBytes": enc(ca.issuer.der())}]},
        "validFor": {"start": "2020-01-01T00:00:00Z"}}],
        "ctlogs": [{"baseUrl": "https://ctfe.example", "hashAlgorithm": "SHA2_384",
            "publicKey": {"rawBytes": enc(der.as_bytes()), "keyDetails": "PKIX_ECDSA_P384_SHA_384",
                "validFor": {"start": "2020-01-01T00:00:00Z"}},
            "logId": {"keyId": enc(&Sha256::digest(der.as_bytes()))}}]});
    let parsed = TrustedRoot::parse(root.to_string().as_bytes()).unwrap();
    assert!(parsed.ctlogs_named && parsed.ctlogs.is_empty());
    let mut trusted = ca.keyless(&[(&log, "2020-01-01T00:00:00Z")]);
    assert!(
        !trusted.root.ctlogs.is_empty(),
        "a P-256 CT log's key is read"
    );
    trusted.root = parsed;
    let err = judged(&trusted, ca.leaf(&log, Sct::Good)).unwrap_err();
    assert!(
        err.contains("none of its SCTs is of a CT log of trusted_root.json"),
        "{err}"
    );
    let err = judged(&trusted, ca.leaf(&log, Sct::None)).unwrap_err();
    assert!(
        err.contains("carries no signed certificate timestamp (SCT)"),
        "{err}"
    );
    let unnamed = ca.keyless(&[]);
    assert!(!unnamed.root.ctlogs_named);
    assert!(
        judged(&unnamed, ca.leaf(&log, Sct::None)).is_ok(),
        "no CT log named, none asked"
    );
}

/// A Fulcio root certificate that expired before the signing time vouches for nothing then, as
/// Go's x509 checks a root for sigstore-go (webpki takes an anchor as a bare name and key).
#[test]
fn an_expired_root_certificate_vouches_for_no_signing_certificate() {
    let log = SigningKey::from_slice(&[7; 32]).unwrap();
    let expired = Ca::until(Some((2025, 6, 1)));
    let trusted = expired.keyless(&[(&log, "2020-01-01T00:00:00Z")]);
    let err = judged(&trusted, expired.leaf(&log, Sct::Good)).unwrap_err();
    assert!(err.contains("the trusted root's certificate"), "{err}");
    assert!(err.contains("is not valid at"), "{err}");
    let lasting = Ca::until(Some((2030, 1, 1)));
    let trusted = lasting.keyless(&[(&log, "2020-01-01T00:00:00Z")]);
    assert!(judged(&trusted, lasting.leaf(&log, Sct::Good)).is_ok());
}

#[test]
fn a_root_with_ct_logs_asks_an_sct_of_one() {
    let ca = Ca::new();
    let log = SigningKey::from_slice(&[7; 32]).unwrap();
    let other = SigningKey::from_slice(&[8; 32]).unwrap();
    let trusted = ca.keyless(&[(&log, "2020-01-01T00:00:00Z")]);
    let who = "dev@example.com (https://issuer.example)";
    assert_eq!(judged(&trusted, ca.leaf(&log, Sct::Good)), Ok(who.into()));
    let err = judged(&trusted, ca.leaf(&log, Sct::None)).unwrap_err();
    assert!(
        err.contains("carries no signed certificate timestamp (SCT)"),
        "{err}"
    );
    let err = judged(&trusted, ca.leaf(&other, Sct::Good)).unwrap_err();
    assert!(
        err.contains("none of its SCTs is of a CT log of trusted_root.json"),
        "{err}"
    );
    let err = judged(&trusted, ca.leaf(&log, Sct::OtherCertificate)).unwrap_err();
    assert!(
        err.contains("its SCT does not verify with its CT log's key"),
        "{err}"
    );
    let err = judged(&trusted, ca.leaf(&log, Sct::OtherHash)).unwrap_err();
    assert!(err.contains("not an ECDSA signature over SHA-256"), "{err}");
    let err = judged(&trusted, ca.leaf(&log, Sct::Truncated)).unwrap_err();
    assert!(err.contains("SCT list is truncated"), "{err}");
    // A log whose period starts after the SCT's time.
    let late = ca.keyless(&[(&log, "2026-06-01T00:00:00Z")]);
    let err = judged(&late, ca.leaf(&log, Sct::Good)).unwrap_err();
    assert!(err.contains("outside its CT log's validFor"), "{err}");
    // A root that names no CT log asks none (a private CA's, as with --insecure-ignore-sct).
    assert_eq!(
        judged(&ca.keyless(&[]), ca.leaf(&log, Sct::None)),
        Ok(who.into())
    );
}

/// Every SCT is read, as sigstore-go reads them (the list's encoding bounds it to 64 KiB); what
/// they cost is the signature's budget (`keyless::tests`).
#[test]
fn the_whole_list_is_read() {
    let mut list = Vec::new();
    for _ in 0..1000 {
        let mut one = vec![0];
        one.extend_from_slice(&[0; 32 + 8]);
        one.extend_from_slice(&[0, 0, 4, 3, 0, 0]);
        list.extend_from_slice(&(one.len() as u16).to_be_bytes());
        list.extend_from_slice(&one);
    }
    let list = [(list.len() as u16).to_be_bytes().to_vec(), list].concat();
    assert_eq!(super::parse_list(&list).unwrap().len(), 1000);
}

/// A good SCT after others of its log that do not verify counts, as sigstore-go reads every
/// one; past the signature's budget of checks, the signature is refused, saying so.
#[test]
fn a_good_sct_counts_wherever_it_is_in_the_list_within_the_budget() {
    let (ca, log) = (Ca::new(), SigningKey::from_slice(&[7; 32]).unwrap());
    let trusted = ca.keyless(&[(&log, "2020-01-01T00:00:00Z")]);
    let who = "dev@example.com (https://issuer.example)";
    assert_eq!(
        judged(&trusted, ca.leaf(&log, Sct::AfterBogus(20))),
        Ok(who.into())
    );
    let err = judged(&trusted, ca.leaf(&log, Sct::AfterBogus(40))).unwrap_err();
    assert!(
        err.contains(
            "the signing certificate's SCTs: its certificates took over the 32 signature checks"
        ),
        "{err}"
    );
}
