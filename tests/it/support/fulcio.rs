//! A certificate authority made in the test that issues signing certificates in Fulcio's shape
//! (an email SAN, code signing, the OIDC issuer in Fulcio's extension), offline, and the
//! Sigstore `trusted_root.json` that trusts it: what keyless signatures are checked against.

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, CustomExtension, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, SanType,
};

/// Fulcio's v2 OIDC issuer extension.
const ISSUER_V2: &[u64] = &[1, 3, 6, 1, 4, 1, 57264, 1, 8];

pub struct Fulcio {
    ca: CertifiedIssuer<'static, KeyPair>,
}

/// A signing certificate and its key (PKCS#8 PEM, which `cosign import-key-pair` takes).
pub struct Signer {
    pub key_pem: String,
    pub cert_pem: String,
}

impl Fulcio {
    pub fn new(name: &str) -> Fulcio {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Fulcio { ca }
    }

    /// The CA's certificate (PEM), for `--certificate-chain`.
    pub fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    /// A Sigstore trusted root whose one certificate authority is this CA.
    pub fn trusted_root(&self) -> String {
        let der = base64::engine::general_purpose::STANDARD.encode(self.ca.der());
        serde_json::json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [],
            "certificateAuthorities": [{
                "subject": {"organization": "test", "commonName": "test"},
                "uri": "https://fulcio.invalid",
                "certChain": {"certificates": [{"rawBytes": der}]},
                "validFor": {"start": "2020-01-01T00:00:00Z"}
            }],
            "ctlogs": [],
            "timestampAuthorities": []
        })
        .to_string()
    }

    /// A signing certificate for `email`, as `issuer` vouched for it; `expired` makes one whose
    /// validity ended in 2021.
    pub fn signer(&self, issuer: &str, email: &str, expired: bool) -> Signer {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = vec![SanType::Rfc822Name(email.try_into().unwrap())];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        // A DER UTF8String: tag 12, then the length (short form).
        let mut value = vec![12, issuer.len() as u8];
        value.extend_from_slice(issuer.as_bytes());
        params.custom_extensions = vec![CustomExtension::from_oid_content(ISSUER_V2, value)];
        if expired {
            params.not_before = rcgen::date_time_ymd(2021, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 2);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca).unwrap();
        Signer {
            key_pem: key.serialize_pem(),
            cert_pem: cert.pem(),
        }
    }
}
