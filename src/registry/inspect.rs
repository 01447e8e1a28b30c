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
use super::{RegistryClient, RegistryError};
use crate::reference::ImageReference;
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
        let (created, planned) = match plan(parsed) {
            Plan::Image { annotated, config } => {
                let (created, platform) = self.read_image(image, &top, annotated, config).await?;
                return Ok(Inspected {
                    digest: top.digest,
                    created,
                    platforms: platform.into_iter().collect(),
                });
            }
            Plan::Index { created, platforms } => (created, platforms),
        };
        let mut platforms = Vec::with_capacity(planned.len());
        for (mut platform, dated) in planned {
            if let Some(digest) = dated {
                if let Some(child) = self.manifest(image, &digest).await? {
                    platform.created = match plan(parse(image, &child)?) {
                        Plan::Image { annotated, config } => {
                            self.read_image(image, &child, annotated, config).await?.0
                        }
                        // A nested index: its own annotation, no deeper.
                        Plan::Index { created, .. } => created,
                    };
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
        annotated: Option<i64>,
        config: Option<Descriptor>,
    ) -> Result<(Option<i64>, Option<InspectedPlatform>), RegistryError> {
        let Some(config) = config else {
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
        Ok(config_facts(&bytes, annotated))
    }
}

/// What a manifest says before any further read.
enum Plan {
    /// A single image: its annotated creation time, and the config to read (if it names one).
    Image {
        annotated: Option<i64>,
        config: Option<Descriptor>,
    },
    /// An index: its own creation time, and its image entries' platforms (at most
    /// [`MAX_INDEX_PLATFORMS`]), the first [`MAX_DATED_PLATFORMS`] with the digest to read
    /// their creation time from when the index has no time of its own.
    Index {
        created: Option<i64>,
        platforms: Vec<(InspectedPlatform, Option<String>)>,
    },
}

fn plan(parsed: Parsed) -> Plan {
    let created = parsed
        .annotations
        .get(CREATED_ANNOTATION)
        .and_then(|t| time(t));
    let Some(entries) = parsed.manifests else {
        let config = parsed.config.filter(|c| !c.digest.is_empty());
        return Plan::Image {
            annotated: created,
            config,
        };
    };
    let images = entries.into_iter().filter(is_image_entry);
    let platforms = images
        .take(MAX_INDEX_PLATFORMS)
        .enumerate()
        .map(|(i, entry)| {
            let p = entry.platform.unwrap_or_default();
            let platform = InspectedPlatform {
                os: p.os,
                architecture: p.architecture,
                variant: p.variant,
                created: None,
            };
            let dated = (created.is_none() && i < MAX_DATED_PLATFORMS).then_some(entry.digest);
            (platform, dated)
        })
        .collect();
    Plan::Index { created, platforms }
}

/// A config's platform and creation time (the manifest's annotation wins). A config that is
/// not an image config (an artifact's) names no platform or time.
fn config_facts(bytes: &[u8], annotated: Option<i64>) -> (Option<i64>, Option<InspectedPlatform>) {
    let config: Config = serde_json::from_slice(bytes).unwrap_or_default();
    let created = annotated.or_else(|| config.created.as_deref().and_then(time));
    let platform = (!config.os.is_empty()).then_some(InspectedPlatform {
        os: config.os,
        architecture: config.architecture,
        variant: config.variant,
        created,
    });
    (created, platform)
}

/// The inspection of a manifest and a config, without a registry (`fuzz.rs`): the platforms and
/// the children an index would have read, and a config's facts. Never a panic.
pub(super) fn inspect_offline(
    manifest: &[u8],
    config: &[u8],
) -> Option<(usize, usize, Option<i64>)> {
    let parsed: Parsed = serde_json::from_slice(manifest).ok()?;
    let (platforms, dated, annotated) = match plan(parsed) {
        Plan::Index { created, platforms } => {
            let dated = platforms.iter().filter(|(_, d)| d.is_some()).count();
            (platforms.len(), dated, created)
        }
        Plan::Image { annotated, .. } => (0, 0, annotated),
    };
    let (created, _) = config_facts(config, annotated);
    Some((platforms, dated, created))
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

    /// The gate reads' documented bounds (docs/security.md, "Gated election"), as numbers: a
    /// manifest or index and an image config 4 MiB, 64 platforms and 16 dated platform images
    /// an index, 32 artifact manifests fetched to find an image's 16 signatures.
    #[test]
    fn gate_reads_are_bounded_by_their_documented_numbers() {
        use crate::registry::digest::MAX_MANIFEST_BYTES;
        use crate::registry::signatures::referrers::MAX_FETCHED;
        assert_eq!((MAX_MANIFEST_BYTES, MAX_CONFIG_BYTES), (4 << 20, 4 << 20));
        assert_eq!((MAX_INDEX_PLATFORMS, MAX_DATED_PLATFORMS), (64, 16));
        assert_eq!(MAX_FETCHED, 32);
    }

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
