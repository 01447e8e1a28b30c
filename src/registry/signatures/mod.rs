//! Cosign signatures, key-based (docs/imagepolicy.md, "spec.verify"), in the two layouts cosign
//! writes:
//! - a Sigstore bundle attached as an OCI 1.1 referrer (cosign v3's default; [`bundle`],
//!   [`referrers`]): a DSSE envelope over an in-toto statement naming the digest;
//! - the legacy `sha256-<hex>.sig` tag of the image's repository, whose simple-signing layers
//!   each hold a payload blob and, in the `dev.cosignproject.cosign/signature` annotation, a
//!   base64 ECDSA signature of the payload's bytes, the payload naming digest and repository.
//!
//! A signature counts when it verifies with one of the trusted keys and what it signed names
//! this digest (and, in the legacy layout, this repository).

pub mod bundle;
pub mod referrers;

use super::fetch::is_sha256;
use super::{ImageReference, RegistryClient, RegistryError};
use base64::Engine;
use bundle::{check_statement, Bundle};
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Signatures read per image: a real image has one or two.
pub const MAX_SIGNATURES: usize = 16;
/// A simple-signing payload is a few hundred bytes.
pub const MAX_PAYLOAD_BYTES: usize = 64 << 10;
/// Trusted keys per Secret, and the size of each.
pub const MAX_KEYS: usize = 16;
pub const MAX_KEY_BYTES: usize = 16 << 10;

const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
const PAYLOAD_TYPE: &str = "cosign container image signature";

/// One signature as stored: the payload's bytes and the signature over them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedPayload {
    pub payload: Vec<u8>,
    pub signature: Vec<u8>,
}

/// A signature as read from the registry, in either layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Signed {
    /// A simple-signing layer of the legacy `.sig` tag.
    Simple(SignedPayload),
    /// A Sigstore bundle (its JSON) attached as a referrer.
    Bundle(Vec<u8>),
}

/// The public keys a policy trusts, by Secret entry name, and their fingerprint (what a
/// cached verdict is keyed by: other keys, another verdict).
pub struct TrustedKeys {
    keys: Vec<(String, VerifyingKey)>,
    pub fingerprint: String,
}

impl TrustedKeys {
    /// The `*.pub` entries of a Secret's data (PEM `PUBLIC KEY`, ECDSA P-256, as
    /// `cosign generate-key-pair` writes `cosign.pub`).
    pub fn from_secret(data: &BTreeMap<String, Vec<u8>>) -> Result<TrustedKeys, String> {
        let mut keys = Vec::new();
        let mut hash = Sha256::new();
        for (name, bytes) in data.iter().filter(|(n, _)| n.ends_with(".pub")) {
            if keys.len() == MAX_KEYS {
                return Err(format!("more than {MAX_KEYS} *.pub entries"));
            }
            if bytes.len() > MAX_KEY_BYTES {
                return Err(format!("entry '{name}' is over {MAX_KEY_BYTES} bytes"));
            }
            let text = std::str::from_utf8(bytes)
                .map_err(|_| format!("entry '{name}' is not PEM text"))?;
            let key = VerifyingKey::from_public_key_pem(text.trim()).map_err(|e| {
                format!(
                    "entry '{name}' is not an ECDSA P-256 public key in PEM ({e}); \
                     `cosign generate-key-pair` writes one (cosign.pub)"
                )
            })?;
            hash.update(name.as_bytes());
            hash.update([0]);
            hash.update(bytes);
            hash.update([0]);
            keys.push((name.clone(), key));
        }
        if keys.is_empty() {
            return Err("it has no *.pub entry (a cosign public key, e.g. cosign.pub)".into());
        }
        let fingerprint = format!("{:x}", hash.finalize())[..32].to_string();
        Ok(TrustedKeys { keys, fingerprint })
    }

    /// The key that verifies one of `signatures` for `digest` in `image`'s repository, or why
    /// none does.
    pub fn verify(
        &self,
        signatures: &[Signed],
        image: &ImageReference,
        digest: &str,
    ) -> Result<String, String> {
        if signatures.is_empty() {
            return Err(format!(
                "no signature (no cosign bundle among its referrers, no tag {})",
                signature_tag(digest)
            ));
        }
        let mut why = Vec::new();
        for signed in signatures {
            let verified = match signed {
                Signed::Simple(signed) => self.verify_one(signed, image, digest),
                Signed::Bundle(bytes) => self.verify_bundle(bytes, digest),
            };
            match verified {
                Ok(key) => return Ok(key),
                Err(reason) if !why.contains(&reason) => why.push(reason),
                Err(_) => {}
            }
        }
        Err(format!(
            "{} signature{}, none valid: {}",
            signatures.len(),
            if signatures.len() == 1 { "" } else { "s" },
            why.join("; ")
        ))
    }

    /// A bundle's DSSE envelope, signed by a trusted key, over a statement naming `digest`.
    fn verify_bundle(&self, bytes: &[u8], digest: &str) -> Result<String, String> {
        let bundle = Bundle::parse(bytes)?;
        let Some(envelope) = &bundle.dsse_envelope else {
            return Err(match bundle.message_signature {
                Some(_) => "a bundle holds a message signature, which names no image".into(),
                None => "a bundle holds no signature".into(),
            });
        };
        if !bundle.certificates()?.is_empty() {
            return Err(
                "a keyless signature (a certificate), and the policy trusts keys only".into(),
            );
        }
        let decoded = envelope.decode()?;
        let key = self.key_for(&decoded.signed, &decoded.signatures)?;
        // Only now is the statement trusted enough to be read.
        check_statement(&envelope.payload_type, &decoded.payload, digest)?;
        Ok(key)
    }

    /// The trusted key one of `signatures` (DER or raw ECDSA) over `message` verifies with.
    fn key_for(&self, message: &[u8], signatures: &[Vec<u8>]) -> Result<String, String> {
        let parsed: Vec<Signature> = signatures
            .iter()
            .filter_map(|s| {
                Signature::from_der(s)
                    .or_else(|_| Signature::from_slice(s))
                    .ok()
            })
            .collect();
        if parsed.is_empty() {
            return Err("a signature is not an ECDSA signature".into());
        }
        self.keys
            .iter()
            .find(|(_, key)| parsed.iter().any(|s| key.verify(message, s).is_ok()))
            .map(|(name, _)| name.clone())
            .ok_or_else(|| "signature does not verify with any trusted key".to_string())
    }

    fn verify_one(
        &self,
        signed: &SignedPayload,
        image: &ImageReference,
        digest: &str,
    ) -> Result<String, String> {
        let key = self.key_for(&signed.payload, std::slice::from_ref(&signed.signature))?;
        // Only now is the payload trusted enough to be read.
        let payload: Payload = serde_json::from_slice(&signed.payload)
            .map_err(|e| format!("a signed payload is not a simple-signing payload ({e})"))?;
        let critical = payload.critical;
        if critical.kind != PAYLOAD_TYPE {
            return Err(format!("a signed payload's type is '{}'", critical.kind));
        }
        if critical.image.docker_manifest_digest != digest {
            return Err(format!(
                "a signature is for {}, not this digest",
                critical.image.docker_manifest_digest
            ));
        }
        let named = ImageReference::parse(&critical.identity.docker_reference, false)
            .map(|r| r.canonical())
            .unwrap_or_default();
        if named != image.canonical() {
            return Err(format!(
                "a signature names the repository '{}', not {}",
                critical.identity.docker_reference,
                image.canonical()
            ));
        }
        Ok(key)
    }
}

#[derive(Deserialize)]
struct Payload {
    critical: Critical,
}

#[derive(Deserialize)]
struct Critical {
    identity: Identity,
    image: SignedImage,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct Identity {
    #[serde(rename = "docker-reference")]
    docker_reference: String,
}

#[derive(Deserialize)]
struct SignedImage {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: String,
}

#[derive(Deserialize)]
struct SignatureManifest {
    #[serde(default)]
    layers: Vec<Layer>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Layer {
    #[serde(default)]
    media_type: String,
    #[serde(default)]
    digest: String,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// The tag cosign stores `digest`'s signatures under.
pub fn signature_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1) + ".sig"
}

impl RegistryClient {
    /// The cosign signatures of `digest`: the bundles attached as referrers, else (none of them
    /// verifying is the caller's to say) the legacy `.sig` tag's ([`Self::legacy_signatures`]).
    pub async fn bundle_signatures(
        &self,
        image: &ImageReference,
        digest: &str,
    ) -> Result<Vec<Signed>, RegistryError> {
        let artifact = bundle::BUNDLE_MEDIA_TYPES[0];
        let found = self
            .referrers(image, digest, artifact, bundle::MAX_BUNDLE_BYTES)
            .await?;
        Ok(found.into_iter().map(|r| Signed::Bundle(r.bytes)).collect())
    }

    /// The cosign signatures of `digest` under its legacy `.sig` tag (none when it has no
    /// signature tag). Requests: one for the signature manifest, one per signature for its
    /// payload.
    pub async fn legacy_signatures(
        &self,
        image: &ImageReference,
        digest: &str,
    ) -> Result<Vec<Signed>, RegistryError> {
        if !is_sha256(digest) {
            return Ok(Vec::new());
        }
        let Some(manifest) = self.manifest(image, &signature_tag(digest)).await? else {
            return Ok(Vec::new());
        };
        let parsed: SignatureManifest = serde_json::from_slice(&manifest.bytes)
            .unwrap_or(SignatureManifest { layers: Vec::new() });
        let mut signatures = Vec::new();
        for layer in parsed
            .layers
            .iter()
            .filter(|l| l.media_type == SIMPLE_SIGNING)
        {
            if signatures.len() == MAX_SIGNATURES {
                break;
            }
            let Some(encoded) = layer.annotations.get(SIGNATURE_ANNOTATION) else {
                continue;
            };
            let Ok(signature) = base64::engine::general_purpose::STANDARD.decode(encoded.trim())
            else {
                continue;
            };
            let payload = self.blob(image, &layer.digest, MAX_PAYLOAD_BYTES).await?;
            signatures.push(Signed::Simple(SignedPayload { payload, signature }));
        }
        Ok(signatures)
    }
}

#[cfg(test)]
mod tests;
