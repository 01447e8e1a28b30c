//! Signatures attached to an image as OCI 1.1 referrers (docs/imagepolicy.md, "spec.verify"):
//! the referrers API (`GET /v2/<name>/referrers/<digest>`, asking for one artifact type), or,
//! where a registry has none or answers otherwise (400, 404, 406, or a 200 that is no OCI
//! index, as go-containerregistry reads it), the referrers tag schema (`sha256-<hex>`, an index
//! the signing tool keeps up to date). Each signature artifact is a manifest whose first layer
//! holds the signature (a Sigstore bundle, a notation envelope). Bounded: [`MAX_REFERRER_PAGES`]
//! pages of at most [`MAX_REFERRER_ENTRIES`] entries in all, at most
//! [`super::MAX_SIGNATURES`] signatures, at most `MAX_FETCHED` artifact manifests fetched to
//! find them, each layer at most `limit` bytes.

use super::super::body::status_error;
use super::super::client::{RegistryClient, Target};
use super::super::describe::url_host;
use super::super::fetch::is_sha256;
use super::super::registries::IDLE_AFTER;
use super::super::scope::{AskedFor, Route};
use super::super::RegistryError;
use super::MAX_SIGNATURES;
use crate::reference::ImageReference;
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use std::time::Instant;

/// Notation's signature artifacts.
pub const NOTATION_SIGNATURE: &str = "application/vnd.cncf.notary.signature";
/// The config of an artifact without one: a registry that reports `config.mediaType` as the
/// artifact type (not the manifest's `artifactType`, as the spec asks) reports this.
const EMPTY_CONFIG: &str = "application/vnd.oci.empty.v1+json";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// The annotation cosign v3 sets on each bundle artifact it writes: the statement's predicate
/// type. Signatures and attestations share one artifact type; this tells them apart unread.
const BUNDLE_PREDICATE: &str = "dev.sigstore.bundle.predicateType";
/// Pages of a referrers listing followed (its `Link: <...>; rel="next"`, on the registry's
/// own origin), and the entries they may list in all.
pub const MAX_REFERRER_PAGES: usize = 8;
pub const MAX_REFERRER_ENTRIES: usize = 1024;
/// Artifact manifests fetched per image, signatures or not.
pub(crate) const MAX_FETCHED: usize = 2 * MAX_SIGNATURES;

/// One signature artifact: its first layer's media type and bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Referrer {
    pub digest: String,
    pub media_type: String,
    pub bytes: Vec<u8>,
}

/// An index's entries, or an artifact manifest, as far as discovery reads them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Listing {
    #[serde(default)]
    manifests: Vec<Descriptor>,
}

/// One page of a referrers listing, as read.
struct Page {
    manifests: Vec<Descriptor>,
    filtered: bool,
    next: Option<reqwest::Url>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    #[serde(default)]
    digest: String,
    #[serde(default)]
    media_type: String,
    #[serde(default)]
    artifact_type: Option<String>,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    annotations: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Artifact {
    #[serde(default)]
    annotations: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    artifact_type: Option<String>,
    config: Option<Descriptor>,
    #[serde(default)]
    layers: Vec<Descriptor>,
    /// What it is attached to: read for the tag schema's entries, which no registry vouches
    /// for.
    subject: Option<Descriptor>,
}

/// An answer about one artifact that says nothing of the registry: malformed, over its bound,
/// not hashing to its digest, or absent.
fn unreadable(err: &RegistryError) -> bool {
    match err {
        RegistryError::InvalidResponse { .. } => true,
        RegistryError::Status { status_code, .. } => matches!(status_code, 400 | 403 | 404 | 410),
        _ => false,
    }
}

/// An artifact its annotations say is an attestation of a predicate not `wanted` (a bundle of
/// another predicate than a signature's or those the policy's attestations name): skipped unread, so that an image's many attestations neither take the
/// [`MAX_FETCHED`] requests nor the [`MAX_SIGNATURES`] places its signatures need. A shortcut
/// that cannot elect: what an honest annotation skips would be refused by its statement
/// (`verify/bundle/statement.rs`), what is read is judged by its statement whatever its
/// annotation says, and a lying registry only hides a signature, as it could by not listing it.
fn attestation(
    annotations: &std::collections::BTreeMap<String, String>,
    wanted: &[String],
) -> bool {
    annotations.get(BUNDLE_PREDICATE).is_some_and(|p| {
        p != crate::verify::bundle::statement::SIGNING_PREDICATE && !wanted.contains(p)
    })
}

/// The referrers tag schema's tag for `digest`: `sha256-<hex>`.
pub fn referrers_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1)
}

impl RegistryClient {
    /// The signature artifacts of type `artifact_type` attached to `digest`, each as its first
    /// layer, with the attestations of the `wanted` predicate types. Requests: the listing
    /// (and its fallback tag when the API is absent), then one manifest and one blob per
    /// artifact.
    pub async fn referrers(
        &self,
        image: &ImageReference,
        digest: &str,
        (artifact_type, wanted): (&str, &[String]),
        limit: usize,
    ) -> Result<Vec<Referrer>, RegistryError> {
        if !is_sha256(digest) {
            return Ok(Vec::new());
        }
        let (entries, filtered, tagged) = self.listing(image, digest, artifact_type).await?;
        let mut found = Vec::new();
        // Artifacts fetched to be sure of their type count too: a listing of many other
        // artifacts costs a bounded number of requests.
        let mut fetched = 0;
        for entry in entries {
            if found.len() == MAX_SIGNATURES || fetched == MAX_FETCHED {
                break;
            }
            let declared = entry.artifact_type.as_deref().unwrap_or_default();
            // Only an artifact whose listed type may be wrong is fetched to be sure.
            let unsure = !filtered && (declared.is_empty() || declared == EMPTY_CONFIG);
            if (declared != artifact_type && !unsure) || attestation(&entry.annotations, wanted) {
                continue;
            }
            if !is_sha256(&entry.digest) || !entry.media_type.contains("manifest") {
                continue;
            }
            fetched += 1;
            let kind = (artifact_type, wanted);
            let Some(artifact) = self
                .artifact(image, &entry.digest, digest, kind, tagged)
                .await?
            else {
                continue;
            };
            let Some(layer) = artifact.layers.first() else {
                continue;
            };
            if layer.size > limit as u64 {
                tracing::debug!(
                    referrer = %entry.digest,
                    size = layer.size,
                    "referrer skipped: over the {limit}-byte limit of a signature"
                );
                continue;
            }
            let bytes = match self.blob(image, &layer.digest, limit).await {
                Ok(bytes) => bytes,
                Err(err) if unreadable(&err) => {
                    tracing::debug!(referrer = %entry.digest, error = %err, "referrer skipped");
                    continue;
                }
                Err(err) => return Err(err),
            };
            found.push(Referrer {
                digest: entry.digest,
                media_type: layer.media_type.clone(),
                bytes,
            });
        }
        Ok(found)
    }

    /// The artifact manifest `at`, when it is one of `artifact_type` and not an attestation of
    /// a type not `wanted`, attached to `digest` when listed by the tag schema (`tagged`).
    /// One that cannot be read is skipped, not fatal: one oversized attestation of the
    /// signature's type failed the whole digest, and the walk stopped before a valid lower tag.
    /// What the registry says of itself (throttling, an outage) still ends the read.
    async fn artifact(
        &self,
        image: &ImageReference,
        at: &str,
        digest: &str,
        (artifact_type, wanted): (&str, &[String]),
        tagged: bool,
    ) -> Result<Option<Artifact>, RegistryError> {
        let manifest = match self.manifest(image, at).await {
            Ok(Some(manifest)) => manifest,
            Ok(None) => return Ok(None),
            Err(err) if unreadable(&err) => {
                tracing::debug!(referrer = %at, error = %err, "referrer skipped");
                return Ok(None);
            }
            Err(err) => return Err(err),
        };
        let Ok(artifact) = serde_json::from_slice::<Artifact>(&manifest.bytes) else {
            return Ok(None);
        };
        let config_type = artifact.config.as_ref().map(|c| c.media_type.as_str());
        if artifact.artifact_type.as_deref().or(config_type) != Some(artifact_type)
            || attestation(&artifact.annotations, wanted)
        {
            return Ok(None);
        }
        // A tag schema's entry counts only when attached to this image: GitLab resolves the
        // tag `sha256-<hex>` to the image itself, whose index lists its platforms.
        let subject = artifact.subject.as_ref().map(|s| s.digest.as_str());
        Ok((!tagged || subject == Some(digest)).then_some(artifact))
    }

    /// The referrers of `digest`, whether the registry applied the artifact type filter, and
    /// whether they come from the tag schema.
    /// As go-containerregistry (which cosign, Flux and Kyverno use) reads them: a 200 that is
    /// an OCI index is the listing; a 400, 404 or 406, or a 200 of another type (ghcr.io
    /// answers `application/json` with an empty list), sends to the referrers tag schema.
    async fn listing(
        &self,
        image: &ImageReference,
        digest: &str,
        artifact_type: &str,
    ) -> Result<(Vec<Descriptor>, bool, bool), RegistryError> {
        let creds = self.options.credentials.as_ref();
        let route = AskedFor::new(
            Route::host(image.registry(), self.path),
            image.repository(),
            creds,
        );
        let absent = self.shared.no_referrers_api.get(&route);
        if absent.is_some_and(|at| at.elapsed() < IDLE_AFTER) {
            return Ok((self.tag_schema(image, digest).await?, false, true));
        }
        let path = format!(
            "/v2/{}/referrers/{digest}?artifactType={}",
            image.repository(),
            artifact_type.replace('+', "%2B")
        );
        let mut target = Target::Path(&path);
        let (mut entries, mut filtered) = (Vec::new(), true);
        for page in 0..MAX_REFERRER_PAGES {
            let (url, response) = self
                .send(Method::GET, image, target, Some(OCI_INDEX))
                .await?;
            let host = url_host(&url);
            let is_index = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split(';').next())
                .is_some_and(|v| v.trim() == OCI_INDEX);
            match response.status() {
                StatusCode::OK if is_index => {}
                // No referrers API (or not one that answers as one): the tag schema, which
                // the signing tool keeps. A later page's odd answer is the registry's error.
                StatusCode::OK
                | StatusCode::BAD_REQUEST
                | StatusCode::NOT_FOUND
                | StatusCode::NOT_ACCEPTABLE
                    if page == 0 =>
                {
                    drop(response); // its slot of the host, before the tag schema asks for one
                    self.shared.no_referrers_api.put(route, Instant::now());
                    return Ok((self.tag_schema(image, digest).await?, false, true));
                }
                _ => {
                    return Err(
                        status_error(Method::GET, &url, &host, response, &self.options).await,
                    )
                }
            }
            let page = self.read_page(&url, &host, response).await?;
            filtered &= page.filtered;
            entries.extend(page.manifests);
            if entries.len() > MAX_REFERRER_ENTRIES {
                return Err(RegistryError::InvalidResponse {
                    method: "GET",
                    url: url.to_string(),
                    host,
                    detail: format!(
                        "the referrers listing has over {MAX_REFERRER_ENTRIES} entries"
                    ),
                });
            }
            match page.next {
                Some(next) => target = Target::Url(next),
                None => return Ok((entries, filtered, false)),
            }
        }
        Err(RegistryError::InvalidResponse {
            method: "GET",
            url: path,
            host: image.registry().to_string(),
            detail: format!("the referrers listing has over {MAX_REFERRER_PAGES} pages"),
        })
    }

    /// One page of a referrers listing (an OCI index answered with 200): its entries, whether
    /// the registry applied the artifact type filter, and the next page on its origin.
    async fn read_page(
        &self,
        url: &reqwest::Url,
        host: &str,
        response: reqwest::Response,
    ) -> Result<Page, RegistryError> {
        let filtered = response
            .headers()
            .get("OCI-Filters-Applied")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|f| f.trim() == "artifactType"));
        let next = super::super::tags::next_link(url, response.headers());
        let limit = super::super::digest::MAX_MANIFEST_BYTES;
        let bytes = self.read_budgeted(url, host, response, limit).await?;
        let invalid = |detail: String| RegistryError::InvalidResponse {
            method: "GET",
            url: url.to_string(),
            host: host.to_string(),
            detail,
        };
        let listing: Listing = serde_json::from_slice(&bytes)
            .map_err(|e| invalid(format!("the referrers answer is not an image index: {e}")))?;
        Ok(Page {
            manifests: listing.manifests,
            filtered,
            next: next.map_err(invalid)?,
        })
    }

    /// The referrers tag schema's index of `digest`, when there is one: not the image itself,
    /// which GitLab serves for that tag (its index's children are no referrers).
    async fn tag_schema(
        &self,
        image: &ImageReference,
        digest: &str,
    ) -> Result<Vec<Descriptor>, RegistryError> {
        use sha2::Digest;
        let tagged = self.manifest(image, &referrers_tag(digest)).await?;
        let not_the_image = tagged.filter(|m| {
            let own = format!("sha256:{:x}", sha2::Sha256::digest(&m.bytes));
            own != digest
        });
        Ok(not_the_image
            .and_then(|m| serde_json::from_slice::<Listing>(&m.bytes).ok())
            .map(|l| l.manifests)
            .unwrap_or_default())
    }
}
