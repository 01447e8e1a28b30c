//! cosign's legacy layout's payload: a simple-signing document naming the digest and the
//! repository it was signed for (read from the `sha256-<hex>.sig` tag by
//! `registry::signatures::legacy`).

use super::refusal::{Check, Refused};
use crate::reference::ImageReference;
use serde::Deserialize;

const PAYLOAD_TYPE: &str = "cosign container image signature";

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

/// Checks a verified simple-signing payload: it names `digest` and `image`'s repository.
pub fn check_payload(payload: &[u8], image: &ImageReference, digest: &str) -> Result<(), Refused> {
    let subject = |reason: String| Check::Subject.refused(reason);
    let payload: Payload = serde_json::from_slice(payload).map_err(|e| {
        subject(format!(
            "a signed payload is not a simple-signing payload ({e})"
        ))
    })?;
    let critical = payload.critical;
    if critical.kind != PAYLOAD_TYPE {
        return Err(subject(format!(
            "a signed payload's type is '{}'",
            critical.kind
        )));
    }
    if critical.image.docker_manifest_digest != digest {
        return Err(subject(format!(
            "a signature is for {}, not this digest",
            critical.image.docker_manifest_digest
        )));
    }
    let named = ImageReference::parse(&critical.identity.docker_reference, false)
        .map(|r| r.canonical())
        .unwrap_or_default();
    if named != image.canonical() {
        return Err(subject(format!(
            "a signature names the repository '{}', not {}",
            critical.identity.docker_reference,
            image.canonical()
        )));
    }
    Ok(())
}
