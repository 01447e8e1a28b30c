//! The gates an elected tag must pass besides the ordering (docs/imagepolicy.md, "Gated
//! election"): a minimum age, a set of platforms, a valid signature. Pure: the facts about an
//! image (when it was created, which platforms it provides, what its signature check found)
//! come in as plain values; the walk that gathers them lives with the reconciler.

use std::fmt;
use std::time::Duration;

/// The most platforms a policy may require (a real list names two to five).
pub const MAX_PLATFORMS: usize = 16;
/// The longest platform string accepted (`linux/arm64/v8` is 14 bytes).
pub const MAX_PLATFORM_LEN: usize = 64;
/// The longest minimum age accepted: ten years. Beyond that nothing is ever eligible, and the
/// arithmetic on Unix seconds stays far from overflow.
pub const MAX_MIN_AGE: Duration = Duration::from_secs(10 * 366 * 24 * 3600);

/// The gates of one policy; `Gates::default()` is none (Flux's election).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gates {
    /// `spec.filterTags.minAge`, and how the spec wrote it (for messages).
    pub min_age: Option<(Duration, String)>,
    /// `spec.platforms`.
    pub platforms: Vec<Platform>,
    /// `spec.verify` is set: a valid signature is required.
    pub verify: bool,
}

impl Gates {
    /// Whether any gate is set: without one, election and requests are Flux's.
    pub fn any(&self) -> bool {
        self.min_age.is_some() || !self.platforms.is_empty() || self.verify
    }

    /// Whether the image's manifest must be read: for its creation time or its platforms.
    pub fn needs_image(&self) -> bool {
        self.min_age.is_some() || !self.platforms.is_empty()
    }
}

/// Which gate held a candidate back (the `gate` of `status.heldBack`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    MinAge,
    Platforms,
    Verify,
}

impl Gate {
    pub fn as_str(self) -> &'static str {
        match self {
            Gate::MinAge => "minAge",
            Gate::Platforms => "platforms",
            Gate::Verify => "verify",
        }
    }
}

/// Why a candidate is not eligible now, and (for `minAge`) from when it will be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    pub gate: Gate,
    pub reason: String,
    /// Unix seconds from which the gate passes, when time alone will open it.
    pub eligible_at: Option<i64>,
}

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

/// The image gates (platforms, then minimum age) for an image that provides `offered` and was
/// created at `created` (Unix seconds; `None`: the image says nothing, which fails closed).
pub fn check_image(
    gates: &Gates,
    created: Option<i64>,
    offered: &[Platform],
    now: i64,
) -> Result<(), Hold> {
    let missing: Vec<String> = gates
        .platforms
        .iter()
        .filter(|wanted| !offered.iter().any(|o| wanted.served_by(o)))
        .map(Platform::to_string)
        .collect();
    if !missing.is_empty() {
        let has = if offered.is_empty() {
            "none named".to_string()
        } else {
            offered
                .iter()
                .map(Platform::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(Hold {
            gate: Gate::Platforms,
            reason: format!("missing {} (has {has})", missing.join(", ")),
            eligible_at: None,
        });
    }
    let Some((min_age, written)) = &gates.min_age else {
        return Ok(());
    };
    let Some(created) = created else {
        return Err(Hold {
            gate: Gate::MinAge,
            reason: format!(
                "no creation time (neither the config's 'created' nor the \
                 org.opencontainers.image.created annotation); minAge {written} fails closed"
            ),
            eligible_at: None,
        });
    };
    let age = now.saturating_sub(created);
    let needed = min_age.as_secs() as i64;
    if age >= needed {
        return Ok(());
    }
    let reason = if age < 0 {
        format!(
            "created {} in the future, minAge {written}",
            short_age(-age)
        )
    } else {
        format!("{} old, minAge {written}", short_age(age))
    };
    Err(Hold {
        gate: Gate::MinAge,
        reason,
        eligible_at: Some(created.saturating_add(needed)),
    })
}

/// The creation time `minAge` looks at: the image's own (a single manifest's, or an index's
/// annotation), else the newest of the platform images the policy cares about (those serving
/// a required platform, or all without `spec.platforms`). `None` when one of them has no time:
/// an image is as young as its youngest part, and an undated part fails closed.
pub fn created_for(
    gates: &Gates,
    own: Option<i64>,
    platforms: &[(Platform, Option<i64>)],
) -> Option<i64> {
    if own.is_some() {
        return own;
    }
    let cared = platforms.iter().filter(|(offered, _)| {
        gates.platforms.is_empty() || gates.platforms.iter().any(|w| w.served_by(offered))
    });
    let mut newest: Option<i64> = None;
    for (_, created) in cared {
        let created = (*created)?;
        newest = Some(newest.map_or(created, |n| n.max(created)));
    }
    newest
}

/// A duration as people say it: `3h`, `2d4h`, `12m`, `40s` (whole units, rounded down).
pub fn short_age(seconds: i64) -> String {
    let seconds = seconds.max(0);
    let (d, h, m) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{seconds}s"),
        (0, 0, m) => format!("{m}m"),
        (0, h, _) => format!("{h}h"),
        (d, 0, _) => format!("{d}d"),
        (d, h, _) => format!("{d}d{h}h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Platform {
        Platform::parse(text).unwrap()
    }

    #[test]
    fn platforms_normalise_as_containerd_does() {
        assert_eq!(p("linux/arm64"), p("linux/arm64/v8"));
        assert_eq!(p("linux/arm64").to_string(), "linux/arm64/v8");
        assert_eq!(Platform::new("linux", "aarch64", None), p("linux/arm64"));
        assert_eq!(
            Platform::new("Linux", "x86_64", Some("v1")),
            p("linux/amd64")
        );
        assert!(p("linux/amd64").served_by(&Platform::new("linux", "amd64", Some("v3"))));
        assert!(!p("linux/arm/v6").served_by(&Platform::new("linux", "arm", None)));
        assert!(!p("linux/amd64").served_by(&p("windows/amd64")));
        for bad in [
            "linux",
            "linux/",
            "/amd64",
            "linux/amd64/v8/x",
            "linux/am d64",
            "",
        ] {
            assert!(Platform::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Platform::parse(&"x/".repeat(100))
            .unwrap_err()
            .contains("longer"));
    }

    #[test]
    fn image_gates_say_why() {
        let day = 86_400;
        let gates = Gates {
            min_age: Some((Duration::from_secs(7 * day as u64), "168h".into())),
            platforms: vec![p("linux/amd64"), p("linux/arm64")],
            verify: false,
        };
        let both = [p("linux/amd64"), p("linux/arm64")];
        let now = 100 * day;
        assert_eq!(check_image(&gates, Some(now - 8 * day), &both, now), Ok(()));
        let young = check_image(&gates, Some(now - 3 * 3600), &both, now).unwrap_err();
        assert_eq!(young.gate, Gate::MinAge);
        assert_eq!(young.reason, "3h old, minAge 168h");
        assert_eq!(young.eligible_at, Some(now - 3 * 3600 + 7 * day));
        let undated = check_image(&gates, None, &both, now).unwrap_err();
        assert!(undated.reason.contains("fails closed"), "{undated:?}");
        let one = check_image(&gates, Some(0), &both[..1], now).unwrap_err();
        assert_eq!(one.gate, Gate::Platforms);
        assert_eq!(one.reason, "missing linux/arm64/v8 (has linux/amd64)");
        let future = check_image(&gates, Some(now + 7200), &both, now).unwrap_err();
        assert_eq!(future.reason, "created 2h in the future, minAge 168h");
        assert!(check_image(&Gates::default(), None, &[], now).is_ok());
        assert!(!Gates::default().any());
    }

    #[test]
    fn an_index_is_as_young_as_the_platforms_that_matter() {
        let amd = (p("linux/amd64"), Some(100));
        let arm = (p("linux/arm64"), Some(300));
        let undated = (p("linux/s390x"), None);
        let all = Gates::default();
        let arm_only = Gates {
            platforms: vec![p("linux/arm64")],
            ..Gates::default()
        };
        let amd_only = Gates {
            platforms: vec![p("linux/amd64")],
            ..Gates::default()
        };
        assert_eq!(
            created_for(&all, Some(5), std::slice::from_ref(&amd)),
            Some(5),
            "the image's own"
        );
        assert_eq!(
            created_for(&all, None, &[amd.clone(), arm.clone()]),
            Some(300)
        );
        assert_eq!(
            created_for(&amd_only, None, &[amd.clone(), arm.clone()]),
            Some(100)
        );
        assert_eq!(
            created_for(&all, None, &[amd.clone(), undated.clone()]),
            None
        );
        assert_eq!(created_for(&arm_only, None, &[arm, undated]), Some(300));
        assert_eq!(created_for(&all, None, &[]), None);
    }

    #[test]
    fn ages_read_as_people_say_them() {
        assert_eq!(short_age(40), "40s");
        assert_eq!(short_age(12 * 60 + 5), "12m");
        assert_eq!(short_age(3 * 3600 + 60), "3h");
        assert_eq!(short_age(2 * 86_400), "2d");
        assert_eq!(short_age(2 * 86_400 + 4 * 3600), "2d4h");
        assert_eq!(short_age(-5), "0s");
    }
}
