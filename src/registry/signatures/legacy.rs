//! cosign's legacy layout: the manifest tagged `sha256-<hex>.sig` in the image's repository,
//! whose simple-signing layers each hold a payload blob and, in annotations, the base64 ECDSA
//! signature of the payload's bytes and, for a keyless signature, the certificate, its chain
//! and the transparency-log bundle.

use crate::reference::ImageReference;
use crate::registry::fetch::is_sha256;
use crate::registry::{RegistryClient, RegistryError};
use crate::verify::{signature_tag, Signed, SignedPayload, MAX_PAYLOAD_BYTES, MAX_SIGNATURES};
use base64::Engine;
use serde::Deserialize;
use std::collections::BTreeMap;

const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
const CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";
const CHAIN_ANNOTATION: &str = "dev.sigstore.cosign/chain";
const TLOG_ANNOTATION: &str = "dev.sigstore.cosign/bundle";

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

impl RegistryClient {
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
            signatures.push(Signed::Simple(SignedPayload {
                payload,
                signature,
                certificates: certificates(&layer.annotations),
                log_entry: layer.annotations.get(TLOG_ANNOTATION).cloned(),
            }));
        }
        Ok(signatures)
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
