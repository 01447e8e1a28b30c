//! The digest of a tag (flux-compat.md §4.7, decisions.md): `HEAD /v2/<repo>/manifests/<tag>`
//! with every manifest type in `Accept` (an OCI index is a 404 without its type, a Docker list
//! resolves to one platform's manifest without its own), the `Docker-Content-Digest` header.
//! Beyond Flux: a registry that omits the header, or refuses HEAD, is asked with GET and the
//! digest is the SHA-256 of the manifest bytes. Multi-arch tags give the index (list) digest.

use super::client::{read_limited, status_error, url_host, RegistryClient, Target};
use super::{ImageReference, RegistryError};
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
const MAX_MANIFEST_BYTES: usize = 4 << 20;

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
            // HEAD refused: fall back to GET as for a missing header.
            StatusCode::METHOD_NOT_ALLOWED | StatusCode::NOT_IMPLEMENTED => {}
            _ => {
                return Err(status_error(
                    Method::HEAD,
                    &url,
                    &host,
                    head,
                    self.options.credentials.is_some(),
                )
                .await)
            }
        }
        let (url, get) = self
            .send(Method::GET, image, Target::Url(url), Some(MANIFEST_ACCEPT))
            .await?;
        if get.status() != StatusCode::OK {
            return Err(status_error(
                Method::GET,
                &url,
                &host,
                get,
                self.options.credentials.is_some(),
            )
            .await);
        }
        let body = read_limited(&Method::GET, &url, &host, get, MAX_MANIFEST_BYTES).await?;
        Ok(format!("sha256:{}", hex(&Sha256::digest(&body))))
    }
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
