//! The downgrade guard (`spec.downgrade: Refuse`, docs/imagepolicy.md): once a tag is elected,
//! the policy never elects one its own ordering ranks lower, even when the higher tags vanish
//! from a scan (deleted, a short or flapping listing, a registry answering with an older
//! list). The elected tag then stays, the policy stays Ready, and status and one event say so.
//! The guard holds across spec changes too: turning a gate on never rolls the policy back. Only
//! a spec that excludes the elected tag outright (a range or pattern that leaves it out) may
//! replace it, and Ready says so; a deliberate rollback is such a spec, or `downgrade: Allow`.

use crate::api::{
    DowngradePolicy, HeldBackTag, ImagePolicy, ImagePolicySpec, ImagePolicyStatus, ImageRepository,
};
use crate::policy::Policy;

/// The `gate` of the `status.heldBack` entry the guard writes.
pub const GATE: &str = "downgrade";

/// The elected tag no candidate may rank below, and the ordering that says so. The controller
/// and `image-reflector select` hold at the same floor.
#[derive(Clone)]
pub struct Floor {
    pub tag: String,
    ranking: Policy,
}

impl Floor {
    /// The guard for this reconcile, if it holds: `Refuse` and a tag elected from the
    /// repository's image, whatever generation elected it (a spec change does not lift it).
    pub fn of(
        policy: &ImagePolicy,
        repo: &ImageRepository,
        status: &ImagePolicyStatus,
        ranking: &Policy,
    ) -> Option<Floor> {
        Floor::recorded(&policy.spec, status, Some(&repo.spec.image), ranking)
    }

    /// The guard as an object's spec and status record it: `image`, the repository's image,
    /// when known (offline, `select` knows only the policy), must be the one the elected tag
    /// was elected from.
    pub fn recorded(
        spec: &ImagePolicySpec,
        status: &ImagePolicyStatus,
        image: Option<&str>,
        ranking: &Policy,
    ) -> Option<Floor> {
        if spec.downgrade != Some(DowngradePolicy::Refuse) {
            return None;
        }
        let latest = status.latest_ref.as_ref()?;
        image
            .is_none_or(|image| latest.name == image)
            .then(|| Floor {
                tag: latest.tag.clone(),
                ranking: ranking.clone(),
            })
    }

    /// Whether electing `tag` would be a downgrade.
    pub fn refuses(&self, tag: &str) -> bool {
        self.ranking.ranks_below(tag, &self.tag) == Some(true)
    }

    /// Whether the spec excludes the elected tag outright (filtered out, outside the range,
    /// not a number): then it refuses nothing, and a lower tag may replace it.
    pub fn excluded(&self) -> bool {
        self.ranking.ranked([self.tag.as_str()], 1).is_empty()
    }

    /// What Ready says when a tag the spec excludes was replaced by `elected`.
    pub fn replaced(&self, elected: &str) -> Option<String> {
        (self.excluded() && elected != self.tag).then(|| {
            format!(
                "{} replaced: the spec excludes it, so downgrade: Refuse does not hold there",
                self.tag
            )
        })
    }

    /// The `status.heldBack` entry for `best`, the best candidate listed, which ranks below the
    /// elected tag: the elected tag is no longer listed. `higher_held`: some tags that rank
    /// higher are listed but held back by another gate.
    pub fn held(&self, best: &str, higher_held: bool) -> HeldBackTag {
        let why = match higher_held {
            false => "no tag ranks higher",
            true => "no tag that ranks higher passes the gates",
        };
        HeldBackTag {
            tag: best.to_string(),
            digest: None,
            gate: GATE.into(),
            reason: format!(
                "{} is no longer listed and {why} (downgrade refused)",
                self.tag
            ),
            also_held_by: None,
        }
    }
}

/// What Ready and the event say of a downgrade refused: `held at 1.4.0: <reason>`.
pub fn held_at(status: &ImagePolicyStatus, held: &HeldBackTag) -> String {
    let at = status.latest_ref.as_ref().map_or("", |r| r.tag.as_str());
    format!("held at {at}: {}", held.reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ImageRef;
    use crate::policy::PolicyChoice;

    fn policy(downgrade: Option<DowngradePolicy>, generation: i64) -> ImagePolicy {
        let mut p: ImagePolicy = serde_json::from_value(serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1",
            "kind": "ImagePolicy",
            "metadata": {"name": "p", "namespace": "team", "generation": generation},
            "spec": {"imageRepositoryRef": {"name": "r"}, "policy": {"semver": {"range": ">=1.0.0"}}},
        }))
        .unwrap();
        p.spec.downgrade = downgrade;
        p
    }

    fn repo(image: &str) -> ImageRepository {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1",
            "kind": "ImageRepository",
            "metadata": {"name": "r", "namespace": "team"},
            "spec": {"image": image, "interval": "5m"},
        }))
        .unwrap()
    }

    fn status(tag: &str, observed: i64) -> ImagePolicyStatus {
        ImagePolicyStatus {
            latest_ref: Some(ImageRef {
                name: "reg.example/app".into(),
                tag: tag.into(),
                digest: None,
            }),
            observed_generation: Some(observed),
            ..Default::default()
        }
    }

    fn semver() -> Policy {
        let choice = PolicyChoice {
            semver: Some(">=1.0.0".into()),
            ..Default::default()
        };
        Policy::new(&choice, None).unwrap()
    }

    #[test]
    fn holds_only_when_refused_for_the_same_image_and_generation() {
        let refuse = Some(DowngradePolicy::Refuse);
        let r = repo("reg.example/app");
        let floor = Floor::of(&policy(refuse, 2), &r, &status("1.4.0", 2), &semver()).unwrap();
        assert!(floor.refuses("1.3.0"));
        assert!(!floor.refuses("1.4.0") && !floor.refuses("1.5.0"));
        assert!(
            !floor.refuses("latest"),
            "not a candidate: never a downgrade"
        );
        let none = |p: &ImagePolicy, r: &ImageRepository, s: &ImagePolicyStatus| {
            Floor::of(p, r, s, &semver()).is_none()
        };
        assert!(
            none(&policy(None, 2), &r, &status("1.4.0", 2)),
            "Flux's default"
        );
        let allow = Some(DowngradePolicy::Allow);
        assert!(none(&policy(allow, 2), &r, &status("1.4.0", 2)));
        let across = Floor::of(&policy(refuse, 3), &r, &status("1.4.0", 2), &semver());
        assert!(
            across.is_some_and(|f| f.refuses("1.3.0")),
            "a new generation does not lift it"
        );
        assert!(
            none(
                &policy(refuse, 2),
                &repo("reg.example/other"),
                &status("1.4.0", 2)
            ),
            "another image"
        );
        assert!(none(&policy(refuse, 2), &r, &ImagePolicyStatus::default()));
    }

    #[test]
    fn says_where_it_holds_and_why() {
        let refuse = Some(DowngradePolicy::Refuse);
        let s = status("1.4.0", 2);
        let r = repo("reg.example/app");
        let floor = Floor::of(&policy(refuse, 2), &r, &s, &semver()).unwrap();
        let held = floor.held("1.3.0", false);
        assert_eq!(
            (held.tag.as_str(), held.gate.as_str()),
            ("1.3.0", "downgrade")
        );
        assert_eq!(
            held_at(&s, &held),
            "held at 1.4.0: 1.4.0 is no longer listed and no tag ranks higher (downgrade refused)"
        );
        assert!(floor
            .held("1.3.0", true)
            .reason
            .contains("no tag that ranks higher passes"));
        assert!(!floor.excluded() && floor.replaced("1.3.0").is_none());
    }

    /// A spec that leaves the elected tag out refuses nothing, and says so when it replaces it.
    #[test]
    fn a_spec_that_excludes_the_elected_tag_replaces_it_saying_so() {
        let choice = PolicyChoice {
            semver: Some("<1.4.0".into()),
            ..Default::default()
        };
        let narrower = Policy::new(&choice, None).unwrap();
        let p = policy(Some(DowngradePolicy::Refuse), 3);
        let r = repo("reg.example/app");
        let floor = Floor::of(&p, &r, &status("1.4.0", 2), &narrower).unwrap();
        assert!(floor.excluded() && !floor.refuses("1.3.0"));
        assert_eq!(
            floor.replaced("1.3.0").unwrap(),
            "1.4.0 replaced: the spec excludes it, so downgrade: Refuse does not hold there"
        );
        assert_eq!(floor.replaced("1.4.0"), None);
    }
}
