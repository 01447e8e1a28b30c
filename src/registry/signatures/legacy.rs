//! cosign's legacy layout (cosign v2's default): the manifest tagged `sha256-<hex>.sig` in the
//! image's repository, whose simple-signing layers each hold a payload blob and, in
//! annotations, the base64 ECDSA signature of the payload's bytes and, for a keyless
//! signature, the certificate, its chain and the transparency-log bundle; and the manifest
//! tagged `sha256-<hex>.att`, whose layers each hold a DSSE envelope (an attestation, its
//! signature inside) with the same annotations but an empty signature, and its predicate type.

use crate::reference::ImageReference;
use crate::registry::fetch::is_sha256;
use crate::registry::{RegistryClient, RegistryError};
use crate::verify::bundle::MAX_BUNDLE_BYTES;
use crate::verify::{signature_tag, Signed, SignedPayload, MAX_PAYLOAD_BYTES, MAX_SIGNATURES};
use base64::Engine;
use serde::Deserialize;
use std::collections::BTreeMap;

const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
const CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";
const CHAIN_ANNOTATION: &str = "dev.sigstore.cosign/chain";
const TLOG_ANNOTATION: &str = "dev.sigstore.cosign/bundle";
/// An attestation layer's: a DSSE envelope, and the annotation naming its predicate type.
const DSSE_ENVELOPE: &str = "application/vnd.dsse.envelope.v1+json";
const PREDICATE_ANNOTATION: &str = "predicateType";

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

/// The certificates (DER, leaf first) of a layer's certificate and chain annotations (PEM);
/// none when it has no certificate or they do not read.
fn certificates(annotations: &BTreeMap<String, String>) -> Vec<Vec<u8>> {
    let Some(leaf) = annotations.get(CERTIFICATE_ANNOTATION) else {
        return Vec::new();
    };
    let chain = annotations
        .get(CHAIN_ANNOTATION)
        .map(String::as_str)
        .unwrap_or_default();
    let pem = format!("{leaf}\n{chain}");
    let mut out = Vec::new();
    for block in pem.split("-----BEGIN CERTIFICATE-----").skip(1) {
        let body: String = block
            .split("-----END CERTIFICATE-----")
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        match base64::engine::general_purpose::STANDARD.decode(body) {
            Ok(der) => out.push(der),
            Err(_) => return vec![b"not a certificate".to_vec()],
        }
    }
    out
}

/// The tag cosign v2 stores `digest`'s attestations under.
pub fn attestation_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1) + ".att"
}

impl RegistryClient {
    /// The cosign signatures of `digest` under its legacy `.sig` tag (none when it has no
    /// signature tag). Requests: one for the signature manifest, one per signature for its
    /// payload.
    pub async fn legacy_signatures(
        &self,
        image: &ImageReference,
        digest: &str,
    ) -> Result<Vec<Signed>, RegistryError> {
        let layers = self.layers(image, digest, &signature_tag(digest)).await?;
        let mut signatures = Vec::new();
        for layer in layers.iter().filter(|l| l.media_type == SIMPLE_SIGNING) {
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
            signatures.push(Signed::Simple(signed(payload, signature, layer)));
        }
        Ok(signatures)
    }

    /// The cosign attestations of `digest` under its legacy `.att` tag whose annotation names
    /// one of `predicate_types` (none when it has no attestation tag); each envelope is judged
    /// by its statement once verified, whatever the annotation said. Requests: one for the
    /// manifest, one per attestation of those types for its envelope.
    pub async fn legacy_attestations(
        &self,
        image: &ImageReference,
        digest: &str,
        predicate_types: &[String],
    ) -> Result<Vec<Signed>, RegistryError> {
        if predicate_types.is_empty() {
            return Ok(Vec::new());
        }
        let layers = self.layers(image, digest, &attestation_tag(digest)).await?;
        let mut attestations = Vec::new();
        for layer in layers.iter().filter(|l| l.media_type == DSSE_ENVELOPE) {
            if attestations.len() == MAX_SIGNATURES {
                break;
            }
            // As with the referrers' annotation: skipping another type's spares its request,
            // and cannot elect (a verified statement of another type would be refused).
            let claimed = layer.annotations.get(PREDICATE_ANNOTATION);
            if claimed.is_some_and(|p| !predicate_types.contains(p)) {
                continue;
            }
            let envelope = self.blob(image, &layer.digest, MAX_BUNDLE_BYTES).await?;
            attestations.push(Signed::Attestation(signed(envelope, Vec::new(), layer)));
        }
        Ok(attestations)
    }

    /// The layers of the manifest tagged `tag` for `digest` (none when there is no such tag,
    /// or it is not a manifest).
    async fn layers(
        &self,
        image: &ImageReference,
        digest: &str,
        tag: &str,
    ) -> Result<Vec<Layer>, RegistryError> {
        if !is_sha256(digest) {
            return Ok(Vec::new());
        }
        let Some(manifest) = self.manifest(image, tag).await? else {
            return Ok(Vec::new());
        };
        let parsed: SignatureManifest = serde_json::from_slice(&manifest.bytes)
            .unwrap_or(SignatureManifest { layers: Vec::new() });
        Ok(parsed.layers)
    }
}

/// A layer's signed bytes as read, with its signature and what its annotations carry.
fn signed(payload: Vec<u8>, signature: Vec<u8>, layer: &Layer) -> SignedPayload {
    SignedPayload {
        payload,
        signature,
        certificates: certificates(&layer.annotations),
        log_entry: layer.annotations.get(TLOG_ANNOTATION).cloned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The leaf then its chain, each PEM block's DER; nothing without a certificate; a block
    /// that does not decode makes one certificate that does not parse (held back, not dropped).
    #[test]
    fn a_layers_certificates_are_its_leaf_then_its_chain() {
        let pem = |der: &[u8]| {
            let text = base64::engine::general_purpose::STANDARD.encode(der);
            format!("-----BEGIN CERTIFICATE-----\n{text}\n-----END CERTIFICATE-----\n")
        };
        let annotations = BTreeMap::from([
            (CERTIFICATE_ANNOTATION.to_string(), pem(b"leaf")),
            (CHAIN_ANNOTATION.to_string(), pem(b"one") + &pem(b"two")),
        ]);
        assert_eq!(
            certificates(&annotations),
            [b"leaf".to_vec(), b"one".to_vec(), b"two".to_vec()]
        );
        let only_chain = BTreeMap::from([(CHAIN_ANNOTATION.to_string(), pem(b"one"))]);
        assert!(certificates(&only_chain).is_empty());
        let broken = BTreeMap::from([(
            CERTIFICATE_ANNOTATION.to_string(),
            "-----BEGIN CERTIFICATE-----\n%%\n-----END CERTIFICATE-----".to_string(),
        )]);
        assert_eq!(certificates(&broken), [b"not a certificate".to_vec()]);
    }
}
