//! A registry holding images as GitHub's artifact attestations leave them
//! (`actions/attest-build-provenance` with `push-to-registry`): each tag's image carries a
//! Sigstore bundle as an OCI referrer, kept in one of the [`Shape`]s registries keep referrers
//! in. A fake, for the shapes Distribution does not have (ghcr.io's).

use crate::support::fault_server::{FaultServer, Reply, Seen};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;

pub const SLSA: &str = "https://slsa.dev/provenance/v1";
/// The artifact type GitHub's action and cosign v3 give a bundle's artifact.
const BUNDLE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const EMPTY: &str = "application/vnd.oci.empty.v1+json";

/// Where a registry keeps an image's referrers.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// The referrers API, listing the artifact with its type and the annotations the action
    /// writes (`dev.sigstore.bundle.content`, `dev.sigstore.bundle.predicateType`).
    Referrers,
    /// As ghcr.io answers: the API a `404 MANIFEST_UNKNOWN`, and the tag schema's index listing
    /// the artifact with an empty artifactType and no annotations.
    Ghcr,
    /// Distribution without the API (a 404): the tag schema's index, listed as the action
    /// lists it.
    TagSchema,
}

/// One tag of the repository `app`: the image (its bytes, their digest its digest) and the
/// bundle attached to it.
pub struct Attested {
    pub tag: &'static str,
    pub image: Vec<u8>,
    pub bundle: Vec<u8>,
}

pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

type Paths = HashMap<String, (String, Vec<u8>)>;

/// The paths that attach `bundle` to the image `subject` in `shape`.
fn attach(paths: &mut Paths, subject: &str, size: usize, bundle: &[u8], shape: Shape) {
    let annotations = json!({"dev.sigstore.bundle.content": "dsse-envelope",
        "dev.sigstore.bundle.predicateType": SLSA,
        "org.opencontainers.image.created": "2026-01-01T00:00:00.000Z"});
    let manifest = json!({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": BUNDLE,
        "config": {"mediaType": EMPTY, "digest": sha256(b"{}"), "size": 2},
        "layers": [{"mediaType": BUNDLE, "digest": sha256(bundle), "size": bundle.len()}],
        "subject": {"mediaType": OCI_MANIFEST, "digest": subject, "size": size},
        "annotations": annotations});
    let manifest = serde_json::to_vec(&manifest).unwrap();
    let at = sha256(&manifest);
    let mut entry = json!({"mediaType": OCI_MANIFEST, "digest": at, "size": manifest.len(),
        "artifactType": BUNDLE, "annotations": annotations});
    if let Shape::Ghcr = shape {
        entry["artifactType"] = EMPTY.into();
        entry.as_object_mut().unwrap().remove("annotations");
    }
    let index = json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [entry]});
    let index = (OCI_INDEX.to_string(), serde_json::to_vec(&index).unwrap());
    let manifest = (OCI_MANIFEST.to_string(), manifest);
    paths.insert(format!("/v2/app/manifests/{at}"), manifest);
    let blob = (BUNDLE.to_string(), bundle.to_vec());
    paths.insert(format!("/v2/app/blobs/{}", sha256(bundle)), blob);
    match shape {
        Shape::Referrers => paths.insert(format!("/v2/app/referrers/{subject}"), index),
        Shape::Ghcr | Shape::TagSchema => paths.insert(
            format!("/v2/app/manifests/{}", subject.replacen(':', "-", 1)),
            index,
        ),
    };
}

/// The registry: each tag names its image's digest (a HEAD's `Docker-Content-Digest`, as the
/// digest is resolved); ghcr.io's referrers API is a 404 `MANIFEST_UNKNOWN`, Distribution's a
/// bare 404.
pub async fn registry(images: &[Attested], shape: Shape) -> FaultServer {
    let mut paths = Paths::new();
    let mut tags = HashMap::new();
    for image in images {
        let digest = sha256(&image.image);
        attach(&mut paths, &digest, image.image.len(), &image.bundle, shape);
        tags.insert(format!("/v2/app/manifests/{}", image.tag), digest);
    }
    let names: Vec<&str> = images.iter().map(|i| i.tag).collect();
    let list = json!({"name": "app", "tags": names})
        .to_string()
        .into_bytes();
    paths.insert(
        "/v2/app/tags/list".into(),
        ("application/json".into(), list),
    );
    let (paths, tags) = (Arc::new(paths), Arc::new(tags));
    FaultServer::start(move |seen: &Seen| {
        if let Some(digest) = tags.get(seen.path()) {
            return Reply::status(200)
                .header("Content-Type", OCI_MANIFEST)
                .header("Docker-Content-Digest", digest);
        }
        match (paths.get(seen.path()), shape) {
            (Some((kind, body)), _) => Reply::status(200)
                .header("Content-Type", kind)
                .body(body.clone()),
            (None, Shape::Ghcr) if seen.path().contains("/referrers/") => Reply::json(
                404,
                json!({"errors": [{"code": "MANIFEST_UNKNOWN", "message": "manifest unknown"}]}),
            ),
            (None, _) => Reply::status(404),
        }
    })
    .await
}
