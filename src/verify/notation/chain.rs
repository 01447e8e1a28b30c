//! A notation signature's certificate chain as notation-core-go validates it
//! (`ValidateCodeSigningCertChain`, part of integrity at every level but `skip`): the chain the
//! envelope carries is whole, leaf first, each certificate issued (signature and name) by the
//! next, ending in a self-signed root, no other certificate self-signed; the leaf is no CA, has a
//! critical key usage of digital signature only, no extended key usage notation excludes
//! (server or client authentication, email, timestamping, OCSP) and a key notation signs with;
//! each CA has basic constraints with `ca` true, a path length that allows its place, and a
//! critical key usage with certificate signing. Validity dates are not part of it: the
//! authentic timestamp checks them ([`valid_at`]), and authenticity looks the chain's
//! certificates up in the trust store ([`authentic`]).

use super::super::refusal::{Check, Refused};
use std::time::SystemTime;
use x509_cert::der::asn1::ObjectIdentifier;
use x509_cert::der::Decode;
use x509_cert::ext::pkix::{BasicConstraints, ExtendedKeyUsage, KeyUsage, KeyUsages};
use x509_cert::Certificate;

/// The extended key usages a signing leaf must not have (server and client authentication,
/// email protection, timestamping, OCSP signing).
const EXCLUDED_EKUS: [&str; 5] = [
    "1.3.6.1.5.5.7.3.1",
    "1.3.6.1.5.5.7.3.2",
    "1.3.6.1.5.5.7.3.4",
    "1.3.6.1.5.5.7.3.8",
    "1.3.6.1.5.5.7.3.9",
];
const KEY_USAGE: &str = "2.5.29.15";
const BASIC_CONSTRAINTS: &str = "2.5.29.19";
const EXT_KEY_USAGE: &str = "2.5.29.37";

/// A certificate, read once.
pub(super) struct Cert {
    der: Vec<u8>,
    cert: Certificate,
}

impl Cert {
    fn subject(&self) -> String {
        self.cert.tbs_certificate.subject.to_string()
    }

    fn extension(&self, id: &str) -> Option<(bool, &[u8])> {
        self.cert
            .tbs_certificate
            .extensions
            .iter()
            .flatten()
            .find(|e| e.extn_id.to_string() == id)
            .map(|e| (e.critical, e.extn_value.as_bytes()))
    }

    /// The basic constraints, when the extension is there.
    fn basic_constraints(&self) -> Option<BasicConstraints> {
        let (_, value) = self.extension(BASIC_CONSTRAINTS)?;
        BasicConstraints::from_der(value).ok()
    }

    /// The key usage, which must be there and critical.
    fn key_usage(&self) -> Result<KeyUsage, String> {
        let subject = self.subject();
        match self.extension(KEY_USAGE) {
            None => Err(format!(
                "certificate '{subject}': its key usage extension must be present"
            )),
            Some((false, _)) => Err(format!(
                "certificate '{subject}': its key usage extension must be critical"
            )),
            Some((true, value)) => KeyUsage::from_der(value).map_err(|e| {
                format!("certificate '{subject}': its key usage does not parse ({e})")
            }),
        }
    }

    /// Whether `issuer` issued this: its name, and its key's signature over this one's TBS.
    /// (Go's CheckSignatureFrom also wants the issuer to be a CA that may sign certificates;
    /// every issuer here is checked for that by `check_ca`, so no verdict depends on it.)
    fn issued_by(&self, issuer: &Cert) -> bool {
        let named = self.cert.tbs_certificate.issuer == issuer.cert.tbs_certificate.subject;
        named && issuer.signed(self)
    }

    /// Whether this certificate's key made `child`'s signature, by every algorithm Go's x509
    /// verifies (RSA PKCS #1 v1.5 and PSS, ECDSA with SHA-256, -384 or -512 on P-256, P-384 or
    /// P-521, Ed25519), as notation-go checks a chain.
    fn signed(&self, child: &Cert) -> bool {
        crate::verify::path::signed(&child.der, &self.der)
    }
}

const P256: &str = "1.2.840.10045.3.1.7";
const P384: &str = "1.3.132.0.34";
const P521: &str = "1.3.132.0.35";
const EC: &str = "1.2.840.10045.2.1";
const RSA: &str = "1.2.840.113549.1.1.1";

/// An EC key's named curve.
fn curve(cert: &Cert) -> Option<String> {
    let spki = &cert.cert.tbs_certificate.subject_public_key_info;
    if spki.algorithm.oid.to_string() != EC {
        return None;
    }
    let parameters = spki.algorithm.parameters.as_ref()?;
    parameters
        .decode_as::<ObjectIdentifier>()
        .ok()
        .map(|o| o.to_string())
}

/// The JWS algorithm notation signs with for the leaf's key (notation-core-go's key specs):
/// ECDSA P-256/384/521 as ES256/384/512, RSA 2048/3072/4096 as PS256/384/512.
fn signing_algorithm(leaf: &Cert) -> Result<&'static str, String> {
    let spki = &leaf.cert.tbs_certificate.subject_public_key_info;
    let unsupported = || {
        format!(
            "certificate '{}': its key is not one notation signs with",
            leaf.subject()
        )
    };
    match spki.algorithm.oid.to_string().as_str() {
        EC => match curve(leaf).as_deref() {
            Some(P256) => Ok("ES256"),
            Some(P384) => Ok("ES384"),
            Some(P521) => Ok("ES512"),
            _ => Err(unsupported()),
        },
        RSA => match rsa_modulus_bytes(spki.subject_public_key.raw_bytes()) {
            Some(256) => Ok("PS256"),
            Some(384) => Ok("PS384"),
            Some(512) => Ok("PS512"),
            _ => Err(unsupported()),
        },
        _ => Err(unsupported()),
    }
}

/// The modulus length of an RSAPublicKey (`SEQUENCE { INTEGER n, INTEGER e }`), in bytes.
fn rsa_modulus_bytes(der: &[u8]) -> Option<usize> {
    let header = |at: usize| -> Option<(usize, usize)> {
        let first = *der.get(at + 1)?;
        if first < 0x80 {
            return Some((2, usize::from(first)));
        }
        let n = usize::from(first & 0x7f);
        let len = der
            .get(at + 2..at + 2 + n)?
            .iter()
            .fold(0usize, |l, b| (l << 8) | usize::from(*b));
        Some((2 + n, len))
    };
    let (sequence, _) = header(0)?;
    let (integer, len) = header(sequence)?;
    let start = sequence + integer;
    let modulus = der.get(start..start + len)?;
    Some(modulus.iter().skip_while(|b| **b == 0).count())
}

/// Reads the envelope's chain (DER, leaf first).
pub(super) fn read(chain: &[Vec<u8>]) -> Result<Vec<Cert>, Refused> {
    chain
        .iter()
        .map(|der| {
            let cert = Certificate::from_der(der).map_err(|e| {
                let reason = format!("a notation signature's certificate is not X.509 DER ({e})");
                Check::Format.refused(reason)
            })?;
            let der = der.clone();
            Ok(Cert { der, cert })
        })
        .collect()
}

/// notation-core-go's code-signing chain rules, and the algorithm the envelope names matches
/// the leaf's key.
pub(super) fn check(chain: &[Cert], alg: &str) -> Result<(), String> {
    let leaf = chain
        .first()
        .ok_or("a notation signature carries no certificate")?;
    let invalid = |why: String| format!("the certificate chain is invalid: {why}");
    if chain.len() == 1 {
        if !leaf.issued_by_self_as_leaf() {
            return Err(invalid(format!(
                "'{}' is alone and not self-signed",
                leaf.subject()
            )));
        }
    } else {
        for (i, cert) in chain.iter().enumerate() {
            let self_signed = cert.issued_by(cert);
            match chain.get(i + 1) {
                None if !self_signed => {
                    return Err(invalid(format!(
                        "it must end with a self-signed root, and '{}' is not one",
                        cert.subject()
                    )))
                }
                Some(_) if self_signed => {
                    return Err(invalid(format!(
                        "'{}' is self-signed before the root",
                        cert.subject()
                    )))
                }
                Some(parent) if !cert.issued_by(parent) => {
                    return Err(invalid(format!(
                        "'{}' is not issued by '{}'",
                        cert.subject(),
                        parent.subject()
                    )))
                }
                _ => {}
            }
            if i > 0 {
                check_ca(cert, i - 1).map_err(invalid)?;
            }
        }
    }
    check_leaf(leaf).map_err(invalid)?;
    let wanted = signing_algorithm(leaf)?;
    if wanted != alg {
        return Err(format!(
            "the envelope names the algorithm {alg}, and its certificate's key signs with {wanted}"
        ));
    }
    Ok(())
}

impl Cert {
    /// A lone leaf must sign itself (Go's signature check, without the CA rule).
    fn issued_by_self_as_leaf(&self) -> bool {
        self.cert.tbs_certificate.issuer == self.cert.tbs_certificate.subject && self.signed(self)
    }
}

fn check_leaf(leaf: &Cert) -> Result<(), String> {
    let subject = leaf.subject();
    if leaf.basic_constraints().is_some_and(|b| b.ca) {
        return Err(format!("the signing certificate '{subject}' is a CA"));
    }
    let usage = leaf.key_usage()?.0;
    if !usage.contains(KeyUsages::DigitalSignature) {
        return Err(format!(
            "the signing certificate '{subject}' lacks the digital signature key usage"
        ));
    }
    let others = [
        KeyUsages::KeyEncipherment,
        KeyUsages::DataEncipherment,
        KeyUsages::KeyAgreement,
        KeyUsages::KeyCertSign,
        KeyUsages::CRLSign,
        KeyUsages::EncipherOnly,
        KeyUsages::DecipherOnly,
    ];
    if others.into_iter().any(|other| usage.contains(other)) {
        return Err(format!(
            "the signing certificate '{subject}' has key usages beyond digital signature"
        ));
    }
    if let Some((_, value)) = leaf.extension(EXT_KEY_USAGE) {
        let ekus = ExtendedKeyUsage::from_der(value)
            .map_err(|e| format!("'{subject}': its extended key usage does not parse ({e})"))?;
        if let Some(excluded) = ekus
            .0
            .iter()
            .find(|o| EXCLUDED_EKUS.contains(&o.to_string().as_str()))
        {
            return Err(format!("the signing certificate '{subject}' has the extended key usage {excluded}, which notation excludes"));
        }
    }
    Ok(())
}

fn check_ca(cert: &Cert, below: usize) -> Result<(), String> {
    let subject = cert.subject();
    let constraints = cert.basic_constraints().filter(|b| b.ca).ok_or_else(|| {
        format!("'{subject}' issues a certificate and its basic constraints do not make it a CA")
    })?;
    if constraints
        .path_len_constraint
        .is_some_and(|n| usize::from(n) < below)
    {
        return Err(format!(
            "'{subject}''s path length does not allow {below} CAs below it"
        ));
    }
    if !cert.key_usage()?.0.contains(KeyUsages::KeyCertSign) {
        return Err(format!("'{subject}''s key usage lacks certificate signing"));
    }
    Ok(())
}

/// Authenticity: a certificate of the chain is one of the trust store's (byte for byte), as
/// notation-core-go's `VerifyAuthenticity` looks it up.
pub(super) fn authentic(chain: &[Cert], store: &[Vec<u8>]) -> bool {
    chain.iter().any(|c| store.contains(&c.der))
}

/// The authentic timestamp without a timestamp authority: every certificate of the chain is
/// valid at `now`; else which is not.
pub(super) fn valid_at(chain: &[Cert], now: SystemTime) -> Result<(), Refused> {
    for cert in chain {
        let validity = &cert.cert.tbs_certificate.validity;
        if now < validity.not_before.to_system_time() {
            return Err(Check::Time.refused(format!(
                "the certificate '{}' is not valid yet",
                cert.subject()
            )));
        }
        if now > validity.not_after.to_system_time() {
            return Err(Check::Time.refused(format!(
                "the certificate '{}' expired at {}",
                cert.subject(),
                httpdate::fmt_http_date(validity.not_after.to_system_time())
            )));
        }
    }
    Ok(())
}

/// When the chain stops being valid: its earliest end.
pub(super) fn not_after(chain: &[Cert]) -> Option<SystemTime> {
    chain
        .iter()
        .map(|c| c.cert.tbs_certificate.validity.not_after.to_system_time())
        .min()
}

#[cfg(test)]
mod tests;
