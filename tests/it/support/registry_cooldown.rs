//! A registry with a pull cooldown, as Chainguard's registry policies apply one (`cooldown`
//! bound in `ENFORCE` mode): a manifest whose image was published less than the cooldown ago is
//! refused, by tag or by digest, with 403 and the OCI code `DENIED` (a HEAD gets the status
//! alone, as HEAD has no body); the tag listing shows every tag. A fake, for a refusal
//! Distribution does not make. Each tag's image is an OCI manifest and its config, whose
//! `created` is the publication time.

use crate::support::fault_server::{FaultServer, Reply, Seen};
use jiff::{SignedDuration, Timestamp};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const CONFIG: &str = "application/vnd.oci.image.config.v1+json";
/// What the registry says when it refuses.
pub const DENIED: &str = "pulling this artifact is blocked by the cooldown policy: published \
                          less than 7 days ago";

/// One tag of the repository `app`, published `days_ago`.
pub struct Published {
    pub tag: &'static str,
    pub days_ago: i64,
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// A manifest or blob the registry serves: its media type, its bytes, whether it is cooling.
type Stored = (&'static str, Vec<u8>, bool);

/// The registry, refusing what was published less than `cooldown_days` ago; with the digest
/// of each tag's manifest.
pub async fn registry(
    images: &[Published],
    cooldown_days: i64,
) -> (FaultServer, HashMap<&'static str, String>) {
    let now = Timestamp::now();
    let mut paths: HashMap<String, Stored> = HashMap::new();
    let mut digests = HashMap::new();
    for image in images {
        let created = now - SignedDuration::from_hours(image.days_ago * 24);
        let config = json!({"architecture": "amd64", "os": "linux", "created": created.to_string(),
            "rootfs": {"type": "layers", "diff_ids": []}});
        let config = serde_json::to_vec(&config).unwrap();
        let manifest = json!({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": CONFIG, "digest": sha256(&config), "size": config.len()},
            "layers": []});
        let manifest = serde_json::to_vec(&manifest).unwrap();
        let digest = sha256(&manifest);
        let cooling = image.days_ago < cooldown_days;
        paths.insert(
            format!("/v2/app/blobs/{}", sha256(&config)),
            (CONFIG, config, false),
        );
        for reference in [image.tag, digest.as_str()] {
            let stored = (OCI_MANIFEST, manifest.clone(), cooling);
            paths.insert(format!("/v2/app/manifests/{reference}"), stored);
        }
        digests.insert(image.tag, digest);
    }
    let names: Vec<&str> = images.iter().map(|i| i.tag).collect();
    let list = serde_json::to_vec(&json!({"name": "app", "tags": names})).unwrap();
    paths.insert(
        "/v2/app/tags/list".into(),
        ("application/json", list, false),
    );
    let paths = Arc::new(paths);
    let server = FaultServer::start(move |seen: &Seen| answer(&paths, seen)).await;
    (server, digests)
}

fn answer(paths: &HashMap<String, Stored>, seen: &Seen) -> Reply {
    // A HEAD gets the status and headers alone: the server writes no body for it.
    match paths.get(seen.path()) {
        Some((_, _, true)) => Reply::json(
            403,
            json!({"errors": [{"code": "DENIED", "message": DENIED}]}),
        ),
        Some((kind, body, false)) => Reply::status(200)
            .header("Content-Type", kind)
            .header("Docker-Content-Digest", &sha256(body))
            .body(body.clone()),
        None if seen.path() == "/v2/" => Reply::status(200),
        None => Reply::json(404, json!({"errors": [{"code": "MANIFEST_UNKNOWN"}]})),
    }
}
