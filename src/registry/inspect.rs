//! What an image says about itself, for the election gates (docs/imagepolicy.md, "Gated
//! election"): its digest, when it was created, and which platforms it provides.
//!
//! A single manifest: the `org.opencontainers.image.created` annotation, else its config's
//! `created`, and the config's `os`/`architecture`/`variant`. An index: the platforms its
//! entries name (attestation entries, `unknown/unknown`, skipped); its own creation annotation,
//! else each platform image's, read as for a single manifest, for at most
//! [`MAX_DATED_PLATFORMS`] of them. Requests: one for a manifest with the annotation, two
//! without; for an index, one plus one or two per platform image.

use super::fetch::Manifest;
use super::{ImageReference, RegistryClient, RegistryError};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Platform images of an index read for their creation time; beyond, they are undated.
pub const MAX_DATED_PLATFORMS: usize = 16;
/// Platforms kept from an index.
pub const MAX_INDEX_PLATFORMS: usize = 64;
/// An image config is read up to this size (real ones are a few KiB; history can add some).
pub const MAX_CONFIG_BYTES: usize = 4 << 20;

const CREATED_ANNOTATION: &str = "org.opencontainers.image.created";

/// A platform an image provides: `(os, architecture, variant)`, and that platform image's
/// creation time (Unix seconds) when known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InspectedPlatform {
    pub os: String,
    pub architecture: String,
    pub variant: Option<String>,
    pub created: Option<i64>,
}

/// What [`RegistryClient::inspect`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inspected {
    pub digest: String,
    /// The image's own creation time: a single manifest's, or an index's annotation.
    pub created: Option<i64>,
    pub platforms: Vec<InspectedPlatform>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Parsed {
    #[serde(default)]
    config: Option<Descriptor>,
    #[serde(default)]
    manifests: Option<Vec<Descriptor>>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    #[serde(default)]
    digest: String,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    platform: Option<PlatformField>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
struct PlatformField {
    #[serde(default)]
    os: String,
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    variant: Option<String>,
}

#[derive(Deserialize, Default)]
struct Config {
    #[serde(default)]
    created: Option<String>,
    #[serde(default)]
    os: String,
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    variant: Option<String>,
}

impl RegistryClient {
    /// Reads what `reference` (a tag or digest) names; `Ok(None)`: no such manifest.
    pub async fn inspect(
        &self,
        image: &ImageReference,
        reference: &str,
    ) -> Result<Option<Inspected>, RegistryError> {
        let Some(top) = self.manifest(image, reference).await? else {
            return Ok(None);
        };
        self.inspect_manifest(image, top).await.map(Some)
    }

    /// [`RegistryClient::inspect`] of a manifest already fetched (e.g. by tag, for its digest).
    pub async fn inspect_manifest(
        &self,
        image: &ImageReference,
        top: Manifest,
    ) -> Result<Inspected, RegistryError> {
        let parsed = parse(image, &top)?;
        let Some(entries) = parsed.manifests else {
            let (created, platform) = self.read_image(image, &top, parsed).await?;
            return Ok(Inspected {
                digest: top.digest,
                created,
                platforms: platform.into_iter().collect(),
            });
        };
        let created = parsed
            .annotations
            .get(CREATED_ANNOTATION)
            .and_then(|t| time(t));
        let mut platforms = Vec::new();
        for entry in entries.into_iter().filter(is_image_entry) {
            if platforms.len() == MAX_INDEX_PLATFORMS {
                break;
            }
            let p = entry.platform.unwrap_or_default();
            let mut platform = InspectedPlatform {
                os: p.os,
                architecture: p.architecture,
                variant: p.variant,
                created: None,
            };
            if created.is_none() && platforms.len() < MAX_DATED_PLATFORMS {
                if let Some(child) = self.manifest(image, &entry.digest).await? {
                    let parsed = parse(image, &child)?;
                    platform.created = self.read_image(image, &child, parsed).await?.0;
                }
            }
            platforms.push(platform);
        }
        Ok(Inspected {
            digest: top.digest,
            created,
            platforms,
        })
    }

    /// A single image's creation time and platform: the annotation, else the config.
    async fn read_image(
        &self,
        image: &ImageReference,
        manifest: &Manifest,
        parsed: Parsed,
    ) -> Result<(Option<i64>, Option<InspectedPlatform>), RegistryError> {
        let annotated = parsed
            .annotations
            .get(CREATED_ANNOTATION)
            .and_then(|t| time(t));
        let Some(config) = parsed.config.filter(|c| !c.digest.is_empty()) else {
            return Ok((annotated, None));
        };
        if config.size.is_some_and(|s| s > MAX_CONFIG_BYTES as u64) {
            return Err(invalid(
                image,
                manifest,
                format!(
                    "the image config is {} bytes; at most {MAX_CONFIG_BYTES} are read",
                    config.size.unwrap_or(0)
                ),
            ));
        }
        let bytes = self.blob(image, &config.digest, MAX_CONFIG_BYTES).await?;
        // A config that is not an image config (an artifact's) names no platform or time.
        let config: Config = serde_json::from_slice(&bytes).unwrap_or_default();
        let created = annotated.or_else(|| config.created.as_deref().and_then(time));
        let platform = (!config.os.is_empty()).then_some(InspectedPlatform {
            os: config.os,
            architecture: config.architecture,
            variant: config.variant,
            created,
        });
        Ok((created, platform))
    }
}

fn parse(image: &ImageReference, manifest: &Manifest) -> Result<Parsed, RegistryError> {
    serde_json::from_slice(&manifest.bytes)
        .map_err(|e| invalid(image, manifest, format!("the manifest does not parse: {e}")))
}

fn invalid(image: &ImageReference, manifest: &Manifest, detail: String) -> RegistryError {
    RegistryError::InvalidResponse {
        method: "GET",
        url: format!("{}@{}", image.canonical(), manifest.digest),
        host: image.registry().into(),
        detail,
    }
}

/// An index entry for an image of some platform: not an attestation or signature manifest.
fn is_image_entry(entry: &Descriptor) -> bool {
    let unknown = entry
        .platform
        .as_ref()
        .is_none_or(|p| p.os == "unknown" || p.os.is_empty());
    !unknown && !entry.annotations.contains_key("vnd.docker.reference.type")
}

/// Unix seconds of an RFC 3339 time; anything else is no time. So is a time at or before the
/// Unix epoch: reproducible builds write 1970-01-01 or Go's zero time, which says nothing of
/// the image's age (a minimum age then fails closed, rather than passing every such image).
fn time(text: &str) -> Option<i64> {
    text.trim()
        .parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_second())
        .filter(|s| *s > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_only() {
        assert_eq!(time("2024-01-02T03:04:05Z"), Some(1_704_164_645));
        assert_eq!(
            time("2024-01-02T03:04:05.123456789+01:00"),
            Some(1_704_161_045)
        );
        assert_eq!(time("yesterday"), None);
        assert_eq!(time("0001-01-01T00:00:00Z"), None, "Go's zero time");
        assert_eq!(time("1970-01-01T00:00:00Z"), None, "SOURCE_DATE_EPOCH=0");
    }

    #[test]
    fn attestations_are_not_platforms() {
        let entry = |os: &str, reference: bool| Descriptor {
            platform: Some(PlatformField {
                os: os.into(),
                architecture: "amd64".into(),
                variant: None,
            }),
            annotations: if reference {
                [(
                    "vnd.docker.reference.type".to_string(),
                    "attestation-manifest".to_string(),
                )]
                .into()
            } else {
                BTreeMap::new()
            },
            ..Default::default()
        };
        assert!(is_image_entry(&entry("linux", false)));
        assert!(!is_image_entry(&entry("unknown", false)));
        assert!(!is_image_entry(&entry("linux", true)));
        assert!(!is_image_entry(&Descriptor::default()));
    }
}
