//! Images the gated-election tests push to a real Distribution registry: configs with chosen
//! creation times, multi-platform indexes with chosen platforms, and cosign signatures made
//! here with P-256 keys (the simple-signing layout `cosign sign --key` writes).

use super::distribution::{digest, media, Distribution};
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::{EncodePublicKey, LineEnding};
use serde_json::{json, Value};

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// One platform image of an index.
pub struct Arch<'a> {
    pub architecture: &'a str,
    pub variant: Option<&'a str>,
    /// RFC 3339, or none.
    pub created: Option<&'a str>,
}

impl Distribution {
    /// Uploads a config and a layer and the manifest over them (by digest, and under `tag`
    /// when given); returns the manifest's digest and size.
    async fn push_config(
        &self,
        repository: &str,
        tag: Option<&str>,
        config: Value,
        annotations: Value,
    ) -> (String, usize) {
        let (client, _) = self.pusher(repository).await;
        let reference = self.reference(repository, tag.unwrap_or("x"));
        let config = serde_json::to_vec(&config).unwrap();
        let layer = format!("layer {}", digest(&config)).into_bytes();
        for blob in [&config, &layer] {
            client
                .push_blob(&reference, blob.clone(), &digest(blob))
                .await
                .expect("blob push");
        }
        let manifest = serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": digest(&config), "size": config.len()},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": digest(&layer), "size": layer.len()}],
            "annotations": annotations,
        }))
        .unwrap();
        let by_digest = self
            .reference(repository, "x")
            .clone_with_digest(digest(&manifest));
        client
            .push_manifest_raw(&by_digest, manifest.clone(), media(OCI_MANIFEST))
            .await
            .expect("manifest push");
        if tag.is_some() {
            client
                .push_manifest_raw(&reference, manifest.clone(), media(OCI_MANIFEST))
                .await
                .expect("manifest push");
        }
        (digest(&manifest), manifest.len())
    }

    /// A linux image for `architecture` under `tag`, its config `created` at `created` (none:
    /// no time), `salt` making it another image; returns its digest.
    pub async fn push_dated(
        &self,
        repository: &str,
        tag: &str,
        architecture: &str,
        created: Option<&str>,
        salt: &str,
    ) -> String {
        let mut config = json!({"architecture": architecture, "os": "linux", "salt": salt,
                                "rootfs": {"type": "layers", "diff_ids": []}});
        if let Some(created) = created {
            config["created"] = json!(created);
        }
        self.push_config(repository, Some(tag), config, json!({}))
            .await
            .0
    }

    /// A linux/amd64 image under `tag` whose config has no `created`, dated by the manifest's
    /// `org.opencontainers.image.created` annotation instead; returns its digest.
    pub async fn push_annotated(&self, repository: &str, tag: &str, created: &str) -> String {
        let config = json!({"architecture": "amd64", "os": "linux", "salt": tag,
                            "rootfs": {"type": "layers", "diff_ids": []}});
        let annotations = json!({"org.opencontainers.image.created": created});
        self.push_config(repository, Some(tag), config, annotations)
            .await
            .0
    }

    /// An OCI index under `tag` over one image per entry of `archs` (plus an attestation
    /// manifest, `unknown/unknown`, which is no platform); returns the index digest.
    pub async fn push_platforms(&self, repository: &str, tag: &str, archs: &[Arch<'_>]) -> String {
        let mut entries = Vec::new();
        for arch in archs {
            let mut config = json!({"architecture": arch.architecture, "os": "linux",
                                    "rootfs": {"type": "layers", "diff_ids": []}, "tag": tag});
            if let Some(variant) = arch.variant {
                config["variant"] = json!(variant);
            }
            if let Some(created) = arch.created {
                config["created"] = json!(created);
            }
            let (d, size) = self.push_config(repository, None, config, json!({})).await;
            let mut platform = json!({"architecture": arch.architecture, "os": "linux"});
            if let Some(variant) = arch.variant {
                platform["variant"] = json!(variant);
            }
            entries.push(json!({"mediaType": OCI_MANIFEST, "digest": d, "size": size,
                                "platform": platform}));
        }
        let attestation = json!({"kind": "attestation", "tag": tag});
        let (d, size) = self
            .push_config(repository, None, attestation, json!({}))
            .await;
        entries.push(json!({"mediaType": OCI_MANIFEST, "digest": d, "size": size,
            "platform": {"architecture": "unknown", "os": "unknown"},
            "annotations": {"vnd.docker.reference.type": "attestation-manifest"}}));
        let index = serde_json::to_vec(&json!({
            "schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries,
        }))
        .unwrap();
        let (client, _) = self.pusher(repository).await;
        client
            .push_manifest_raw(
                &self.reference(repository, tag),
                index.clone(),
                media(OCI_INDEX),
            )
            .await
            .expect("index push");
        digest(&index)
    }

    /// Stores `signatures` (payload, DER signature) as cosign does for `signed`: the manifest
    /// tagged `sha256-<hex>.sig`, one simple-signing layer per signature.
    pub async fn push_signatures(
        &self,
        repository: &str,
        signed: &str,
        signatures: &[(Vec<u8>, Vec<u8>)],
    ) {
        let (client, _) = self.pusher(repository).await;
        let tag = signed.replacen(':', "-", 1) + ".sig";
        let reference = self.reference(repository, &tag);
        let config = b"{}".to_vec();
        client
            .push_blob(&reference, config.clone(), &digest(&config))
            .await
            .expect("blob push");
        let mut layers = Vec::new();
        for (payload, signature) in signatures {
            client
                .push_blob(&reference, payload.clone(), &digest(payload))
                .await
                .expect("blob push");
            use base64::Engine;
            let encoded = base64::engine::general_purpose::STANDARD.encode(signature);
            layers.push(json!({
                "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
                "digest": digest(payload), "size": payload.len(),
                "annotations": {"dev.cosignproject.cosign/signature": encoded},
            }));
        }
        let manifest = serde_json::to_vec(&json!({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": digest(&config), "size": config.len()},
            "layers": layers,
        }))
        .unwrap();
        client
            .push_manifest_raw(&reference, manifest, media(OCI_MANIFEST))
            .await
            .expect("signature push");
    }
}

/// A P-256 key made from a seed (deterministic: the test names its keys).
pub fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32].into()).unwrap()
}

/// The public key as `cosign.pub` holds it.
pub fn public_pem(key: &SigningKey) -> String {
    key.verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .unwrap()
}

/// The public key indented for a YAML block scalar under `stringData` (`cosign.pub: |`).
pub fn public_pem_block(key: &SigningKey) -> String {
    public_pem(key)
        .lines()
        .map(|l| format!("    {l}\n"))
        .collect()
}

/// cosign's simple-signing payload for `digest` in `repository` (`host/path`).
pub fn payload(repository: &str, digest: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "critical": {
            "identity": {"docker-reference": repository},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature"
        },
        "optional": null
    }))
    .unwrap()
}

/// `payload` signed with `key`: (payload, DER signature).
pub fn sign(key: &SigningKey, payload: Vec<u8>) -> (Vec<u8>, Vec<u8>) {
    let signature: Signature = key.sign(&payload);
    (payload, signature.to_der().as_bytes().to_vec())
}
