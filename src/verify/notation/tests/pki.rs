//! A PKI and a JWS as notation signs them, each property a knob.

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SigningKey,
};

pub struct Ca(pub CertifiedIssuer<'static, KeyPair>);

impl Ca {
    pub fn root() -> Ca {
        Ca(CertifiedIssuer::self_signed(ca("root"), KeyPair::generate().unwrap()).unwrap())
    }

    pub fn below(&self, eku: Option<ExtendedKeyUsagePurpose>) -> Ca {
        let mut params = ca("intermediate");
        params.extended_key_usages = eku.into_iter().collect();
        let key = KeyPair::generate().unwrap();
        Ca(CertifiedIssuer::signed_by(params, key, &self.0).unwrap())
    }

    pub fn der(&self) -> Vec<u8> {
        self.0.der().to_vec()
    }
}

fn ca(name: &str) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    params
}

/// A leaf's knobs.
pub struct Leaf {
    pub usages: Vec<KeyUsagePurpose>,
    pub eku: Vec<ExtendedKeyUsagePurpose>,
    pub ca: bool,
    pub expired: bool,
}

impl Default for Leaf {
    fn default() -> Leaf {
        Leaf {
            usages: vec![KeyUsagePurpose::DigitalSignature],
            eku: vec![ExtendedKeyUsagePurpose::CodeSigning],
            ca: false,
            expired: false,
        }
    }
}

/// What the envelope says.
pub struct Jws<'a> {
    pub leaf: Leaf,
    pub issuer: &'a Ca,
    /// The certificates after the leaf in `x5c`.
    pub chain: Vec<&'a Ca>,
    pub alg: &'a str,
    pub signing_time: Option<&'a str>,
    pub expiry: Option<&'a str>,
    pub target: serde_json::Value,
}

pub fn target() -> serde_json::Value {
    serde_json::json!({"mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": super::DIGEST, "size": 7})
}

impl<'a> Jws<'a> {
    pub fn new(issuer: &'a Ca) -> Jws<'a> {
        Jws {
            leaf: Leaf::default(),
            issuer,
            chain: vec![issuer],
            alg: "ES256",
            signing_time: Some("2025-01-01T00:00:00Z"),
            expiry: None,
            target: target(),
        }
    }

    pub fn bytes(&self) -> Vec<u8> {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        for (kind, value) in [
            (DnType::CountryName, "US"),
            (DnType::StateOrProvinceName, "WA"),
            (DnType::OrganizationName, "Example"),
        ] {
            params.distinguished_name.push(kind, value);
        }
        params.key_usages = self.leaf.usages.clone();
        params.extended_key_usages = self.leaf.eku.clone();
        if self.leaf.ca {
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        if self.leaf.expired {
            params.not_before = rcgen::date_time_ymd(2021, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 2);
        }
        let key = KeyPair::generate().unwrap();
        let leaf = params.signed_by(&key, &self.issuer.0).unwrap();
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut protected = serde_json::json!({"alg": self.alg,
            "cty": "application/vnd.cncf.notary.payload.v1+json",
            "crit": ["io.cncf.notary.signingScheme"],
            "io.cncf.notary.signingScheme": "notary.x509"});
        if let Some(t) = self.signing_time {
            protected["io.cncf.notary.signingTime"] = serde_json::json!(t);
        }
        if let Some(t) = self.expiry {
            protected["io.cncf.notary.expiry"] = serde_json::json!(t);
            protected["crit"] =
                serde_json::json!(["io.cncf.notary.signingScheme", "io.cncf.notary.expiry"]);
        }
        let payload = serde_json::json!({"targetArtifact": self.target}).to_string();
        let signed = format!(
            "{}.{}",
            url.encode(protected.to_string()),
            url.encode(&payload)
        );
        let der = key.sign(signed.as_bytes()).unwrap();
        let fixed = p256::ecdsa::Signature::from_der(&der)
            .unwrap()
            .to_bytes()
            .to_vec();
        let std = base64::engine::general_purpose::STANDARD;
        let mut x5c = vec![std.encode(leaf.der())];
        x5c.extend(self.chain.iter().map(|c| std.encode(c.der())));
        serde_json::json!({"payload": url.encode(&payload),
            "protected": url.encode(protected.to_string()),
            "header": {"x5c": x5c}, "signature": url.encode(&fixed)})
        .to_string()
        .into_bytes()
    }
}
