//! Notation's two envelopes, read into one shape: what was signed, the payload, the signature,
//! its algorithm, the certificate chain (leaf first) and the expiry.
//! - JWS (`application/jose+json`), JSON serialization: the signature covers
//!   `base64url(protected) . base64url(payload)`; the chain is the unprotected `x5c`.
//! - COSE (`application/cose`), a COSE_Sign1 (RFC 9052): the signature covers the CBOR
//!   `Sig_structure` `["Signature1", protected, h'', payload]`; the chain is `x5chain` (33).
//!
//! Both must declare notation's payload type and the `notary.x509` signing scheme, and mark
//! no critical header this reader does not know.

use super::super::keyless::MAX_CHAIN;
use super::super::refusal::{Check, Refused};
use base64::Engine;
use ciborium::Value;
use ring::signature::{self, UnparsedPublicKey, VerificationAlgorithm};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};
use x509_cert::der::Decode;

/// A notation envelope with a chain of a few certificates is a few KiB.
pub const MAX_ENVELOPE_BYTES: usize = 256 << 10;

const JWS: &str = "application/jose+json";
const COSE: &str = "application/cose";
const PAYLOAD_TYPE: &str = "application/vnd.cncf.notary.payload.v1+json";
const SIGNING_SCHEME: &str = "io.cncf.notary.signingScheme";
const EXPIRY: &str = "io.cncf.notary.expiry";
const SIGNING_TIME: &str = "io.cncf.notary.signingTime";
const KNOWN_CRITICAL: [&str; 2] = [SIGNING_SCHEME, EXPIRY];

/// An envelope, read.
pub struct Envelope {
    /// The bytes the signature covers.
    signed: Vec<u8>,
    pub payload: Vec<u8>,
    signature: Vec<u8>,
    /// JOSE's name for the algorithm (`PS256`, `ES256`, ...).
    alg: String,
    pub chain: Vec<Vec<u8>>,
    pub expiry: Option<SystemTime>,
    pub signing_time: Option<SystemTime>,
}

impl Envelope {
    pub fn parse(media_type: &str, bytes: &[u8]) -> Result<Envelope, String> {
        if bytes.len() > MAX_ENVELOPE_BYTES {
            return Err(format!(
                "a notation signature is over {MAX_ENVELOPE_BYTES} bytes"
            ));
        }
        match media_type {
            JWS => parse_jws(bytes),
            COSE => parse_cose(bytes),
            other => Err(format!(
                "a notation signature in '{other}', neither JWS nor COSE"
            )),
        }
    }

    /// JOSE's name for the algorithm the envelope says it was signed with.
    pub fn alg(&self) -> &str {
        &self.alg
    }

    /// notation-core-go's rule for the signed attributes' times: a signing time, and an expiry
    /// (if any) after it.
    pub fn check_times(&self) -> Result<(), Refused> {
        let signed = self.signing_time.ok_or_else(|| {
            let reason = "a notation signature has no signing time (io.cncf.notary.signingTime)";
            Check::Time.refused(reason)
        })?;
        match self.expiry {
            Some(expiry) if expiry <= signed => {
                Err(Check::Time.refused("a notation signature expires before it was signed"))
            }
            _ => Ok(()),
        }
    }

    /// The signature verifies with the leaf certificate's key, by the header's algorithm.
    pub fn check_signature(&self, leaf: &[u8]) -> Result<(), String> {
        let algorithm: Option<&dyn VerificationAlgorithm> = match self.alg.as_str() {
            "PS256" => Some(&signature::RSA_PSS_2048_8192_SHA256),
            "PS384" => Some(&signature::RSA_PSS_2048_8192_SHA384),
            "PS512" => Some(&signature::RSA_PSS_2048_8192_SHA512),
            "ES256" => Some(&signature::ECDSA_P256_SHA256_FIXED),
            "ES384" => Some(&signature::ECDSA_P384_SHA384_FIXED),
            // notation signs with P-521 too, which ring cannot verify: RustCrypto's p521 does.
            "ES512" => None,
            other => {
                return Err(format!(
                    "the signature algorithm '{other}' is not one notation signs with"
                ))
            }
        };
        let cert = x509_cert::Certificate::from_der(leaf)
            .map_err(|e| format!("a notation signature's certificate is not X.509 DER ({e})"))?;
        let key = cert
            .tbs_certificate
            .subject_public_key_info
            .subject_public_key
            .raw_bytes();
        let verified = match algorithm {
            Some(algorithm) => UnparsedPublicKey::new(algorithm, key)
                .verify(&self.signed, &self.signature)
                .is_ok(),
            None => self.es512_verifies(key),
        };
        match verified {
            true => Ok(()),
            false => Err("signature does not verify with its certificate's key".into()),
        }
    }

    /// An ES512 signature (r and s, 66 bytes each) over SHA-512 by the P-521 `key`.
    fn es512_verifies(&self, key: &[u8]) -> bool {
        use sha2::Digest;
        let der = p521::ecdsa::Signature::from_slice(&self.signature)
            .map(|s| s.to_der().as_bytes().to_vec())
            .unwrap_or_default();
        let digest = sha2::Sha512::digest(&self.signed);
        crate::verify::prehashed::ecdsa_verifies(P521_CURVE, key, &digest, &der)
    }
}

/// secp521r1, the curve ES512 signs on.
const P521_CURVE: &str = "1.3.132.0.35";

/// Checks the headers both envelopes share.
fn check_headers(content_type: &str, scheme: &str, critical: &[String]) -> Result<(), String> {
    if content_type != PAYLOAD_TYPE {
        return Err(format!("a notation payload of type '{content_type}'"));
    }
    if scheme != "notary.x509" {
        return Err(format!(
            "the signing scheme '{scheme}' (only notary.x509 is read)"
        ));
    }
    match critical
        .iter()
        .find(|c| !KNOWN_CRITICAL.contains(&c.as_str()))
    {
        Some(unknown) => Err(format!(
            "a critical header '{unknown}' this reader does not know"
        )),
        None => Ok(()),
    }
}

fn bounded_chain(chain: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, String> {
    if chain.len() > MAX_CHAIN {
        return Err(format!(
            "a notation certificate chain is over {MAX_CHAIN} certificates"
        ));
    }
    Ok(chain)
}

fn parse_jws(bytes: &[u8]) -> Result<Envelope, String> {
    #[derive(Deserialize)]
    struct Jws {
        payload: String,
        protected: String,
        signature: String,
        #[serde(default)]
        header: Unprotected,
    }
    #[derive(Deserialize, Default)]
    struct Unprotected {
        #[serde(default)]
        x5c: Vec<String>,
    }
    let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let jws: Jws = serde_json::from_slice(bytes)
        .map_err(|e| format!("a notation signature is not a JWS envelope ({e})"))?;
    let decode = |what: &str, text: &str| {
        url.decode(text.trim_end_matches('='))
            .map_err(|_| format!("a JWS {what} is not base64url"))
    };
    let protected = decode("protected header", &jws.protected)?;
    let header: BTreeMap<String, serde_json::Value> = serde_json::from_slice(&protected)
        .map_err(|e| format!("a JWS protected header is not JSON ({e})"))?;
    let text = |key: &str| header.get(key).and_then(|v| v.as_str()).unwrap_or_default();
    let critical: Vec<String> = header
        .get("crit")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect();
    check_headers(text("cty"), text(SIGNING_SCHEME), &critical)?;
    let time = |key: &str| {
        header
            .get(key)
            .and_then(|v| v.as_str())
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .map(|t| SystemTime::UNIX_EPOCH + Duration::from_secs(t.as_second().max(0) as u64))
    };
    let (expiry, signing_time) = (time(EXPIRY), time(SIGNING_TIME));
    let chain = jws
        .header
        .x5c
        .iter()
        .take(MAX_CHAIN + 1)
        .map(|c| base64::engine::general_purpose::STANDARD.decode(c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| "a JWS x5c certificate is not base64")?;
    Ok(Envelope {
        signed: format!("{}.{}", jws.protected, jws.payload).into_bytes(),
        payload: decode("payload", &jws.payload)?,
        signature: decode("signature", &jws.signature)?,
        alg: text("alg").to_string(),
        chain: bounded_chain(chain)?,
        expiry,
        signing_time,
    })
}

fn parse_cose(bytes: &[u8]) -> Result<Envelope, String> {
    let not_cose = |why: &str| format!("a notation signature is not a COSE_Sign1 ({why})");
    let value: Value = ciborium::from_reader(bytes).map_err(|e| not_cose(&e.to_string()))?;
    // COSE_Sign1 is tag 18 over [protected, unprotected, payload, signature].
    let value = match value {
        Value::Tag(18, inner) => *inner,
        other => other,
    };
    let Value::Array(items) = value else {
        return Err(not_cose("not an array"));
    };
    let [Value::Bytes(protected), Value::Map(unprotected), Value::Bytes(payload), Value::Bytes(signature)] =
        <[Value; 4]>::try_from(items).map_err(|_| not_cose("not four items"))?
    else {
        return Err(not_cose("items of the wrong types"));
    };
    let header: Value = ciborium::from_reader(protected.as_slice())
        .map_err(|e| not_cose(&format!("protected header: {e}")))?;
    let Value::Map(header) = header else {
        return Err(not_cose("the protected header is not a map"));
    };
    check_headers(
        &text(get(&header, &Value::Integer(3.into()))),
        &text(get(&header, &label(SIGNING_SCHEME))),
        &critical(&header),
    )?;
    let alg =
        cose_algorithm(&header).map_err(|why| why.unwrap_or_else(|| not_cose("no algorithm")))?;
    let (expiry, signing_time) = (time(&header, EXPIRY), time(&header, SIGNING_TIME));
    let chain = cose_chain(&unprotected);
    let mut signed = Vec::new();
    let structure = Value::Array(vec![
        Value::Text("Signature1".into()),
        Value::Bytes(protected),
        Value::Bytes(Vec::new()),
        Value::Bytes(payload.clone()),
    ]);
    ciborium::into_writer(&structure, &mut signed).map_err(|e| e.to_string())?;
    Ok(Envelope {
        signed,
        payload,
        signature,
        alg: alg.to_string(),
        chain: bounded_chain(chain)?,
        expiry,
        signing_time,
    })
}

/// A COSE map's value for `key`.
fn get(map: &[(Value, Value)], key: &Value) -> Option<Value> {
    map.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
}

fn text(v: Option<Value>) -> String {
    match v {
        Some(Value::Text(t)) => t,
        _ => String::new(),
    }
}

fn label(key: &str) -> Value {
    Value::Text(key.to_string())
}

/// The protected header's critical labels (`crit`, 2).
fn critical(header: &[(Value, Value)]) -> Vec<String> {
    match get(header, &Value::Integer(2.into())) {
        Some(Value::Array(labels)) => labels
            .into_iter()
            .map(|l| match l {
                Value::Text(t) => t,
                other => format!("{other:?}"),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The algorithm by its COSE number (RFC 9053, RFC 8230); `Err(None)`: none is named.
fn cose_algorithm(header: &[(Value, Value)]) -> Result<&'static str, Option<String>> {
    let Some(Value::Integer(n)) = get(header, &Value::Integer(1.into())) else {
        return Err(None);
    };
    match i128::from(n) {
        -37 => Ok("PS256"),
        -38 => Ok("PS384"),
        -39 => Ok("PS512"),
        -7 => Ok("ES256"),
        -35 => Ok("ES384"),
        -36 => Ok("ES512"),
        other => Err(Some(format!(
            "the COSE algorithm {other} is not one notation signs with"
        ))),
    }
}

/// A time header (`io.cncf.notary.expiry`, `...signingTime`): an epoch-tagged integer.
fn time(header: &[(Value, Value)], key: &str) -> Option<SystemTime> {
    match get(header, &label(key)) {
        Some(Value::Tag(1, when)) => match *when {
            Value::Integer(n) => u64::try_from(i128::from(n)).ok(),
            _ => None,
        },
        _ => None,
    }
    .map(|secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

/// The unprotected header's certificate chain (`x5chain`, 33): one certificate or a list, at
/// most one over the bound read (so that `bounded_chain` refuses it).
fn cose_chain(unprotected: &[(Value, Value)]) -> Vec<Vec<u8>> {
    match get(unprotected, &Value::Integer(33.into())) {
        Some(Value::Bytes(one)) => vec![one],
        Some(Value::Array(many)) => many
            .into_iter()
            .take(MAX_CHAIN + 1)
            .filter_map(|c| match c {
                Value::Bytes(b) => Some(b),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::hazmat::PrehashSigner;
    use sha2::Digest;
    use x509_cert::der::asn1::{Any, BitString, ObjectIdentifier};
    use x509_cert::der::Encode;

    /// An ES512 signature, as notation signs with a P-521 key, verifies with the leaf's key, and
    /// not over other bytes (the certificate around the key is rcgen's, its key replaced).
    #[test]
    fn an_es512_signature_verifies_with_a_p521_key() {
        let signer = p521::ecdsa::SigningKey::from_slice(&[1; 66]).unwrap();
        let point = p521::ecdsa::VerifyingKey::from(&signer).to_encoded_point(false);
        let key = KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        let mut cert =
            x509_cert::Certificate::from_der(params.self_signed(&key).unwrap().der()).unwrap();
        let curve = ObjectIdentifier::new(P521_CURVE).unwrap();
        cert.tbs_certificate
            .subject_public_key_info
            .algorithm
            .parameters = Some(Any::encode_from(&curve).unwrap());
        cert.tbs_certificate
            .subject_public_key_info
            .subject_public_key = BitString::from_bytes(point.as_bytes()).unwrap();
        let leaf = cert.to_der().unwrap();
        let signed = b"protected.payload".to_vec();
        let signature: p521::ecdsa::Signature =
            signer.sign_prehash(&sha2::Sha512::digest(&signed)).unwrap();
        let envelope = |signed: &[u8]| Envelope {
            signed: signed.to_vec(),
            payload: Vec::new(),
            signature: signature.to_bytes().to_vec(),
            alg: "ES512".into(),
            chain: Vec::new(),
            expiry: None,
            signing_time: None,
        };
        assert_eq!(envelope(&signed).check_signature(&leaf), Ok(()));
        let err = envelope(b"other").check_signature(&leaf).unwrap_err();
        assert_eq!(err, "signature does not verify with its certificate's key");
    }

    use rcgen::KeyPair;
}
