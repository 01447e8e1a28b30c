//! Certificates for the corpus, made with rcgen: roots and intermediates, and leaves whose every
//! property a verifier reads (key type, extended key usage, key usage, SANs, Fulcio's issuer
//! extension, subject, validity) is a knob; signatures as the two formats want them.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, CustomExtension, DistinguishedName,
    DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, SanType, SigningKey,
};
use std::time::{Duration, SystemTime};

/// Fulcio's v2 OIDC issuer extension.
const ISSUER_V2: &[u64] = &[1, 3, 6, 1, 4, 1, 57264, 1, 8];
/// RFC 6962's embedded SCT list.
const SCT_LIST: &[u64] = &[1, 3, 6, 1, 4, 1, 11129, 2, 4, 2];

/// The key types a leaf or a signing key may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alg {
    P256,
    P384,
}

impl Alg {
    fn rcgen(self) -> &'static rcgen::SignatureAlgorithm {
        match self {
            Alg::P256 => &rcgen::PKCS_ECDSA_P256_SHA256,
            Alg::P384 => &rcgen::PKCS_ECDSA_P384_SHA384,
        }
    }

    /// The width of one of the two integers of a signature, for JWS.
    fn half(self) -> usize {
        match self {
            Alg::P256 => 32,
            Alg::P384 => 48,
        }
    }

    /// The JWS `alg`.
    pub fn jws(self) -> &'static str {
        match self {
            Alg::P256 => "ES256",
            Alg::P384 => "ES384",
        }
    }
}

/// Seconds from now, as a certificate date.
pub fn at(offset_seconds: i64) -> SystemTime {
    let now = SystemTime::now();
    match offset_seconds >= 0 {
        true => now + Duration::from_secs(offset_seconds as u64),
        false => now - Duration::from_secs(offset_seconds.unsigned_abs()),
    }
}

/// RFC 3339, as trusted roots and notation's headers write times.
pub fn rfc3339(t: SystemTime) -> String {
    let date = rcgen::date_time_ymd(1970, 1, 1) + t.duration_since(SystemTime::UNIX_EPOCH).unwrap();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        date.year(),
        u8::from(date.month()),
        date.day(),
        date.hour(),
        date.minute(),
        date.second()
    )
}

/// A certificate authority: its certificate and key.
pub struct Ca {
    pub issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    pub fn der(&self) -> Vec<u8> {
        self.issuer.der().to_vec()
    }

    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A self-signed root.
    pub fn root(name: &str) -> Ca {
        Ca {
            issuer: CertifiedIssuer::self_signed(
                ca_params(name, None),
                KeyPair::generate().unwrap(),
            )
            .unwrap(),
        }
    }

    /// An intermediate `parent` issues, with `eku` when given.
    pub fn intermediate(name: &str, parent: &Ca, eku: Option<ExtendedKeyUsagePurpose>) -> Ca {
        let params = ca_params(name, eku);
        let key = KeyPair::generate().unwrap();
        Ca {
            issuer: CertifiedIssuer::signed_by(params, key, &parent.issuer).unwrap(),
        }
    }
}

fn ca_params(name: &str, eku: Option<ExtendedKeyUsagePurpose>) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::OrganizationName, "corpus");
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.extended_key_usages = eku.into_iter().collect();
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2040, 1, 1);
    params
}

/// What a leaf is made of.
#[derive(Clone)]
pub struct LeafSpec {
    pub alg: Alg,
    pub sans: Vec<SanType>,
    /// Fulcio's OIDC issuer extension.
    pub oidc_issuer: Option<String>,
    pub eku: Vec<ExtendedKeyUsagePurpose>,
    pub digital_signature: bool,
    /// Subject attributes, in order.
    pub subject: Vec<(DnType, String)>,
    /// Valid from, until (seconds from now).
    pub validity: (i64, i64),
}

impl LeafSpec {
    /// A leaf in Fulcio's shape for `email`, issued by `issuer`, valid around now.
    pub fn fulcio(email: &str, issuer: &str) -> LeafSpec {
        LeafSpec {
            alg: Alg::P256,
            sans: vec![SanType::Rfc822Name(email.try_into().unwrap())],
            oidc_issuer: Some(issuer.to_string()),
            eku: vec![ExtendedKeyUsagePurpose::CodeSigning],
            digital_signature: true,
            subject: Vec::new(),
            validity: (-3600, 86_400),
        }
    }

    /// A notation signing leaf whose subject is `subject`.
    pub fn notation(subject: &[(DnType, &str)]) -> LeafSpec {
        LeafSpec {
            alg: Alg::P256,
            sans: Vec::new(),
            oidc_issuer: None,
            eku: vec![ExtendedKeyUsagePurpose::CodeSigning],
            digital_signature: true,
            subject: subject
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect(),
            validity: (-3600, 86_400),
        }
    }
}

/// A leaf certificate and its key.
pub struct Leaf {
    pub key: KeyPair,
    pub alg: Alg,
    pub der: Vec<u8>,
    pub pem: String,
}

impl Leaf {
    pub fn new(spec: &LeafSpec, ca: &Ca) -> Leaf {
        let key = KeyPair::generate_for(spec.alg.rcgen()).unwrap();
        Leaf::issued(spec.alg, &Leaf::params(spec), key, ca)
    }

    /// The leaf `params` describe, for `key`, as `ca` issues it.
    fn issued(alg: Alg, params: &CertificateParams, key: KeyPair, ca: &Ca) -> Leaf {
        let cert = params.signed_by(&key, &ca.issuer).unwrap();
        Leaf {
            key,
            alg,
            der: cert.der().to_vec(),
            pem: cert.pem(),
        }
    }

    /// A leaf with an SCT of the CT log `log` embedded, as a CT log and Fulcio make one: the
    /// log signs the precertificate entry (the issuer's key hash, the TBSCertificate without
    /// the list), then the CA issues the same certificate with the list. `other_certificate`:
    /// the SCT is of a precertificate of another serial number.
    pub fn with_sct(spec: &LeafSpec, ca: &Ca, log: &KeyPair, other_certificate: bool) -> Leaf {
        use rcgen::PublicKeyData;
        use sha2::{Digest, Sha256};
        use x509_cert::der::{Decode, Encode};
        let mut params = Leaf::params(spec);
        let key = KeyPair::generate_for(spec.alg.rcgen()).unwrap();
        let serial = |n: u8| Some(rcgen::SerialNumber::from(vec![1, n]));
        params.serial_number = serial(if other_certificate { 2 } else { 1 });
        let pre = params.signed_by(&key, &ca.issuer).unwrap();
        let tbs = x509_cert::Certificate::from_der(pre.der())
            .unwrap()
            .tbs_certificate
            .to_der()
            .unwrap();
        let issuer = x509_cert::Certificate::from_der(ca.issuer.der()).unwrap();
        let issuer_spki = issuer
            .tbs_certificate
            .subject_public_key_info
            .to_der()
            .unwrap();
        let time = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let mut signed = vec![0, 0];
        signed.extend_from_slice(&time.to_be_bytes());
        signed.extend_from_slice(&[0, 1]);
        signed.extend_from_slice(&Sha256::digest(&issuer_spki));
        signed.extend_from_slice(&(tbs.len() as u32).to_be_bytes()[1..]);
        signed.extend_from_slice(&tbs);
        signed.extend_from_slice(&[0, 0]);
        let signature = log.sign(&signed).unwrap();
        let mut sct = vec![0];
        sct.extend_from_slice(&Sha256::digest(log.subject_public_key_info()));
        sct.extend_from_slice(&time.to_be_bytes());
        sct.extend_from_slice(&[0, 0, 4, 3]);
        sct.extend_from_slice(&(signature.len() as u16).to_be_bytes());
        sct.extend_from_slice(&signature);
        let mut list = ((sct.len() + 2) as u16).to_be_bytes().to_vec();
        list.extend_from_slice(&(sct.len() as u16).to_be_bytes());
        list.extend_from_slice(&sct);
        let value = x509_cert::der::asn1::OctetString::new(list)
            .unwrap()
            .to_der()
            .unwrap();
        params.serial_number = serial(1);
        params
            .custom_extensions
            .push(CustomExtension::from_oid_content(SCT_LIST, value));
        Leaf::issued(spec.alg, &params, key, ca)
    }

    fn params(spec: &LeafSpec) -> CertificateParams {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = DistinguishedName::new();
        for (kind, value) in &spec.subject {
            params.distinguished_name.push(kind.clone(), value.as_str());
        }
        params.subject_alt_names = spec.sans.clone();
        params.extended_key_usages = spec.eku.clone();
        if spec.digital_signature {
            params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        }
        if let Some(issuer) = &spec.oidc_issuer {
            // A DER UTF8String: tag 12, then the length (short form).
            let mut value = vec![12, issuer.len() as u8];
            value.extend_from_slice(issuer.as_bytes());
            params.custom_extensions = vec![CustomExtension::from_oid_content(ISSUER_V2, value)];
        }
        let epoch = rcgen::date_time_ymd(1970, 1, 1);
        let since = |s: i64| at(s).duration_since(SystemTime::UNIX_EPOCH).unwrap();
        params.not_before = epoch + since(spec.validity.0);
        params.not_after = epoch + since(spec.validity.1);
        params
    }

    /// An ASN.1 DER ECDSA signature over `message` (cosign's).
    pub fn sign_der(&self, message: &[u8]) -> Vec<u8> {
        self.key.sign(message).unwrap()
    }

    /// A fixed-width `r || s` signature over `message` (JWS's).
    pub fn sign_fixed(&self, message: &[u8]) -> Vec<u8> {
        der_to_fixed(&self.sign_der(message), self.alg.half())
    }
}

/// A signing key with no certificate (cosign's `cosign.pub` kind).
pub fn key_pair(alg: Alg) -> KeyPair {
    KeyPair::generate_for(alg.rcgen()).unwrap()
}

/// `SEQUENCE { INTEGER r, INTEGER s }` as `r || s`, each `half` bytes.
fn der_to_fixed(der: &[u8], half: usize) -> Vec<u8> {
    let mut at = 2 + usize::from(der[1] & 0x80 != 0);
    let mut out = Vec::with_capacity(half * 2);
    for _ in 0..2 {
        assert_eq!(der[at], 2, "an INTEGER");
        let len = usize::from(der[at + 1]);
        let int = &der[at + 2..at + 2 + len];
        let int = &int[int.len().saturating_sub(half)..];
        out.extend(std::iter::repeat_n(0, half - int.len()));
        out.extend_from_slice(int);
        at += 2 + len;
    }
    out
}
