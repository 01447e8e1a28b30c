//! The digest of a tag (docs/imagepolicy.md, docs/compatibility.md): `HEAD /v2/<repo>/manifests/<tag>`
//! with every manifest type in `Accept` (an OCI index is a 404 without its type, a Docker list
//! resolves to one platform's manifest without its own), the `Docker-Content-Digest` header.
//! Beyond Flux: a registry that omits the header, or refuses HEAD, is asked with GET and the
//! digest is the SHA-256 of the manifest bytes (a 403 or 451 is asked again with GET too, for
//! the body that says why). Multi-arch tags give the index (list) digest.

use super::body::status_error;
use super::client::{RegistryClient, Target};
use super::describe::url_host;
use super::RegistryError;
use crate::reference::ImageReference;
use reqwest::{Method, Response, StatusCode};
use sha2::{Digest, Sha256};

/// Every manifest media type, index types first.
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
application/vnd.docker.distribution.manifest.list.v2+json, \
application/vnd.oci.image.manifest.v1+json, \
application/vnd.docker.distribution.manifest.v2+json, \
application/vnd.docker.distribution.manifest.v1+prettyjws, \
application/vnd.docker.distribution.manifest.v1+json";

/// Manifests are at most 4 MiB (the distribution spec's recommended limit).
pub(crate) const MAX_MANIFEST_BYTES: usize = 4 << 20;

impl RegistryClient {
    /// The digest `tag` points at, e.g. `sha256:…`.
    pub async fn digest(&self, image: &ImageReference, tag: &str) -> Result<String, RegistryError> {
        let valid_tag = tag.len() <= 128
            && tag.bytes().enumerate().all(|(i, b)| {
                b.is_ascii_alphanumeric() || b == b'_' || (i > 0 && (b == b'.' || b == b'-'))
            })
            && !tag.is_empty();
        if !valid_tag {
            return Err(RegistryError::InvalidTag(tag.into()));
        }
        let path = format!("/v2/{}/manifests/{tag}", image.repository());
        let (url, head) = self
            .send(
                Method::HEAD,
                image,
                Target::Path(&path),
                Some(MANIFEST_ACCEPT),
            )
            .await?;
        let host = url_host(&url);
        match head.status() {
            StatusCode::OK => {
                if let Some(digest) = header_digest(&head) {
                    return valid(digest, &url, &host);
                }
            }
            // HEAD refused: fall back to GET as for a missing header. Forbidden: a HEAD has no
            // body, and the GET's says why (a registry policy's DENIED, or credentials).
            StatusCode::METHOD_NOT_ALLOWED
            | StatusCode::NOT_IMPLEMENTED
            | StatusCode::FORBIDDEN
            | StatusCode::UNAVAILABLE_FOR_LEGAL_REASONS => {}
            _ => return Err(status_error(Method::HEAD, &url, &host, head, &self.options).await),
        }
        drop(head); // its slot of the host, before the GET asks for one
        let (url, get) = self
            .send(Method::GET, image, Target::Url(url), Some(MANIFEST_ACCEPT))
            .await?;
        if get.status() != StatusCode::OK {
            return Err(status_error(Method::GET, &url, &host, get, &self.options).await);
        }
        let media_type = get
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = self
            .read_budgeted(&url, &host, get, MAX_MANIFEST_BYTES)
            .await?;
        check_manifest(&media_type, &body).map_err(|detail| RegistryError::InvalidResponse {
            method: "GET",
            url: url.to_string(),
            host: host.clone(),
            detail,
        })?;
        Ok(format!("sha256:{}", hex(&Sha256::digest(&body))))
    }
}

/// A digest is only taken from a manifest: an OCI or Docker manifest or index, by media type
/// (the `Content-Type`, or the body's `mediaType` when the header is generic JSON), whose body
/// parses as one. An HTML login page, a proxy's error page or a truncated body is an error.
pub(crate) fn check_manifest(content_type: &str, body: &[u8]) -> Result<(), String> {
    use serde::de::IgnoredAny;
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Manifest {
        schema_version: u32,
        #[serde(default)]
        media_type: Option<String>,
        // Only the shape is checked: nothing is built for the elements (docs/security.md).
        #[serde(default)]
        config: Option<IgnoredAny>,
        #[serde(default)]
        layers: Option<Vec<IgnoredAny>>,
        #[serde(default)]
        manifests: Option<Vec<IgnoredAny>>,
        #[serde(default)]
        fs_layers: Option<Vec<IgnoredAny>>,
    }
    let declared = content_type.split(';').next().unwrap_or_default().trim();
    let generic = declared.is_empty() || declared == "application/json";
    if !generic && !MANIFEST_ACCEPT.split(", ").any(|t| t == declared) {
        return Err(format!(
            "the answer is not a manifest (Content-Type '{declared}'); a login page or a proxy in the way?"
        ));
    }
    let manifest: Manifest = serde_json::from_slice(body).map_err(|e| {
        format!("the manifest does not parse ({e}); a truncated or non-manifest answer")
    })?;
    let media_type = manifest.media_type.as_deref().unwrap_or(declared);
    let known = media_type.is_empty()
        || media_type == "application/json"
        || MANIFEST_ACCEPT.split(", ").any(|t| t == media_type);
    let shaped = match manifest.schema_version {
        1 => manifest.fs_layers.is_some(),
        2 => {
            manifest.manifests.is_some() || (manifest.config.is_some() && manifest.layers.is_some())
        }
        _ => false,
    };
    if !known || !shaped {
        return Err(format!(
            "the answer is not an image manifest or index (schemaVersion {}, mediaType '{media_type}')",
            manifest.schema_version
        ));
    }
    Ok(())
}

fn header_digest(response: &Response) -> Option<String> {
    response
        .headers()
        .get("docker-content-digest")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// `algorithm:hex` with a known algorithm and the right length.
fn valid(digest: String, url: &reqwest::Url, host: &str) -> Result<String, RegistryError> {
    let ok = match digest.split_once(':') {
        Some(("sha256", hex)) => hex.len() == 64,
        Some(("sha512", hex)) => hex.len() == 128,
        _ => false,
    } && digest.split_once(':').is_some_and(|(_, h)| {
        h.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    });
    if ok {
        Ok(digest)
    } else {
        Err(RegistryError::InvalidResponse {
            method: "HEAD",
            url: url.to_string(),
            host: host.into(),
            detail: format!("Docker-Content-Digest '{digest}' is not a digest"),
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::check_manifest;

    #[test]
    fn only_manifests_give_a_digest() {
        let oci = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{},"layers":[]}"#;
        let index = br#"{"schemaVersion":2,"manifests":[]}"#;
        assert!(check_manifest("application/vnd.oci.image.manifest.v1+json", oci).is_ok());
        assert!(check_manifest("application/vnd.oci.image.index.v1+json", index).is_ok());
        assert!(check_manifest("application/json", oci).is_ok());
        assert!(check_manifest("", oci).is_ok());
        let html = b"<html><body>Please log in</body></html>";
        assert!(check_manifest("text/html; charset=utf-8", html)
            .unwrap_err()
            .contains("not a manifest"));
        assert!(check_manifest("application/json", html)
            .unwrap_err()
            .contains("does not parse"));
        let truncated = &oci[..oci.len() - 10];
        assert!(check_manifest("application/vnd.oci.image.manifest.v1+json", truncated).is_err());
        let other = br#"{"schemaVersion":2,"mediaType":"application/vnd.example+json","config":{},"layers":[]}"#;
        assert!(check_manifest("application/json", other).is_err());
        let shapeless = br#"{"schemaVersion":2}"#;
        assert!(check_manifest("application/vnd.oci.image.manifest.v1+json", shapeless).is_err());
    }
}
