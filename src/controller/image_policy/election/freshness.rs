//! The one rule for whether a digest already known is current, for every election
//! (docs/imagepolicy.md, "Digest reflection"). Without gates it is Flux's rule, so the election
//! asks the registry exactly when Flux's does; with gates, candidates' digests stay current for
//! a while, so a walk does not resolve every candidate at every reconcile.

use super::mode::Mode;
use crate::api::{ImagePolicy, ImagePolicyStatus, ReflectionPolicy};
use crate::store::DigestFact;
use kube::ResourceExt;
use std::time::Duration;

/// When a known digest of a tag is taken instead of asking the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct DigestRule<'a> {
    /// Unix seconds.
    pub now: i64,
    /// A digest the store says was looked up less than this ago is current (zero: none is).
    pub window: Duration,
    /// The tag elected before, whose digest holds at any age.
    pub settled: Option<Settled<'a>>,
}

/// The tag elected before and the digest `latestRef` records for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Settled<'a> {
    pub tag: &'a str,
    pub recorded: Option<&'a str>,
    /// The store's digest of the tag holds at any age too (a gated walk resolved it).
    pub or_stored: bool,
}

/// What the rule is made of: the policy, its status, and the moment.
pub(super) struct Occasion<'a> {
    pub policy: &'a ImagePolicy,
    pub status: &'a ImagePolicyStatus,
    /// The repository's image name, as `latestRef.name` records it.
    pub name: &'a str,
    /// Whether gates are on.
    pub mode: Mode,
    /// `Always`'s `spec.interval`.
    pub interval: Option<Duration>,
    /// The repository's scan interval: how long a gated walk trusts a candidate's digest.
    pub scan_interval: Duration,
    /// The policy's first reconcile since the process started.
    pub first_since_start: bool,
    /// A `requestedAt` not yet handled.
    pub requested: bool,
    pub now: i64,
}

impl<'a> DigestRule<'a> {
    /// The rule for this reconcile.
    ///
    /// Without gates, Flux's: `IfNotPresent` keeps the digest `latestRef` records for the same
    /// name and tag, even when a reconcile is requested; `Always` asks at every reconcile, but
    /// at the first after a restart, which takes a digest fetched less than the interval ago
    /// unless a reconcile was requested or the spec changed.
    ///
    /// With gates: a candidate's digest is current for the interval (`Always`) or the scan
    /// interval, and the elected tag's at any age (but with `Always`); a requested reconcile
    /// takes none.
    pub fn for_election(o: &Occasion<'a>) -> DigestRule<'a> {
        let reflection = o.policy.spec.digest_reflection_policy.unwrap_or_default();
        let always = reflection == ReflectionPolicy::Always;
        let elected = o.status.latest_ref.as_ref().filter(|r| r.name == o.name);
        let none = DigestRule {
            now: o.now,
            window: Duration::ZERO,
            settled: None,
        };
        if o.mode == Mode::Gated {
            if o.requested {
                return none;
            }
            return DigestRule {
                window: o.interval.filter(|_| always).unwrap_or(o.scan_interval),
                settled: elected.filter(|_| !always).map(|r| Settled {
                    tag: &r.tag,
                    recorded: r.digest.as_deref().filter(|d| !d.is_empty()),
                    or_stored: true,
                }),
                ..none
            };
        }
        match reflection {
            ReflectionPolicy::IfNotPresent => DigestRule {
                settled: elected.and_then(|r| {
                    let recorded = r.digest.as_deref().filter(|d| !d.is_empty());
                    recorded.map(|_| Settled {
                        tag: &r.tag,
                        recorded,
                        or_stored: false,
                    })
                }),
                ..none
            },
            ReflectionPolicy::Always => {
                let changed = o.status.observed_generation != o.policy.metadata.generation;
                let warm = o.first_since_start && !o.requested && !changed;
                DigestRule {
                    window: o.interval.filter(|_| warm).unwrap_or_default(),
                    ..none
                }
            }
            ReflectionPolicy::Never => none,
        }
    }

    /// Whether the store's digests may be taken at all (else they are not read).
    pub fn reads_store(&self) -> bool {
        !self.window.is_zero() || self.settled.is_some_and(|s| s.or_stored)
    }

    /// The digest of `tag` that is current without asking the registry, and when it is due
    /// (`None`: never, while the tag stays elected), given what the store knows of it.
    pub fn current(
        &self,
        tag: &str,
        stored: Option<&DigestFact>,
    ) -> Option<(String, Option<Duration>)> {
        if let Some(settled) = self.settled.filter(|s| s.tag == tag) {
            let kept = stored
                .filter(|_| settled.or_stored)
                .map(|f| f.digest.as_str());
            if let Some(digest) = settled.recorded.or(kept) {
                return Some((digest.to_string(), None));
            }
        }
        let fact = stored?;
        let age = u64::try_from(self.now - fact.checked_at).ok()?;
        let due_in = self.window.checked_sub(Duration::from_secs(age))?;
        // Nearly due is due: whole seconds and requeue delays must not add a reconcile.
        let slack = (self.window / 20).max(Duration::from_secs(2));
        (due_in > slack).then(|| (fact.digest.clone(), Some(due_in)))
    }
}

/// Whether a `requestedAt` not yet handled asks for a fresh look: no known digest is taken,
/// and a verdict of "not signed" is looked up again.
pub(super) fn requested(policy: &ImagePolicy, status: &ImagePolicyStatus) -> bool {
    let requested = policy
        .annotations()
        .get(crate::controller::object::keys::REQUESTED_AT_ANNOTATION);
    requested.is_some_and(|r| status.last_handled_reconcile_at.as_ref() != Some(r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ImageRef;

    const NOW: i64 = 1_000_000;
    const HOUR: Duration = Duration::from_secs(3600);

    fn policy(reflection: ReflectionPolicy) -> ImagePolicy {
        let mut policy: ImagePolicy = serde_json::from_value(serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1",
            "kind": "ImagePolicy",
            "metadata": {"name": "p", "namespace": "team", "generation": 1},
            "spec": {"imageRepositoryRef": {"name": "r"}, "policy": {"semver": {"range": ">=1.0.0"}}},
        }))
        .unwrap();
        policy.spec.digest_reflection_policy = Some(reflection);
        policy
    }

    fn elected(tag: &str, digest: Option<&str>) -> ImagePolicyStatus {
        ImagePolicyStatus {
            latest_ref: Some(ImageRef {
                name: "img".into(),
                tag: tag.into(),
                digest: digest.map(Into::into),
            }),
            observed_generation: Some(1),
            ..Default::default()
        }
    }

    fn fact(digest: &str, age: i64) -> DigestFact {
        DigestFact {
            digest: digest.into(),
            checked_at: NOW - age,
        }
    }

    fn rule<'a>(
        policy: &'a ImagePolicy,
        status: &'a ImagePolicyStatus,
        gated: bool,
    ) -> Occasion<'a> {
        let mode = if gated { Mode::Gated } else { Mode::Flux };
        Occasion {
            policy,
            status,
            name: "img",
            mode,
            interval: Some(HOUR),
            scan_interval: HOUR / 6,
            first_since_start: false,
            requested: false,
            now: NOW,
        }
    }

    #[test]
    fn without_gates_always_asks_at_every_reconcile_but_the_first_after_a_restart() {
        let (p, s) = (
            policy(ReflectionPolicy::Always),
            elected("1", Some("sha256:a")),
        );
        let mid_life = DigestRule::for_election(&rule(&p, &s, false));
        assert_eq!(mid_life.current("1", Some(&fact("sha256:a", 10))), None);
        assert!(!mid_life.reads_store());
        let warm = DigestRule::for_election(&Occasion {
            first_since_start: true,
            ..rule(&p, &s, false)
        });
        let due = Some(HOUR - Duration::from_secs(600));
        assert_eq!(
            warm.current("1", Some(&fact("sha256:a", 600))),
            Some(("sha256:a".into(), due))
        );
        // Nearly due is due, and a requested reconcile or a new spec asks anew.
        assert_eq!(warm.current("1", Some(&fact("sha256:a", 3590))), None);
        let requested = DigestRule::for_election(&Occasion {
            first_since_start: true,
            requested: true,
            ..rule(&p, &s, false)
        });
        assert_eq!(requested.current("1", Some(&fact("sha256:a", 600))), None);
        let mut changed = p.clone();
        changed.metadata.generation = Some(2);
        let changed = DigestRule::for_election(&Occasion {
            first_since_start: true,
            ..rule(&changed, &s, false)
        });
        assert_eq!(changed.current("1", Some(&fact("sha256:a", 600))), None);
    }

    #[test]
    fn without_gates_if_not_present_keeps_the_recorded_digest_of_the_same_tag_only() {
        let p = policy(ReflectionPolicy::IfNotPresent);
        let s = elected("1", Some("sha256:a"));
        let r = DigestRule::for_election(&Occasion {
            requested: true,
            ..rule(&p, &s, false)
        });
        assert_eq!(r.current("1", None), Some(("sha256:a".into(), None)));
        assert_eq!(r.current("2", Some(&fact("sha256:b", 1))), None);
        // No recorded digest (it was Never): asked, whatever the store knows.
        let bare = elected("1", None);
        let r = DigestRule::for_election(&rule(&p, &bare, false));
        assert_eq!(r.current("1", Some(&fact("sha256:a", 1))), None);
        assert!(!r.reads_store());
    }

    #[test]
    fn with_gates_candidates_stay_current_for_a_window_and_the_elected_tag_for_good() {
        let (p, s) = (policy(ReflectionPolicy::Never), elected("1", None));
        let r = DigestRule::for_election(&rule(&p, &s, true));
        assert!(r.reads_store());
        assert_eq!(
            r.current("1", Some(&fact("sha256:a", 86_400))),
            Some(("sha256:a".into(), None))
        );
        let due = Some(HOUR / 6 - Duration::from_secs(60));
        assert_eq!(
            r.current("2", Some(&fact("sha256:b", 60))),
            Some(("sha256:b".into(), due))
        );
        assert_eq!(r.current("2", Some(&fact("sha256:b", 700))), None);
        // Always: the interval, and no tag holds for good.
        let p = policy(ReflectionPolicy::Always);
        let r = DigestRule::for_election(&rule(&p, &s, true));
        assert_eq!(r.current("1", Some(&fact("sha256:a", 86_400))), None);
        assert!(r.current("2", Some(&fact("sha256:b", 700))).is_some());
        // A requested reconcile takes nothing stored.
        let r = DigestRule::for_election(&Occasion {
            requested: true,
            ..rule(&p, &s, true)
        });
        assert_eq!(r.current("1", Some(&fact("sha256:a", 1))), None);
    }

    #[test]
    fn a_fact_from_the_future_is_not_current() {
        let (p, s) = (policy(ReflectionPolicy::Never), elected("1", None));
        let r = DigestRule::for_election(&rule(&p, &s, true));
        assert_eq!(r.current("2", Some(&fact("sha256:b", -60))), None);
    }

    /// The edges mutation testing found untested: an empty recorded digest is none (the store's
    /// is taken), the store is read whenever a window is open, a fact exactly at the slack is
    /// due, and `requested` is an annotation not yet handled.
    #[test]
    fn the_edges_of_the_rule() {
        let p = policy(ReflectionPolicy::Never);
        let empty = elected("1", Some(""));
        let r = DigestRule::for_election(&rule(&p, &empty, true));
        assert_eq!(
            r.current("1", Some(&fact("sha256:a", 86_400))),
            Some(("sha256:a".into(), None)),
            "an empty recorded digest is no digest"
        );
        let nothing = ImagePolicyStatus::default();
        let r = DigestRule::for_election(&rule(&p, &nothing, true));
        assert!(r.reads_store(), "a window without an elected tag");
        // Window 600 s, slack 30 s: 30 s before it is due is due.
        assert_eq!(r.current("2", Some(&fact("sha256:b", 570))), None);
        assert!(r.current("2", Some(&fact("sha256:b", 569))).is_some());

        let mut annotated = policy(ReflectionPolicy::Never);
        assert!(!requested(&annotated, &nothing));
        annotated.metadata.annotations = Some(
            [(
                crate::controller::object::keys::REQUESTED_AT_ANNOTATION.to_string(),
                "t1".to_string(),
            )]
            .into(),
        );
        assert!(requested(&annotated, &nothing));
        let handled = ImagePolicyStatus {
            last_handled_reconcile_at: Some("t1".into()),
            ..Default::default()
        };
        assert!(!requested(&annotated, &handled));
    }
}
