//! Reading an image's signatures from its registry (docs/imagepolicy.md, "spec.verify"): the
//! cosign bundles and notation envelopes attached as OCI 1.1 referrers ([`referrers`]), and
//! cosign's legacy `sha256-<hex>.sig` tag ([`legacy`]). What they are worth is `crate::verify`'s
//! to judge; nothing here verifies.

pub mod legacy;
pub mod referrers;

use super::{RegistryClient, RegistryError};
use crate::reference::ImageReference;
use crate::verify::{bundle, notation, Signed, Subject, MAX_SIGNATURES};

impl RegistryClient {
    /// The cosign bundles attached to `digest` as referrers; the legacy `.sig` tag's are
    /// [`Self::legacy_signatures`], read when none of these verifies.
    pub async fn bundle_signatures(
        &self,
        image: &ImageReference,
        digest: &str,
    ) -> Result<Vec<Signed>, RegistryError> {
        self.bundles(image, digest, &[]).await
    }

    /// The cosign bundles attached to `digest`: its signatures and its attestations of the
    /// `predicate_types` (`spec.verify.attestations`), within one bound of 16 bundles.
    pub async fn bundles(
        &self,
        image: &ImageReference,
        digest: &str,
        predicate_types: &[String],
    ) -> Result<Vec<Signed>, RegistryError> {
        let artifact = (bundle::BUNDLE_MEDIA_TYPES[0], predicate_types);
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
        let artifact = (referrers::NOTATION_SIGNATURE, &[][..]);
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
