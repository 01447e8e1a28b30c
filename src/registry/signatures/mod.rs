//! Cosign signatures (docs/imagepolicy.md, "spec.verify"), in the two layouts cosign writes:
//! - a Sigstore bundle attached as an OCI 1.1 referrer (cosign v3's default; [`bundle`],
//!   [`referrers`]): a DSSE envelope over an in-toto statement naming the digest;
//! - the legacy `sha256-<hex>.sig` tag ([`simple`]): simple-signing payloads naming digest and
//!   repository.
//!
//! Either is signed with a key or, keyless, with a certificate ([`keyless`]); [`trust`] judges
//! them against what the policy trusts.

pub mod bundle;
pub mod key;
pub mod keyless;
pub mod notation;
pub mod referrers;
pub mod simple;
pub mod tlog;
pub mod trust;
pub mod valid_for;

use super::{ImageReference, RegistryClient, RegistryError};
pub use trust::{TrustedKeys, TRUSTED_ROOT};

/// Signatures read per image: a real image has one or two.
pub const MAX_SIGNATURES: usize = 16;
/// A simple-signing payload is a few hundred bytes.
pub const MAX_PAYLOAD_BYTES: usize = 64 << 10;
/// Trusted keys per Secret, and the size of each.
pub const MAX_KEYS: usize = 16;
pub const MAX_KEY_BYTES: usize = 16 << 10;

/// One legacy signature as stored: the payload's bytes, the signature over them, and for a
/// keyless signature its certificates (DER, leaf first) and its log entry (the
/// `dev.sigstore.cosign/bundle` annotation), if any.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignedPayload {
    pub payload: Vec<u8>,
    pub signature: Vec<u8>,
    pub certificates: Vec<Vec<u8>>,
    pub log_entry: Option<String>,
}

/// A signature as read from the registry, in either layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Signed {
    /// A simple-signing layer of the legacy `.sig` tag.
    Simple(SignedPayload),
    /// A Sigstore bundle (its JSON) attached as a referrer.
    Bundle(Vec<u8>),
    /// A notation envelope (its media type and bytes) attached as a referrer, and the signed
    /// manifest as the registry serves it (`None`: the digest alone is compared).
    Notation {
        media_type: String,
        bytes: Vec<u8>,
        subject: Option<Subject>,
    },
}

/// The signed manifest's media type and size as the registry serves it: a notation payload's
/// `targetArtifact` must name the same, as notation-go compares the whole descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    pub media_type: String,
    pub size: u64,
}

/// A trust document from the Secret's entry `file` (a trusted root, a trust policy): at most
/// `max` bytes, checked before it is parsed, and JSON of the `kind` named when it is not.
fn trust_document<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    file: &str,
    max: usize,
    kind: &str,
) -> Result<T, String> {
    if bytes.len() > max {
        return Err(format!("{file} is over {max} bytes"));
    }
    serde_json::from_slice(bytes).map_err(|e| format!("{file} is not {kind} ({e})"))
}

/// The tag cosign stores `digest`'s legacy signatures under.
pub fn signature_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1) + ".sig"
}

impl RegistryClient {
    /// The cosign bundles attached to `digest` as referrers; the legacy `.sig` tag's are
    /// [`Self::legacy_signatures`], read when none of these verifies.
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

    /// The notation signatures attached to `digest` as referrers.
    pub async fn notation_signatures(
        &self,
        image: &ImageReference,
        digest: &str,
    ) -> Result<Vec<Signed>, RegistryError> {
        let artifact = referrers::NOTATION_SIGNATURE;
        let found = self
            .referrers(image, digest, artifact, notation::MAX_ENVELOPE_BYTES)
            .await?;
        if found.is_empty() {
            return Ok(Vec::new());
        }
        // The descriptor the payloads must name, from the manifest's own (hash-checked) bytes:
        // one request per digest that has notation signatures.
        let manifest = self.manifest(image, digest).await?;
        let subject = manifest.map(|m| Subject {
            media_type: m.declared_type(),
            size: m.bytes.len() as u64,
        });
        let signed = found.into_iter().map(|r| Signed::Notation {
            media_type: r.media_type,
            bytes: r.bytes,
            subject: subject.clone(),
        });
        Ok(signed.collect())
    }
}

#[cfg(test)]
mod tests;
