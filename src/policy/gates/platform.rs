//! An OCI platform as `spec.platforms` names it and as images describe it.

use super::MAX_PLATFORM_LEN;
use std::fmt;

/// An OCI platform, `os/architecture[/variant]`, normalised as containerd does: `aarch64` is
/// `arm64`, `x86_64` is `amd64`, `arm64` without a variant is `arm64/v8`, `arm` is `arm/v7`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Platform {
    pub os: String,
    pub architecture: String,
    pub variant: Option<String>,
}

impl Platform {
    /// Parses `os/arch[/variant]` as written in `spec.platforms`.
    pub fn parse(text: &str) -> Result<Platform, String> {
        if text.len() > MAX_PLATFORM_LEN {
            return Err(format!(
                "platform '{}…' is longer than {MAX_PLATFORM_LEN} bytes",
                text.chars().take(MAX_PLATFORM_LEN).collect::<String>()
            ));
        }
        let part = |p: &str| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
        };
        let parts: Vec<&str> = text.split('/').collect();
        match parts.as_slice() {
            [os, arch] if part(os) && part(arch) => Ok(Platform::new(os, arch, None)),
            [os, arch, variant] if part(os) && part(arch) && part(variant) => {
                Ok(Platform::new(os, arch, Some(variant)))
            }
            _ => Err(format!(
                "platform '{text}' is not os/architecture[/variant], e.g. linux/amd64 or linux/arm64/v8"
            )),
        }
    }

    /// A platform as an image describes it (index entry or config), normalised.
    pub fn new(os: &str, architecture: &str, variant: Option<&str>) -> Platform {
        let os = os.to_ascii_lowercase();
        let architecture = match architecture.to_ascii_lowercase().as_str() {
            "aarch64" => "arm64".to_string(),
            "x86_64" | "x86-64" => "amd64".to_string(),
            "i386" | "i686" => "386".to_string(),
            other => other.to_string(),
        };
        let variant = variant
            .filter(|v| !v.is_empty())
            .map(str::to_ascii_lowercase)
            .or_else(|| match architecture.as_str() {
                "arm64" => Some("v8".into()),
                "arm" => Some("v7".into()),
                _ => None,
            })
            .filter(|v| !(architecture == "amd64" && v == "v1"));
        Platform {
            os,
            architecture,
            variant,
        }
    }

    /// Whether an image for `offered` serves this (required) platform: same OS and
    /// architecture, and the same variant when this one names a variant that is not the
    /// architecture's default.
    pub fn served_by(&self, offered: &Platform) -> bool {
        self.os == offered.os
            && self.architecture == offered.architecture
            && (self.variant.is_none() || self.variant == offered.variant)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(variant) = &self.variant {
            write!(f, "/{variant}")?;
        }
        Ok(())
    }
}
