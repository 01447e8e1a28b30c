//! Log entries made here with a log key of a trusted root made here: a promise and a body that
//! record the signature verify, and each way of not recording it is refused; through the
//! policy's trust, a logged keyless signature is judged at its signing time.

use super::*;
use crate::reference::ImageReference;
use crate::verify::{Check, Signed, TrustedKeys, TRUSTED_ROOT};
use p256::ecdsa::signature::Signer;
use p256::ecdsa::SigningKey;
use p256::pkcs8::{DecodePrivateKey, EncodePublicKey};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

pub(super) fn enc(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A log: its key, and its entry in a trusted root's `tlogs`.
pub(super) struct Log(pub(super) SigningKey);

impl Log {
    pub(super) fn new(seed: u8) -> Log {
        Log(SigningKey::from_bytes(&[seed; 32].into()).unwrap())
    }

    fn der(&self) -> Vec<u8> {
        self.0.verifying_key().to_public_key_der().unwrap().to_vec()
    }

    fn root_entry(&self) -> serde_json::Value {
        serde_json::json!({"baseUrl": "https://rekor.invalid", "hashAlgorithm": "SHA2_256",
            "publicKey": {"rawBytes": enc(&self.der()), "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                "validFor": {"start": "2020-01-01T00:00:00Z"}},
            "logId": {"keyId": enc(&Sha256::digest(self.der()))}})
    }

    /// A trusted root naming this log only.
    pub(super) fn trusted_root(&self) -> String {
        serde_json::json!({"tlogs": [self.root_entry()]}).to_string()
    }

    /// A bundle's entry for `body` at `time`, promised by this log.
    pub(super) fn entry(&self, body: &serde_json::Value, time: i64) -> serde_json::Value {
        self.entry_at(body, time, 7)
    }

    /// An entry at the log's `index`.
    pub(super) fn entry_at(
        &self,
        body: &serde_json::Value,
        time: i64,
        index: u64,
    ) -> serde_json::Value {
        let body_text = enc(body.to_string().as_bytes());
        let id = Sha256::digest(self.der()).to_vec();
        let signed = serde_json::json!({"body": body_text, "integratedTime": time,
            "logID": id.iter().map(|b| format!("{b:02x}")).collect::<String>(), "logIndex": index});
        let promise: Signature = self.0.sign(&serde_json::to_vec(&signed).unwrap());
        serde_json::json!({"logIndex": index.to_string(), "logId": {"keyId": enc(&id)},
            "kindVersion": {"kind": "dsse", "version": "0.0.1"},
            "integratedTime": time.to_string(),
            "inclusionPromise": {"signedEntryTimestamp": enc(promise.to_der().as_bytes())},
            "canonicalizedBody": body_text})
    }
}

/// A `dsse` body recording `signature` over `payload` by `cert_pem`.
fn dsse_body(payload: &[u8], signature: &[u8], cert_pem: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": "0.0.1", "kind": "dsse", "spec": {
        "payloadHash": {"algorithm": "sha256", "value": format!("{:x}", Sha256::digest(payload))},
        "signatures": [{"signature": enc(signature), "verifier": enc(cert_pem.as_bytes())}]}})
}

/// A signing's bytes.
pub(super) struct Made {
    payload: Vec<u8>,
    signatures: Vec<Vec<u8>>,
    leaf: Vec<u8>,
}

impl Made {
    pub(super) fn signing(&self) -> Signing<'_> {
        Signing {
            kind: "dsse",
            signed: &self.payload,
            payload: &self.payload,
            signatures: &self.signatures,
            leaf: &self.leaf,
        }
    }
}

/// An entry `log` promised at 1,700,000,000 for a signing, and the signing.
pub(super) fn dsse_entry(log: &Log) -> (serde_json::Value, Made) {
    let cert = "-----BEGIN CERTIFICATE-----\nAAEC\n-----END CERTIFICATE-----\n";
    let (payload, signature, leaf) = (b"payload".to_vec(), vec![1, 2, 3], vec![0, 1, 2]);
    let entry = log.entry(&dsse_body(&payload, &signature, cert), 1_700_000_000);
    let signatures = vec![signature];
    (
        entry,
        Made {
            payload,
            signatures,
            leaf,
        },
    )
}

/// A Fulcio-shaped leaf (code signing, an email SAN, the OIDC issuer extension) issued by
/// `issuer`, valid between the two dates (year, month, day) when given, and its signing key.
fn keyless_leaf(
    issuer: &rcgen::CertifiedIssuer<'_, rcgen::KeyPair>,
    validity: Option<[(i32, u8, u8); 2]>,
) -> (rcgen::Certificate, SigningKey) {
    use rcgen::{CertificateParams, CustomExtension, ExtendedKeyUsagePurpose, KeyPair, SanType};
    let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
    leaf.subject_alt_names = vec![SanType::Rfc822Name("dev@example.com".try_into().unwrap())];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
    let oidc_issuer = "https://issuer.example";
    let mut value = vec![12, oidc_issuer.len() as u8];
    value.extend_from_slice(oidc_issuer.as_bytes());
    leaf.custom_extensions = vec![CustomExtension::from_oid_content(
        &[1, 3, 6, 1, 4, 1, 57264, 1, 8],
        value,
    )];
    if let Some([(y0, m0, d0), (y1, m1, d1)]) = validity {
        leaf.not_before = rcgen::date_time_ymd(y0, m0, d0);
        leaf.not_after = rcgen::date_time_ymd(y1, m1, d1);
    }
    let key = KeyPair::generate().unwrap();
    let leaf = leaf.signed_by(&key, issuer).unwrap();
    (
        leaf,
        SigningKey::from_pkcs8_der(&key.serialize_der()).unwrap(),
    )
}

/// cosign v3's in-toto statement naming [`DIGEST`], and `signer`'s DER signature over its
/// DSSE pre-authentication encoding.
fn signed_statement(signer: &SigningKey) -> (Vec<u8>, Vec<u8>) {
    let statement = serde_json::json!({"_type": "https://in-toto.io/Statement/v1",
        "subject": [{"digest": {"sha256": &DIGEST[7..]}}],
        "predicateType": "https://sigstore.dev/cosign/sign/v1", "predicate": {}});
    let payload = statement.to_string().into_bytes();
    let pae = crate::verify::bundle::pae("application/vnd.in-toto+json", &payload);
    let signature: Signature = signer.sign(&pae);
    (payload, signature.to_der().as_bytes().to_vec())
}

/// The identity both keyless tests trust.
fn trusted_identity() -> [(String, String); 1] {
    [(
        "^https://issuer\\.example$".to_string(),
        "^dev@example\\.com$".to_string(),
    )]
}

#[test]
fn a_promise_and_a_body_that_record_the_signature_verify() {
    let log = Log::new(9);
    let keys = LogKeys::from_root(
        serde_json::json!({"tlogs": [log.root_entry()]})
            .to_string()
            .as_bytes(),
    )
    .unwrap();
    let cert = "-----BEGIN CERTIFICATE-----\nAAEC\n-----END CERTIFICATE-----\n";
    let (payload, signature, leaf) = (b"payload".to_vec(), vec![1, 2, 3], vec![0, 1, 2]);
    let signing = Signing {
        kind: "dsse",
        signed: &payload,
        payload: &payload,
        signatures: std::slice::from_ref(&signature),
        leaf: &leaf,
    };
    let body = dsse_body(&payload, &signature, cert);
    let entries = Entry::from_bundle(&[log.entry(&body, 1_700_000_000)]).unwrap();
    assert_eq!(
        keys.verify(&entries[0], &signing),
        Ok(Logged::At(1_700_000_000))
    );

    // A negative index is no entry of a log (the suite's bundle-negative-log-index_fail).
    let mut negative = log.entry(&body, 1_700_000_000);
    negative["logIndex"] = "-1".into();
    let err = Entry::from_bundle(&[negative]).err().unwrap();
    assert_eq!(err, "its log index is not a number of 0 or more");

    // Another log's promise, a body changed after the promise, another payload or signature.
    let other = Entry::from_bundle(&[Log::new(8).entry(&body, 1)]).unwrap();
    assert!(keys
        .verify(&other[0], &signing)
        .unwrap_err()
        .contains("not one of the trusted root's"));
    let mut changed = entries[0].clone();
    changed.body_text = enc(dsse_body(b"other", &signature, cert).to_string().as_bytes());
    changed.body = b64(&changed.body_text).unwrap();
    assert!(keys
        .verify(&changed, &signing)
        .unwrap_err()
        .contains("does not verify with the log's key"));
    let for_other =
        Entry::from_bundle(&[log.entry(&dsse_body(b"other", &signature, cert), 1_700_000_000)])
            .unwrap();
    assert!(keys
        .verify(&for_other[0], &signing)
        .unwrap_err()
        .contains("records another payload"));
    let resigned =
        Entry::from_bundle(&[log.entry(&dsse_body(&payload, &[9], cert), 1_700_000_000)]).unwrap();
    assert!(keys
        .verify(&resigned[0], &signing)
        .unwrap_err()
        .contains("another signature or certificate"));
    // A hashedrekord recording the same hash, signature and certificate does not log an
    // envelope (sigstore-go reads an envelope's entry as dsse only).
    let mut rekord = dsse_body(&payload, &signature, cert);
    rekord["kind"] = serde_json::json!("hashedrekord");
    rekord["spec"] = serde_json::json!({
        "data": {"hash": {"algorithm": "sha256", "value": format!("{:x}", Sha256::digest(&payload))}},
        "signature": {"content": enc(&signature), "publicKey": {"content": enc(cert.as_bytes())}}});
    let rekord = Entry::from_bundle(&[log.entry(&rekord, 1_700_000_000)]).unwrap();
    let err = keys.verify(&rekord[0], &signing).unwrap_err();
    assert_eq!(
        err,
        "its body is of kind Some(\"hashedrekord\"); this signature is logged as dsse or intoto"
    );
}

#[test]
fn the_legacy_annotation_reads_as_an_entry() {
    let text = serde_json::json!({"SignedEntryTimestamp": "AAAA", "Payload": {
        "body": "e30=", "integratedTime": 5, "logIndex": 6, "logID": "0a0b"}});
    let entry = Entry::from_annotation(&text.to_string()).unwrap();
    assert_eq!(
        (entry.integrated_time, entry.log_index, entry.log_id.clone()),
        (Some(5), 6, vec![10, 11])
    );
    assert!(Entry::from_annotation("{}").is_err());
}

/// An entry without an integrated time is Rekor v2's only when its body is (a `hashedrekord`
/// 0.0.2, src/verify/tlog/v2/tests.rs); a Rekor v1 body without one has no time to be judged at.
#[test]
fn a_rekor_v1_body_needs_its_integrated_time() {
    let log = Log::new(9);
    let (mut entry, made) = dsse_entry(&log);
    entry["integratedTime"] = serde_json::json!("0");
    entry["kindVersion"] = serde_json::json!({"kind": "dsse", "version": "0.0.2"});
    let entries = Entry::from_bundle(std::slice::from_ref(&entry)).unwrap();
    assert!(entries[0].untimed());
    let keys = LogKeys::from_root(log.trusted_root().as_bytes()).unwrap();
    assert_eq!(
        keys.verify(&entries[0], &made.signing()),
        Err("no integrated time".into())
    );
}

#[test]
fn logs_and_entries_are_bounded() {
    let exactly = serde_json::json!({"tlogs": vec![Log::new(9).root_entry(); MAX_LOGS]});
    assert_eq!(
        LogKeys::from_root(exactly.to_string().as_bytes())
            .unwrap()
            .0
            .len(),
        MAX_LOGS
    );
    let log = Log::new(9);
    let many = serde_json::json!({"tlogs": vec![log.root_entry(); MAX_LOGS + 1]});
    let err = LogKeys::from_root(many.to_string().as_bytes()).unwrap_err();
    assert!(err.contains("over 16 transparency logs"), "{err}");
    let entry = log.entry(&serde_json::json!({}), 1);
    let at = |index: usize| {
        let mut entry = entry.clone();
        entry["logIndex"] = index.to_string().into();
        entry
    };
    let read = Entry::from_bundle(&(0..MAX_ENTRIES).map(at).collect::<Vec<_>>()).unwrap();
    assert_eq!(
        read.len(),
        MAX_ENTRIES,
        "every entry up to the bound is read"
    );
    // One entry twice (one log, one index): refused, as sigstore-go refuses it.
    let err = Entry::from_bundle(&[at(3), at(4), at(3)]).unwrap_err();
    assert!(err.contains("two log entries of one log at index"), "{err}");
    // Past it, the bundle is refused: an entry left unread might be one that does not verify.
    let err = Entry::from_bundle(&(0..=MAX_ENTRIES).map(at).collect::<Vec<_>>()).unwrap_err();
    assert_eq!(
        err,
        "the bundle has over 32 log entries (sigstore-go's bound)"
    );
}

/// A leaf chains only through the certificates of one authority of the trusted root, as
/// sigstore-go builds chains: an intermediate the signature itself carries (here issued by the
/// trusted CA, but never listed in the root) lets nothing through.
#[test]
fn intermediates_the_signature_carries_are_not_used() {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, ExtendedKeyUsagePurpose, IsCa,
        KeyPair, KeyUsagePurpose,
    };
    let ca_params = |name: &str| {
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        ca.distinguished_name = rcgen::DistinguishedName::new();
        ca.distinguished_name.push(rcgen::DnType::CommonName, name);
        ca
    };
    let root_ca =
        CertifiedIssuer::self_signed(ca_params("root"), KeyPair::generate().unwrap()).unwrap();
    // Fulcio's intermediate names code signing too.
    let mut intermediate_params = ca_params("intermediate");
    intermediate_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
    let intermediate =
        CertifiedIssuer::signed_by(intermediate_params, KeyPair::generate().unwrap(), &root_ca)
            .unwrap();
    let (leaf, signer) = keyless_leaf(&intermediate, None);
    let (payload, signature) = signed_statement(&signer);
    let bundle = Signed::Bundle(
        // v0.2: the last version whose material may be a chain.
        serde_json::to_vec(&serde_json::json!({
            "mediaType": "application/vnd.dev.sigstore.bundle+json;version=0.2",
            "verificationMaterial": {"x509CertificateChain": {"certificates": [
                {"rawBytes": enc(leaf.der())}, {"rawBytes": enc(intermediate.der())}]}},
            "dsseEnvelope": {"payload": enc(&payload), "payloadType": "application/vnd.in-toto+json",
                             "signatures": [{"sig": enc(&signature)}]}}))
        .unwrap(),
    );
    let identity = trusted_identity();
    let image = ImageReference::parse("registry.example/team/app", false).unwrap();
    let trust = |chain: Vec<&[u8]>| {
        let certificates: Vec<serde_json::Value> = chain
            .into_iter()
            .map(|der| serde_json::json!({"rawBytes": enc(der)}))
            .collect();
        let root = serde_json::json!({"tlogs": [], "certificateAuthorities": [
            {"certChain": {"certificates": certificates}}]});
        let secret = BTreeMap::from([(TRUSTED_ROOT.to_string(), root.to_string().into_bytes())]);
        TrustedKeys::from_secret(&secret, &identity, false).unwrap()
    };
    let now = SystemTime::now();
    let only_the_root = trust(vec![root_ca.der()]);
    let err = only_the_root
        .verify(std::slice::from_ref(&bundle), &image, DIGEST, now)
        .unwrap_err();
    assert_eq!(err.checks(), [Check::Authenticity]);
    let err = err.to_string();
    assert!(err.contains("does not chain to the trusted root"), "{err}");
    let whole_chain = trust(vec![intermediate.der(), root_ca.der()]);
    assert_eq!(
        whole_chain.verify(&[bundle], &image, DIGEST, now),
        Ok("dev@example.com (https://issuer.example)".into())
    );
}

mod times;
