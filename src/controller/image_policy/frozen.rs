//! A policy that can never move says so (docs/imagepolicy.md, "A policy that cannot move"):
//! when `filterTags.pattern` admits a single tag (`^latest$`) and the digest is not followed
//! (`digestReflectionPolicy` other than `Always`), every election is that tag with the digest
//! first seen: Ready stays True, and its message, and one Normal event, say what would move it.

use crate::api::{ImagePolicySpec, ImagePolicyStatus, ReflectionPolicy};
use crate::controller::events::transition::{EventSpec, EventType};

/// How the note begins, to find it again in a Ready message.
const OPENING: &str = "the election can never change";

/// The event's reason.
pub const ELECTION_FROZEN: &str = "ElectionFrozen";

/// The note for Ready's message, when `spec` can never move.
pub fn notice(spec: &ImagePolicySpec) -> Option<String> {
    let pattern = spec.filter_tags.as_ref()?.pattern.as_deref()?;
    let tag = crate::policy::only_tag(pattern)?;
    if spec.digest_reflection_policy == Some(ReflectionPolicy::Always) {
        return None;
    }
    Some(format!(
        "{OPENING}: spec.filterTags.pattern admits only the tag '{tag}', and its digest is \
         not followed; to follow what '{tag}' points at, set digestReflectionPolicy: Always \
         (with an interval), or use a pattern that admits versions"
    ))
}

/// The Normal event of a policy whose Ready message now says it cannot move, and did not.
pub fn event(old: &ImagePolicyStatus, new: &ImagePolicyStatus) -> Option<EventSpec> {
    let message = |status: &ImagePolicyStatus| {
        let conditions = status.conditions.as_deref().unwrap_or_default();
        let ready = conditions.iter().find(|c| c.type_ == "Ready");
        ready.map(|c| c.message.clone()).unwrap_or_default()
    };
    let now = message(new);
    let start = now.find(OPENING)?;
    if message(old).contains(OPENING) {
        return None;
    }
    Some(EventSpec {
        type_: EventType::Normal,
        reason: ELECTION_FROZEN.into(),
        message: now[start..].to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(extra: serde_json::Value) -> ImagePolicySpec {
        let mut spec =
            json!({"imageRepositoryRef": {"name": "app"}, "policy": {"alphabetical": {}}});
        spec.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(spec).unwrap()
    }

    #[test]
    fn only_a_single_tag_whose_digest_is_not_followed_is_frozen() {
        let frozen = notice(&spec(json!({"filterTags": {"pattern": "^latest$"}}))).unwrap();
        assert!(frozen.starts_with("the election can never change: spec.filterTags.pattern admits only the tag 'latest'"), "{frozen}");
        let once = json!({"filterTags": {"pattern": "^latest$"}, "digestReflectionPolicy": "IfNotPresent"});
        assert!(
            notice(&spec(once)).is_some(),
            "a digest read once is not followed"
        );
        let followed = json!({"filterTags": {"pattern": "^latest$"}, "digestReflectionPolicy": "Always", "interval": "5m"});
        assert_eq!(notice(&spec(followed)), None);
        assert_eq!(
            notice(&spec(json!({"filterTags": {"pattern": "^v.*$"}}))),
            None
        );
        assert_eq!(notice(&spec(json!({}))), None);
    }

    fn status(message: &str) -> ImagePolicyStatus {
        serde_json::from_value(json!({"conditions": [{"type": "Ready", "status": "True",
            "reason": "Succeeded", "message": message, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}))
        .unwrap()
    }

    #[test]
    fn the_event_comes_once_when_the_note_appears() {
        let note =
            "the election can never change: spec.filterTags.pattern admits only the tag 'latest'";
        let frozen = status(&format!(
            "Latest image tag for r/app resolved to latest; {note}"
        ));
        let event = event(
            &status("Latest image tag for r/app resolved to latest"),
            &frozen,
        )
        .unwrap();
        assert_eq!(
            (event.type_, event.reason.as_str(), event.message.as_str()),
            (EventType::Normal, ELECTION_FROZEN, note)
        );
        assert_eq!(super::event(&frozen, &frozen), None, "once");
        assert_eq!(
            super::event(&ImagePolicyStatus::default(), &status("resolved")),
            None
        );
    }
}
