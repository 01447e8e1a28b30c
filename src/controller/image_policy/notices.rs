//! What a policy says of its own spec beside the election (docs/imagepolicy.md): a note at the
//! end of Ready's message, and one event when the note first appears.
//! - A policy that can never move ("A policy that cannot move"): when `filterTags.pattern`
//!   admits a single tag (`^latest$`) and the digest is not followed (`digestReflectionPolicy`
//!   other than `Always`), every election is that tag with the digest first seen: Ready stays
//!   True, and its message, and one Normal event, say what would move it.
//! - Bumps that wait nothing: `minAgeByBump` without `minAge` leaves the kinds it does not set
//!   unwaited, which reads as a mistake when another kind waits (a minor let through at once
//!   while patches wait an hour): a Warning says which.

use crate::api::{ImagePolicySpec, ImagePolicyStatus, ReflectionPolicy};
use crate::controller::events::transition::{EventSpec, EventType};

/// How each note begins, to find it again in a Ready message.
const FROZEN: &str = "the election can never change";
const UNWAITED: &str = "spec.filterTags.minAgeByBump leaves";

/// The events' reasons.
pub const ELECTION_FROZEN: &str = "ElectionFrozen";
pub const BUMPS_UNWAITED: &str = "BumpsWaitNothing";

/// Each note's opening, and the event that says it.
const NOTES: [(&str, EventType, &str); 2] = [
    (FROZEN, EventType::Normal, ELECTION_FROZEN),
    (UNWAITED, EventType::Warning, BUMPS_UNWAITED),
];

/// The notes for Ready's message that `spec` calls for.
pub fn notes(spec: &ImagePolicySpec) -> Vec<String> {
    frozen(spec).into_iter().chain(unwaited(spec)).collect()
}

/// The note of a policy that can never move.
pub fn frozen(spec: &ImagePolicySpec) -> Option<String> {
    let pattern = spec.filter_tags.as_ref()?.pattern.as_deref()?;
    let tag = crate::policy::only_tag(pattern)?;
    if spec.digest_reflection_policy == Some(ReflectionPolicy::Always) {
        return None;
    }
    Some(format!(
        "{FROZEN}: spec.filterTags.pattern admits only the tag '{tag}', and its digest is \
         not followed; to follow what '{tag}' points at, set digestReflectionPolicy: Always \
         (with an interval), or use a pattern that admits versions"
    ))
}

/// The note of a `minAgeByBump` that, with no `minAge`, leaves kinds of bump waiting nothing.
pub fn unwaited(spec: &ImagePolicySpec) -> Option<String> {
    let filter = spec.filter_tags.as_ref()?;
    let by_bump = filter.min_age_by_bump.as_ref()?;
    if filter.min_age.is_some() {
        return None;
    }
    let kinds = [
        ("major", &by_bump.major),
        ("minor", &by_bump.minor),
        ("patch", &by_bump.patch),
    ];
    let unset: Vec<&str> = kinds
        .iter()
        .filter(|(_, w)| w.is_none())
        .map(|(k, _)| *k)
        .collect();
    let waits: Vec<String> = kinds
        .iter()
        .filter_map(|(k, w)| w.as_ref().map(|w| format!("{k} {w}")))
        .collect();
    let (unset, waits) = (and(&unset)?, and(&waits).unwrap_or("nothing".into()));
    Some(format!(
        "{UNWAITED} {unset} unset and filterTags.minAge is not set: {unset} bumps wait nothing \
         (minAgeByBump waits {waits}); set them, or filterTags.minAge for every kind left unset"
    ))
}

/// `a`, `a and b`, `a, b and c`; `None` for none.
fn and<T: AsRef<str>>(items: &[T]) -> Option<String> {
    let (last, rest) = items.split_last()?;
    let rest: Vec<&str> = rest.iter().map(AsRef::as_ref).collect();
    Some(match rest.is_empty() {
        true => last.as_ref().to_string(),
        false => format!("{} and {}", rest.join(", "), last.as_ref()),
    })
}

/// The events of the notes Ready's message now says and did not.
pub fn events(old: &ImagePolicyStatus, new: &ImagePolicyStatus) -> Vec<EventSpec> {
    let message = |status: &ImagePolicyStatus| {
        let conditions = status.conditions.as_deref().unwrap_or_default();
        let ready = conditions.iter().find(|c| c.type_ == "Ready");
        ready.map(|c| c.message.clone()).unwrap_or_default()
    };
    let (was, now) = (message(old), message(new));
    let said = |opening: &str| now.find(opening).filter(|_| !was.contains(opening));
    NOTES
        .iter()
        .filter_map(|(opening, type_, reason)| {
            let start = said(opening)?;
            // A note ends where the next one begins ("; " then another opening), or at the end.
            let rest = &now[start..];
            let end = NOTES
                .iter()
                .filter_map(|(other, ..)| rest.find(&format!("; {other}")))
                .min()
                .unwrap_or(rest.len());
            Some(EventSpec {
                type_: *type_,
                reason: reason.to_string(),
                message: rest[..end].to_string(),
            })
        })
        .collect()
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
        let frozen = super::frozen(&spec(json!({"filterTags": {"pattern": "^latest$"}}))).unwrap();
        assert!(frozen.starts_with("the election can never change: spec.filterTags.pattern admits only the tag 'latest'"), "{frozen}");
        let once = json!({"filterTags": {"pattern": "^latest$"}, "digestReflectionPolicy": "IfNotPresent"});
        assert!(
            super::frozen(&spec(once)).is_some(),
            "a digest read once is not followed"
        );
        let followed = json!({"filterTags": {"pattern": "^latest$"}, "digestReflectionPolicy": "Always", "interval": "5m"});
        assert_eq!(super::frozen(&spec(followed)), None);
        assert_eq!(
            super::frozen(&spec(json!({"filterTags": {"pattern": "^v.*$"}}))),
            None
        );
        assert_eq!(super::frozen(&spec(json!({}))), None);
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
        let event = events(
            &status("Latest image tag for r/app resolved to latest"),
            &frozen,
        )
        .remove(0);
        assert_eq!(
            (event.type_, event.reason.as_str(), event.message.as_str()),
            (EventType::Normal, ELECTION_FROZEN, note)
        );
        assert_eq!(events(&frozen, &frozen), [], "once");
        assert_eq!(
            events(&ImagePolicyStatus::default(), &status("resolved")),
            []
        );
    }

    #[test]
    fn kinds_min_age_by_bump_leaves_unset_wait_nothing_without_min_age() {
        let by_bump = |b: serde_json::Value| spec(json!({"filterTags": {"minAgeByBump": b}}));
        let note = unwaited(&by_bump(json!({"major": "72h", "patch": "1h"}))).unwrap();
        assert_eq!(
            note,
            "spec.filterTags.minAgeByBump leaves minor unset and filterTags.minAge is not set: \
             minor bumps wait nothing (minAgeByBump waits major 72h and patch 1h); set them, or \
             filterTags.minAge for every kind left unset"
        );
        let two = unwaited(&by_bump(json!({"major": "72h"}))).unwrap();
        assert!(two.contains("leaves minor and patch unset"), "{two}");
        let none = unwaited(&by_bump(json!({}))).unwrap();
        assert!(
            none.contains("major, minor and patch bumps wait nothing (minAgeByBump waits nothing)"),
            "{none}"
        );
        let all = json!({"major": "72h", "minor": "24h", "patch": "0s"});
        assert_eq!(unwaited(&by_bump(all)), None, "every kind set, 0s included");
        let with_min_age =
            json!({"filterTags": {"minAge": "1h", "minAgeByBump": {"major": "72h"}}});
        assert_eq!(
            unwaited(&spec(with_min_age)),
            None,
            "minAge waits for the others"
        );
        assert_eq!(
            unwaited(&spec(json!({"filterTags": {"minAge": "1h"}}))),
            None
        );
    }

    /// A spec that calls for both notes gets both, the frozen one first; one that calls for
    /// neither, none.
    #[test]
    fn notes_are_what_the_spec_calls_for() {
        let both =
            spec(json!({"filterTags": {"pattern": "^latest$", "minAgeByBump": {"major": "72h"}}}));
        let said = notes(&both);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].starts_with(FROZEN) && said[1].starts_with(UNWAITED),
            "{said:?}"
        );
        assert_eq!(notes(&spec(json!({}))), Vec::<String>::new());
    }

    /// Both notes in one message: each its own event, cut where the next begins.
    #[test]
    fn each_note_is_its_own_event() {
        let frozen = "the election can never change: x";
        let unwaited = "spec.filterTags.minAgeByBump leaves minor unset and y";
        let both = status(&format!("resolved to 1.0.0; {frozen}; {unwaited}"));
        let said: Vec<_> = events(&status("resolved to 1.0.0"), &both)
            .into_iter()
            .map(|e| (e.type_, e.reason, e.message))
            .collect();
        assert_eq!(
            said,
            [
                (
                    EventType::Normal,
                    ELECTION_FROZEN.to_string(),
                    frozen.to_string()
                ),
                (
                    EventType::Warning,
                    BUMPS_UNWAITED.to_string(),
                    unwaited.to_string()
                )
            ]
        );
    }
}
