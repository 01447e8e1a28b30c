//! Reading a manifest and a blob, each checked against its digest: what a gated election
//! inspects (an image's config, an index's platform manifests, a cosign signature's payload).
//! Sizes are bounded before anything is kept (docs/security.md).

use super::body::{read_limited_with, status_error};
use super::budget::Held;
use super::client::{RegistryClient, Target};
use super::describe::url_host;
use super::digest::{check_manifest, MAX_MANIFEST_BYTES};
use super::{RegistryError, MANIFEST_ACCEPT};
use crate::reference::ImageReference;
use reqwest::{Method, StatusCode};
use sha2::{Digest, Sha256};

/// A manifest as the registry served it, with the digest of its bytes.
#[derive(Clone, Debug)]
pub struct Manifest {
    pub digest: String,
    pub media_type: String,
    pub bytes: Vec<u8>,
}

impl Manifest {
    /// The media type the registry serves it as (`Content-Type`), else the one its body
    /// declares: what a descriptor of it names.
    pub fn declared_type(&self) -> String {
        let header = self.media_type.split(';').next().unwrap_or_default().trim();
        if !header.is_empty() && header != "application/json" {
            return header.to_string();
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Declared {
            #[serde(default)]
            media_type: String,
        }
        serde_json::from_slice::<Declared>(&self.bytes)
            .map(|d| d.media_type)
            .unwrap_or_default()
    }
}

impl RegistryClient {
    /// A GET's body within `limit`, charged to the process-wide memory budget while it is read,
    /// as a tag page is: a manifest, a config or a signature read for a gate holds memory as
    /// long as a slow registry makes it last, and many run at once in the background.
    pub(super) async fn read_budgeted(
        &self,
        url: &reqwest::Url,
        host: &str,
        response: reqwest::Response,
        limit: usize,
    ) -> Result<Vec<u8>, RegistryError> {
        let memory = &self.shared.memory;
        let mut held = Held::for_tenant(self.options.tenant.as_deref());
        let stopped = held.stopped();
        let grow = |bytes| memory.reserve(&mut held, bytes);
        read_limited_with(&Method::GET, url, host, response, limit, grow, stopped).await
    }

    /// GETs the manifest `reference` (a tag or a digest) names; `Ok(None)` when the registry
    /// has no such manifest (404). A manifest asked for by digest must hash to it.
    pub async fn manifest(
        &self,
        image: &ImageReference,
        reference: &str,
    ) -> Result<Option<Manifest>, RegistryError> {
        let path = format!("/v2/{}/manifests/{reference}", image.repository());
        if reference.contains(':') && !is_sha256(reference) {
            return Err(RegistryError::InvalidResponse {
                method: "GET",
                url: format!("{}{path}", image.registry()),
                host: image.registry().into(),
                detail: format!("'{reference}' is not a sha256 digest; only those are checked"),
            });
        }
        let (url, response) = self
            .send(
                Method::GET,
                image,
                Target::Path(&path),
                Some(MANIFEST_ACCEPT),
            )
            .await?;
        let host = url_host(&url);
        match response.status() {
            StatusCode::OK => {}
            StatusCode::NOT_FOUND => return Ok(None),
            _ => return Err(status_error(Method::GET, &url, &host, response, &self.options).await),
        }
        let media_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let bytes = self
            .read_budgeted(&url, &host, response, MAX_MANIFEST_BYTES)
            .await?;
        let invalid = |detail: String| RegistryError::InvalidResponse {
            method: "GET",
            url: url.to_string(),
            host: host.clone(),
            detail,
        };
        check_manifest(&media_type, &bytes).map_err(invalid)?;
        let digest = sha256(&bytes);
        // A tag has no ':'; a digest (sha256, checked before asking) must be the bytes'.
        if reference.contains(':') && reference != digest {
            return Err(invalid(format!(
                "the manifest's bytes hash to {digest}, not to the digest asked for"
            )));
        }
        Ok(Some(Manifest {
            digest,
            media_type,
            bytes,
        }))
    }

    /// GETs the blob `digest` (`sha256:` only), at most `limit` bytes, and checks its hash.
    pub async fn blob(
        &self,
        image: &ImageReference,
        digest: &str,
        limit: usize,
    ) -> Result<Vec<u8>, RegistryError> {
        let path = format!("/v2/{}/blobs/{digest}", image.repository());
        let url_text = format!("{}{path}", image.registry());
        let invalid = |url: String, host: String, detail: String| RegistryError::InvalidResponse {
            method: "GET",
            url,
            host,
            detail,
        };
        if !is_sha256(digest) {
            let detail = format!("'{digest}' is not a sha256 digest");
            return Err(invalid(url_text, image.registry().into(), detail));
        }
        let (url, response) = self
            .send(Method::GET, image, Target::Path(&path), None)
            .await?;
        let host = url_host(&url);
        if response.status() != StatusCode::OK {
            return Err(status_error(Method::GET, &url, &host, response, &self.options).await);
        }
        let bytes = self.read_budgeted(&url, &host, response, limit).await?;
        let got = sha256(&bytes);
        if got != digest {
            let detail = format!("the blob hashes to {got}, not to its digest");
            return Err(invalid(url.to_string(), host, detail));
        }
        Ok(bytes)
    }
}

pub(crate) fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// `sha256:` and 64 lower-case hex digits.
pub(crate) fn is_sha256(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::Manifest;

    /// A descriptor names the type the registry serves (its parameters dropped), else, behind a
    /// generic or missing Content-Type, the type the body declares.
    #[test]
    fn a_manifest_is_described_by_its_served_type_else_its_declared_one() {
        let manifest = |header: &str, body: &str| Manifest {
            digest: String::new(),
            media_type: header.into(),
            bytes: body.as_bytes().to_vec(),
        };
        let body = r#"{"mediaType": "application/vnd.oci.image.index.v1+json"}"#;
        let served = "application/vnd.oci.image.manifest.v1+json; charset=utf-8";
        assert_eq!(
            manifest(served, body).declared_type(),
            "application/vnd.oci.image.manifest.v1+json"
        );
        for generic in ["", "application/json"] {
            assert_eq!(
                manifest(generic, body).declared_type(),
                "application/vnd.oci.image.index.v1+json"
            );
        }
        assert_eq!(manifest("", "{}").declared_type(), "");
    }
}
