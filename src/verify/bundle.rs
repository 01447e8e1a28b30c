//! Sigstore bundles (v0.1 to v0.3), as cosign v3 attaches them to an image by default: a DSSE
//! envelope whose payload is an in-toto statement naming the image's digest, signed with a key
//! (the bundle names it by a hint) or a certificate (keyless). Only what verification needs is
//! read; the payload is parsed only after its signature verified.

use super::refusal::{Check, Refused};
use base64::Engine;
use serde::Deserialize;

/// What cosign writes (`application/vnd.dev.sigstore.bundle.v0.3+json`) and the older names.
pub const BUNDLE_MEDIA_TYPES: [&str; 4] = [
    "application/vnd.dev.sigstore.bundle.v0.3+json",
    "application/vnd.dev.sigstore.bundle+json;version=0.3",
    "application/vnd.dev.sigstore.bundle+json;version=0.2",
    "application/vnd.dev.sigstore.bundle+json;version=0.1",
];
/// A bundle with a certificate chain and a log entry is a few KiB.
pub const MAX_BUNDLE_BYTES: usize = 256 << 10;

pub mod statement;
mod strict;

/// A bundle, as far as verification reads it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bundle {
    #[serde(default)]
    pub media_type: String,
    #[serde(default)]
    pub verification_material: Material,
    pub dsse_envelope: Option<Envelope>,
    pub message_signature: Option<MessageSignature>,
}

/// A signature over an artifact's bytes (`cosign sign-blob`), and the artifact's digest, which
/// the signature does not cover: a hint.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSignature {
    pub message_digest: Option<MessageDigest>,
    pub signature: String,
}

#[derive(Debug, Deserialize)]
pub struct MessageDigest {
    pub algorithm: String,
    pub digest: String,
}

/// Who signed: a key hint, or a certificate (v0.3) or chain (v0.1, v0.2), and log entries.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Material {
    pub public_key: Option<serde_json::Value>,
    pub certificate: Option<RawBytes>,
    pub x509_certificate_chain: Option<Chain>,
    #[serde(default)]
    pub tlog_entries: Vec<serde_json::Value>,
    #[serde(default)]
    pub timestamp_verification_data: Timestamps,
}

/// A bundle's RFC 3161 timestamps (`timestampVerificationData.rfc3161Timestamps`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timestamps {
    #[serde(default)]
    pub rfc3161_timestamps: Vec<SignedTimestamp>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignedTimestamp {
    pub signed_timestamp: String,
}

#[derive(Debug, Deserialize)]
pub struct Chain {
    #[serde(default)]
    pub certificates: Vec<RawBytes>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawBytes {
    pub raw_bytes: String,
}

/// A DSSE envelope: the payload, its type, and signatures over both (PAE).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    pub payload: String,
    pub payload_type: String,
    #[serde(default)]
    pub signatures: Vec<EnvelopeSignature>,
}

#[derive(Debug, Deserialize)]
pub struct EnvelopeSignature {
    pub sig: String,
}

impl Bundle {
    /// Reads a bundle, refusing what is not one ([`Check::Format`], as every refusal here).
    pub fn parse(bytes: &[u8]) -> Result<Bundle, Refused> {
        let bundle: Bundle = serde_json::from_slice(bytes).map_err(|e| {
            unreadable(format!("a signature bundle is not a Sigstore bundle ({e})"))
        })?;
        if !BUNDLE_MEDIA_TYPES.contains(&bundle.media_type.as_str()) {
            return Err(unreadable(format!(
                "a signature bundle has the media type '{}', not a Sigstore bundle's",
                bundle.media_type
            )));
        }
        bundle.check_shape().map_err(unreadable)?;
        Ok(bundle)
    }

    /// What sigstore-go refuses before it verifies anything: a bundle that names neither key
    /// nor certificate; a v0.3 bundle with a certificate chain (one certificate, the leaf);
    /// log entries without the inclusion promise v0.1 requires or the inclusion proof v0.2
    /// and later require.
    fn check_shape(&self) -> Result<(), String> {
        let material = &self.verification_material;
        let chain = material
            .x509_certificate_chain
            .as_ref()
            .is_some_and(|c| !c.certificates.is_empty());
        if material.public_key.is_none() && material.certificate.is_none() && !chain {
            return Err(
                "a bundle names neither a key nor a certificate (its verificationMaterial)".into(),
            );
        }
        let version = self.version();
        if version >= 3 && material.x509_certificate_chain.is_some() {
            return Err(
                "a v0.3 bundle carries a certificate chain; it may carry the leaf only".into(),
            );
        }
        let (field, named) = match version {
            1 => ("inclusionPromise", "inclusion promise"),
            _ => ("inclusionProof", "inclusion proof"),
        };
        if material.tlog_entries.iter().any(|e| e[field].is_null()) {
            return Err(format!(
                "a v0.{version} bundle's log entry has no {named}, which that version requires"
            ));
        }
        Ok(())
    }

    /// The bundle format's minor version (0.1 to 0.3), from its media type.
    fn version(&self) -> u8 {
        match self.media_type.as_bytes().last() {
            Some(b'1') => 1,
            Some(b'2') => 2,
            _ => 3,
        }
    }

    /// The bundle's RFC 3161 timestamps (DER responses), at most
    /// [`MAX_TIMESTAMPS`](super::timestamp::MAX_TIMESTAMPS), as sigstore-go bounds them.
    pub fn timestamps(&self) -> Result<Vec<Vec<u8>>, Refused> {
        let written = &self.verification_material.timestamp_verification_data;
        let max = super::timestamp::MAX_TIMESTAMPS;
        if written.rfc3161_timestamps.len() > max {
            return Err(unreadable(format!(
                "a bundle carries over {max} timestamps"
            )));
        }
        let not_base64 = |_| unreadable("a bundle's timestamp is not base64");
        written
            .rfc3161_timestamps
            .iter()
            .map(|t| decode(&t.signed_timestamp).map_err(not_base64))
            .collect()
    }

    /// The signer's certificates, leaf first (DER), when the bundle is keyless.
    pub fn certificates(&self) -> Result<Vec<Vec<u8>>, Refused> {
        let material = &self.verification_material;
        let raw: Vec<&RawBytes> = match (&material.certificate, &material.x509_certificate_chain) {
            (Some(leaf), _) => vec![leaf],
            (None, Some(chain)) => chain.certificates.iter().collect(),
            (None, None) => Vec::new(),
        };
        let ders = raw
            .iter()
            .map(|c| {
                let der = decode(&c.raw_bytes);
                der.map_err(|_| unreadable("a bundle's certificate is not base64"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // A root vouches for itself: one a bundle brings would be trusted by its own word.
        // sigstore-python refuses it, and the suite's bundle-with-root-cert case with it.
        if let Some(root) = ders.iter().skip(1).find_map(|der| self_issued(der)) {
            return Err(unreadable(format!(
                "a bundle's certificate chain holds a root certificate ('{root:.200}'); roots \
                 come from the trusted root only"
            )));
        }
        Ok(ders)
    }
}

/// The subject of a self-issued certificate (its issuer is its subject: a root).
fn self_issued(der: &[u8]) -> Option<String> {
    use x509_cert::der::Decode;
    let tbs = x509_cert::Certificate::from_der(der).ok()?.tbs_certificate;
    (tbs.issuer == tbs.subject).then(|| tbs.subject.to_string())
}

/// An envelope decoded: the payload, the bytes each signature signs (DSSE's
/// pre-authentication encoding), and the signatures.
pub struct Decoded {
    pub payload: Vec<u8>,
    pub signed: Vec<u8>,
    pub signatures: Vec<Vec<u8>>,
}

impl Envelope {
    /// Exactly one signature, as sigstore-go requires: an envelope of thousands had each tried
    /// against each key (19 s of CPU a digest), and the one a log entry records must be the one
    /// that verifies.
    pub fn decode(&self) -> Result<Decoded, Refused> {
        if self.signatures.len() != 1 {
            return Err(unreadable(format!(
                "a DSSE envelope carries {} signatures; a Sigstore bundle's has exactly one",
                self.signatures.len()
            )));
        }
        let payload =
            decode(&self.payload).map_err(|_| unreadable("a DSSE payload is not base64"))?;
        let signed = pae(&self.payload_type, &payload);
        let signature = decode(&self.signatures[0].sig);
        let signatures = vec![signature.map_err(|_| unreadable("a DSSE signature is not base64"))?];
        Ok(Decoded {
            payload,
            signed,
            signatures,
        })
    }
}

/// A refusal of what is not a well-formed bundle.
fn unreadable(reason: impl Into<String>) -> Refused {
    Check::Format.refused(reason)
}

/// DSSE v1's pre-authentication encoding: `DSSEv1 <len> <type> <len> <payload>`.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// A bundle's bytes field: standard base64, padded. sigstore-go (protojson) also takes it
/// URL-safe, unpadded or broken into lines, which is held here; spaces, which it refuses, are
/// refused.
pub(crate) fn decode(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    base64::engine::general_purpose::STANDARD.decode(text)
}

#[cfg(test)]
mod tests;
