//! What a policy's election says: Ready's message (Flux's words) and the Alert metadata of its
//! events.

use super::downgrade;
use crate::api::{HeldBackTag, ImagePolicyStatus, API_GROUP};
use crate::controller::events::transition::{EventSpec, EventType};
use crate::policy::conditions::MISSING_FIELD;
use std::collections::BTreeMap;

/// `Latest image tag for <name> resolved to <tag>[ with digest <d>][ (previously
/// <name>:<tag>[@<digest>])]` (§4.8).
pub fn ready_message(status: &ImagePolicyStatus) -> String {
    let Some(latest) = &status.latest_ref else {
        return String::new();
    };
    let mut message = format!(
        "Latest image tag for {} resolved to {}",
        latest.name, latest.tag
    );
    if let Some(digest) = latest.digest.as_deref().filter(|d| !d.is_empty()) {
        message.push_str(&format!(" with digest {digest}"));
    }
    if let Some(previous) = status
        .observed_previous_ref
        .as_deref()
        .filter(|p| *p != latest)
    {
        message.push_str(&format!(" (previously {}:{}", previous.name, previous.tag));
        if let Some(digest) = previous.digest.as_deref().filter(|d| !d.is_empty()) {
            message.push_str(&format!("@{digest}"));
        }
        message.push(')');
    }
    message
}

/// What Ready adds after Flux's message when a better-ranked tag was held back:
/// `; 1.5.0 held back: 3h old, minAge 168h`.
pub fn held_note(status: &ImagePolicyStatus) -> String {
    let held = status.held_back.as_deref().unwrap_or_default();
    // A downgrade refused says where the policy holds first: `; held at 1.4.0: ...`.
    let refused = held.iter().find(|h| h.gate == super::downgrade::GATE);
    let Some(first) = refused.or(held.first()) else {
        return String::new();
    };
    let mut note = match refused {
        Some(refused) => format!("; {}", super::downgrade::held_at(status, refused)),
        None => format!("; {} held back: {}", first.tag, first.reason),
    };
    if held.len() > 1 {
        note.push_str(&format!(
            " (and {} more in status.heldBack)",
            held.len() - 1
        ));
    }
    note
}

/// Ready's message when no candidate passes the gates.
pub fn no_eligible_message(status: &ImagePolicyStatus, walked: usize) -> String {
    let held = status.held_back.as_deref().unwrap_or_default();
    let mut message = format!("no tag passes the gates among the {walked} best candidates");
    if let Some(first) = held.first() {
        message.push_str(&format!(" ({} held back: {})", first.tag, first.reason));
    }
    // A condition reading a field its attestation lacks is most often a typo in the spec,
    // which holds every attested tag: said even when the best is held for something else.
    let typo = |h: &&HeldBackTag| h.reason.contains(MISSING_FIELD);
    if let Some(read) = held.iter().find(typo).filter(|h| Some(*h) != held.first()) {
        message.push_str(&format!("; {} held back: {}", read.tag, read.reason));
    }
    match &status.latest_ref {
        Some(latest) => message.push_str(&format!("; {} stays elected", latest.tag)),
        None => message.push_str("; nothing is elected yet"),
    }
    message
}

/// The Alert metadata of a policy event, under keys Flux's notification-controller keeps: it
/// passes on only `<involved object's group>/<key>` (prefix removed) and
/// `event.toolkit.fluxcd.io/<key>`, drops `<group>/digest` and `<group>/checksum`, and
/// de-duplicates events by message plus `<group>/revision`. So the revision is `tag@digest`
/// (a digest change under the same tag is never folded into the tag change), and the digests
/// travel as `latestDigest` and `previousDigest`.
pub fn ref_metadata(status: &ImagePolicyStatus) -> BTreeMap<String, String> {
    let mut metadata = BTreeMap::new();
    let mut put = |key: &str, value: Option<&String>| {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            metadata.insert(format!("{API_GROUP}/{key}"), value.clone());
        }
    };
    if let Some(latest) = &status.latest_ref {
        let revision = match &latest.digest {
            Some(digest) if !digest.is_empty() => format!("{}@{digest}", latest.tag),
            _ => latest.tag.clone(),
        };
        put(REVISION_KEY, Some(&revision));
        put("latestTag", Some(&latest.tag));
        put("latestDigest", latest.digest.as_ref());
    }
    if let Some(previous) = &status.observed_previous_ref {
        put("previousTag", Some(&previous.tag));
        put("previousDigest", previous.digest.as_ref());
    }
    metadata
}

/// The Normal events of a gated election (docs/imagepolicy.md): `HeldBack` when a gate first
/// holds a candidate back (a tag and digest not held before), `DowngradeRefused` when the
/// downgrade guard first holds at the elected tag, and `HeldBackElected` when a tag that was
/// held back is elected.
pub fn held_events(old: &ImagePolicyStatus, new: &ImagePolicyStatus) -> Vec<EventSpec> {
    let before = old.held_back.as_deref().unwrap_or_default();
    let now = new.held_back.as_deref().unwrap_or_default();
    let refused = |h: &HeldBackTag| h.gate == downgrade::GATE;
    let mut events: Vec<EventSpec> = now
        .iter()
        .filter(|h| {
            // A downgrade refused is announced once while the policy holds at the same tag,
            // whichever lower tag is the best listed.
            !before.iter().any(|b| match refused(h) {
                true => refused(b) && b.reason == h.reason,
                false => b.tag == h.tag && b.digest == h.digest,
            })
        })
        .map(|h| match refused(h) {
            true => EventSpec {
                type_: EventType::Normal,
                reason: "DowngradeRefused".into(),
                message: downgrade::held_at(new, h),
            },
            false => EventSpec {
                type_: EventType::Normal,
                reason: "HeldBack".into(),
                message: format!("{} held back by {}: {}", h.tag, h.gate, h.reason),
            },
        })
        .collect();
    events.extend(downgraded(old, new));
    let elected = new.latest_ref.as_ref().map(|r| r.tag.as_str());
    let was_elected = old.latest_ref.as_ref().map(|r| r.tag.as_str());
    if let Some(held) = before
        .iter()
        .find(|b| Some(b.tag.as_str()) == elected && elected != was_elected)
    {
        events.push(EventSpec {
            type_: EventType::Normal,
            reason: "HeldBackElected".into(),
            message: format!(
                "{} elected: it passes every gate now (held back by {} before: {})",
                held.tag, held.gate, held.reason
            ),
        });
    }
    events
}

/// The Warning of an election that went down because a gate now holds back the tag elected
/// before (a gate turned on, a signature gone): only `downgrade: Allow` (the default) gets
/// there, since `Refuse` keeps that tag. Alerts on Warning see a rollback before Git does.
fn downgraded(old: &ImagePolicyStatus, new: &ImagePolicyStatus) -> Option<EventSpec> {
    let (was, now) = (old.latest_ref.as_ref()?, new.latest_ref.as_ref()?);
    if was.name != now.name || was.tag == now.tag {
        return None;
    }
    let held = new.held_back.as_deref().unwrap_or_default();
    let why = held
        .iter()
        .find(|h| h.tag == was.tag && h.gate != downgrade::GATE)?;
    Some(EventSpec {
        type_: EventType::Warning,
        reason: "Downgraded".into(),
        message: format!(
            "{} elected below {}, which {} now holds back: {} (spec.downgrade: Allow; \
             Refuse keeps {})",
            now.tag, was.tag, why.gate, why.reason, was.tag
        ),
    })
}

/// notification-controller's de-duplication key (with the message).
pub const REVISION_KEY: &str = "revision";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{HeldBackTag, ImageRef};

    fn r(tag: &str, digest: Option<&str>) -> ImageRef {
        ImageRef {
            name: "foo/bar".into(),
            tag: tag.into(),
            digest: digest.map(String::from),
        }
    }

    #[test]
    fn ready_messages_are_fluxs() {
        let status = |latest, previous: Option<ImageRef>| ImagePolicyStatus {
            latest_ref: Some(latest),
            observed_previous_ref: previous.map(Box::new),
            ..Default::default()
        };
        assert_eq!(
            ready_message(&status(r("1.1.0", None), Some(r("1.0.0", None)))),
            "Latest image tag for foo/bar resolved to 1.1.0 (previously foo/bar:1.0.0)"
        );
        assert_eq!(
            ready_message(&status(
                r("1.0.0", Some("sha256:1234567890abcdef")),
                Some(r("1.0.0", Some("sha256:abcdef1234567890")))
            )),
            "Latest image tag for foo/bar resolved to 1.0.0 with digest sha256:1234567890abcdef (previously foo/bar:1.0.0@sha256:abcdef1234567890)"
        );
        assert_eq!(
            ready_message(&status(r("1.0.0", None), None)),
            "Latest image tag for foo/bar resolved to 1.0.0"
        );
        assert_eq!(
            ready_message(&status(r("1.0.0", None), Some(r("1.0.0", None)))),
            "Latest image tag for foo/bar resolved to 1.0.0",
            "a previous ref equal to the latest is not shown"
        );
    }

    /// Ready names the best candidate's reason, and a field typo's even when the best is held
    /// for something else.
    #[test]
    fn nothing_eligible_names_the_best_reason_and_a_missing_field() {
        let held = |tag: &str, reason: &str| HeldBackTag {
            tag: tag.into(),
            digest: None,
            gate: "verify".into(),
            reason: reason.into(),
        };
        let typo = "attestation 'provenance' (t): condition 'predicate.a.b' failed: reads \
                    predicate.a, which this attestation does not have (no such key)";
        let none = "attestation 'provenance' (t): no attestation of that type";
        let mut status = ImagePolicyStatus {
            held_back: Some(vec![
                held("2.0.0", none),
                held("1.9.0", typo),
                held("1.8.0", typo),
            ]),
            ..Default::default()
        };
        assert_eq!(
            no_eligible_message(&status, 3),
            format!(
                "no tag passes the gates among the 3 best candidates (2.0.0 held back: {none}); \
                 1.9.0 held back: {typo}; nothing is elected yet"
            )
        );
        status.held_back = Some(vec![held("1.9.0", typo), held("1.8.0", typo)]);
        let once = format!(
            "no tag passes the gates among the 2 best candidates (1.9.0 held back: {typo}); \
             nothing is elected yet"
        );
        assert_eq!(no_eligible_message(&status, 2), once);
    }

    #[test]
    fn held_back_tags_are_announced_once_and_when_elected() {
        use crate::api::HeldBackTag;
        let held = |tag: &str, digest: &str| HeldBackTag {
            tag: tag.into(),
            digest: Some(digest.into()),
            gate: "minAge".into(),
            reason: "3h old, minAge 168h".into(),
        };
        let status = |latest: &str, held_back: Vec<HeldBackTag>| ImagePolicyStatus {
            latest_ref: Some(r(latest, None)),
            held_back: (!held_back.is_empty()).then_some(held_back),
            ..Default::default()
        };
        let first = held_events(
            &status("1.4.0", vec![]),
            &status("1.4.0", vec![held("1.5.0", "sha256:a")]),
        );
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].reason, "HeldBack");
        assert_eq!(
            first[0].message,
            "1.5.0 held back by minAge: 3h old, minAge 168h"
        );
        let again = status("1.4.0", vec![held("1.5.0", "sha256:a")]);
        assert!(held_events(&again, &again).is_empty(), "announced once");
        let moved = held_events(&again, &status("1.4.0", vec![held("1.5.0", "sha256:b")]));
        assert_eq!(moved.len(), 1, "a moved tag is another image");
        let elected = held_events(&again, &status("1.5.0", vec![]));
        assert_eq!(elected.len(), 1);
        assert_eq!(elected[0].reason, "HeldBackElected");
        assert!(
            elected[0].message.starts_with("1.5.0 elected"),
            "{:?}",
            elected[0]
        );
    }

    /// A gate that holds back the tag elected before, with a lower one elected, is a Warning
    /// naming both tags and the gate; a move up, or a previous tag merely gone, is not.
    #[test]
    fn a_gate_that_lowers_the_election_warns() {
        use crate::api::HeldBackTag;
        let status = |latest: &str, held_back: Vec<HeldBackTag>| ImagePolicyStatus {
            latest_ref: Some(r(latest, None)),
            held_back: (!held_back.is_empty()).then_some(held_back),
            ..Default::default()
        };
        let young = |tag: &str| HeldBackTag {
            tag: tag.into(),
            digest: None,
            gate: "minAge".into(),
            reason: "10s old, minAge 1h".into(),
        };
        let events = held_events(
            &status("1.5.0", vec![]),
            &status("1.2.0", vec![young("1.5.0"), young("1.4.0")]),
        );
        let warning: Vec<&EventSpec> = events
            .iter()
            .filter(|e| e.type_ == EventType::Warning)
            .collect();
        assert_eq!(warning.len(), 1, "{events:?}");
        assert_eq!(warning[0].reason, "Downgraded");
        assert_eq!(
            warning[0].message,
            "1.2.0 elected below 1.5.0, which minAge now holds back: 10s old, minAge 1h \
             (spec.downgrade: Allow; Refuse keeps 1.5.0)"
        );
        let gone = held_events(
            &status("1.5.0", vec![]),
            &status("1.2.0", vec![young("1.4.0")]),
        );
        assert!(gone.iter().all(|e| e.type_ != EventType::Warning));
        let up = held_events(&status("1.2.0", vec![]), &status("1.5.0", vec![]));
        assert!(up.iter().all(|e| e.type_ != EventType::Warning));
    }

    #[test]
    fn alert_metadata_names_tags_and_digests() {
        let status = ImagePolicyStatus {
            latest_ref: Some(ImageRef {
                name: "a/b".into(),
                tag: "1.1".into(),
                digest: Some("sha256:new".into()),
            }),
            observed_previous_ref: Some(Box::new(ImageRef {
                name: "a/b".into(),
                tag: "1.0".into(),
                digest: None,
            })),
            ..Default::default()
        };
        let metadata = ref_metadata(&status);
        let expected: BTreeMap<String, String> = [
            ("revision", "1.1@sha256:new"),
            ("latestTag", "1.1"),
            ("latestDigest", "sha256:new"),
            ("previousTag", "1.0"),
        ]
        .iter()
        .map(|(k, v)| (format!("image.toolkit.fluxcd.io/{k}"), v.to_string()))
        .collect();
        assert_eq!(metadata, expected);
    }
}
