//! Cooldowns per bump (`spec.filterTags.minAgeByBump`, docs/imagepolicy.md): how a candidate's
//! version rises from the tag elected now, as Dependabot's cooldown tells a major, a minor and
//! a patch update apart. Pure: the versions are the policy's own values (after `filterTags`'
//! `extract`), read as the semver policy reads them.

use super::version::Version;
use super::{Policy, PolicyKind};
use std::cmp::Ordering;
use std::fmt;

/// How a candidate rises from the tag elected now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bump {
    /// Another major version.
    Major,
    /// The same major, another minor.
    Minor,
    /// The same major and minor: another patch, or another prerelease of the same version.
    Patch,
    /// No rise to judge by kind: a first election, a candidate not above the tag elected now
    /// (a re-pushed tag, a downgrade), or a tag elected now that is no version of this policy.
    /// `minAge` alone applies.
    Unranked,
}

impl fmt::Display for Bump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Bump::Major => "major",
            Bump::Minor => "minor",
            Bump::Patch => "patch",
            Bump::Unranked => "unranked",
        })
    }
}

/// The bump of `to` from `from`.
pub fn bump(from: &Version<'_>, to: &Version<'_>) -> Bump {
    if to.precedence(from) != Ordering::Greater {
        return Bump::Unranked;
    }
    if to.major != from.major {
        Bump::Major
    } else if to.minor != from.minor {
        Bump::Minor
    } else {
        Bump::Patch
    }
}

/// What tells each candidate's bump: a semver policy and the tag it elected now.
#[derive(Clone, Debug)]
pub struct Bumps {
    from: From,
}

#[derive(Clone, Debug)]
enum From {
    /// The tag elected now, its value read once, and the policy that reads the candidates'
    /// (boxed: a policy is large beside the other cases).
    Elected {
        ranking: Box<Policy>,
        tag: String,
        value: Option<String>,
    },
    /// Nothing elected yet: every candidate is [`Bump::Unranked`].
    Nothing,
    /// Each candidate's bump given (the walk's tests).
    #[cfg(test)]
    Listed(Vec<(String, Bump)>),
}

impl Bumps {
    /// The bumps from `elected` (the tag elected now, if any) as `ranking` reads versions;
    /// a policy other than semver has no bumps, and every candidate is unranked.
    pub fn from(ranking: &Policy, elected: Option<&str>) -> Bumps {
        let from = match elected {
            Some(tag) if ranking.kind() == PolicyKind::SemVer => From::Elected {
                ranking: Box::new(ranking.clone()),
                tag: tag.to_string(),
                value: ranking.value(tag),
            },
            _ => From::Nothing,
        };
        Bumps { from }
    }

    /// Each candidate's bump as listed; any other is unranked (the walk's tests).
    #[cfg(test)]
    pub fn listed(bumps: &[(&str, Bump)]) -> Bumps {
        let listed = bumps.iter().map(|(t, b)| (t.to_string(), *b)).collect();
        Bumps {
            from: From::Listed(listed),
        }
    }

    /// The tag elected now, when there is one.
    pub fn elected(&self) -> Option<&str> {
        match &self.from {
            From::Elected { tag, .. } => Some(tag),
            From::Nothing => None,
            #[cfg(test)]
            From::Listed(_) => None,
        }
    }

    /// How `tag` rises from the tag elected now.
    pub fn of(&self, tag: &str) -> Bump {
        match &self.from {
            From::Elected { ranking, value, .. } => {
                let (Some(from), Some(to)) = (value, ranking.value(tag)) else {
                    return Bump::Unranked;
                };
                match (Version::parse_tag(from), Version::parse_tag(&to)) {
                    (Some(from), Some(to)) => bump(&from, &to),
                    _ => Bump::Unranked,
                }
            }
            From::Nothing => Bump::Unranked,
            #[cfg(test)]
            From::Listed(listed) => listed
                .iter()
                .find(|(t, _)| t == tag)
                .map_or(Bump::Unranked, |(_, b)| *b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{FilterSpec, PolicyChoice};

    fn semver(range: &str, filter: Option<(&str, &str)>) -> Policy {
        let choice = PolicyChoice {
            semver: Some(range.into()),
            ..Default::default()
        };
        let filter = filter.map(|(pattern, extract)| FilterSpec {
            pattern: pattern.into(),
            extract: extract.into(),
        });
        Policy::new(&choice, filter.as_ref()).unwrap()
    }

    #[test]
    fn each_kind_of_rise_from_the_tag_elected_now() {
        let bumps = Bumps::from(&semver(">=0.1.0", None), Some("1.4.2"));
        assert_eq!(bumps.elected(), Some("1.4.2"));
        for (tag, expected) in [
            ("2.0.0", Bump::Major),
            ("v2.0.0", Bump::Major),
            ("1.5.0", Bump::Minor),
            ("1.5.0-rc.1", Bump::Minor),
            ("1.4.3", Bump::Patch),
            ("1.4.10", Bump::Patch),
            // Not a rise: the same version, a downgrade, a prerelease of it, no version.
            ("1.4.2", Bump::Unranked),
            ("1.4.2+build.7", Bump::Unranked),
            ("1.4.2-rc.1", Bump::Unranked),
            ("1.3.9", Bump::Unranked),
            ("0.9.0", Bump::Unranked),
            ("latest", Bump::Unranked),
        ] {
            assert_eq!(bumps.of(tag), expected, "{tag}");
        }
        let prerelease = Bumps::from(&semver(">=0.1.0-0", None), Some("1.5.0-rc.1"));
        assert_eq!(
            prerelease.of("1.5.0"),
            Bump::Patch,
            "a release of its prerelease"
        );
        assert_eq!(prerelease.of("1.5.0-rc.2"), Bump::Patch);
        assert_eq!(prerelease.of("1.6.0"), Bump::Minor);
    }

    #[test]
    fn versions_are_the_policys_values_after_extract() {
        let extract = Some((r"^main-(?P<v>\d+\.\d+\.\d+)$", "$v"));
        let bumps = Bumps::from(&semver(">=1.0.0", extract), Some("main-1.4.2"));
        assert_eq!(bumps.of("main-1.5.0"), Bump::Minor);
        assert_eq!(bumps.of("main-2.0.0"), Bump::Major);
        // Filtered out: not a version of this policy.
        assert_eq!(bumps.of("1.5.0"), Bump::Unranked);
        // An elected tag the pattern no longer keeps ranks nothing.
        let moved = Bumps::from(&semver(">=1.0.0", extract), Some("1.4.2"));
        assert_eq!(moved.of("main-2.0.0"), Bump::Unranked);
    }

    #[test]
    fn without_an_elected_tag_or_a_semver_policy_nothing_is_a_bump() {
        let first = Bumps::from(&semver(">=0.1.0", None), None);
        assert_eq!((first.elected(), first.of("2.0.0")), (None, Bump::Unranked));
        let alphabetical = Policy::new(
            &PolicyChoice {
                alphabetical: Some(crate::policy::Order::Asc),
                ..Default::default()
            },
            None,
        )
        .unwrap();
        let bumps = Bumps::from(&alphabetical, Some("1.0.0"));
        assert_eq!((bumps.elected(), bumps.of("2.0.0")), (None, Bump::Unranked));
    }
}
