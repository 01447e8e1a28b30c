use super::*;
use crate::api::{HeldBackTag, HeldBy, ImageRef};

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
        also_held_by: None,
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
        also_held_by: None,
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
    assert_eq!(first[0].type_, EventType::Normal, "a cooldown is routine");
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

/// A tag `verify` holds beside an elected tag (which passed it) is a Warning: an unsigned
/// or wrongly built image appeared. With nothing elected it is the policy's Ready that
/// says so.
#[test]
fn a_tag_verify_holds_beside_an_election_warns() {
    let unsigned = HeldBackTag {
        tag: "1.5.0".into(),
        digest: Some("sha256:a".into()),
        gate: "verify".into(),
        reason: "no signature".into(),
        also_held_by: None,
    };
    let status = |latest: Option<&str>, held: &[HeldBackTag]| ImagePolicyStatus {
        latest_ref: latest.map(|t| r(t, None)),
        held_back: (!held.is_empty()).then(|| held.to_vec()),
        ..Default::default()
    };
    let held = std::slice::from_ref(&unsigned);
    let before = status(Some("1.4.0"), &[]);
    let events = held_events(&before, &status(Some("1.4.0"), held));
    assert_eq!(
        (events[0].type_, events[0].message.as_str()),
        (
            EventType::Warning,
            "1.5.0 held back by verify: no signature"
        )
    );
    let none = held_events(&status(None, &[]), &status(None, held));
    assert_eq!(none[0].type_, EventType::Normal);
    let again = status(Some("1.4.0"), held);
    let newly: Vec<&str> = newly_held(&before, &again)
        .map(|h| h.gate.as_str())
        .collect();
    assert_eq!(newly, ["verify"]);
    assert_eq!(newly_held(&again, &again).count(), 0, "counted once");
    // verify among the gates that hold it, after the longest: a Warning all the same, and
    // every gate said.
    let young = HeldBackTag {
        tag: "1.6.0".into(),
        gate: "minAge".into(),
        reason: "until 2026-12-14T10:00:00Z: ...".into(),
        also_held_by: Some(vec![HeldBy {
            gate: "verify".into(),
            reason: "no signature".into(),
        }]),
        ..unsigned.clone()
    };
    let events = held_events(&before, &status(Some("1.4.0"), &[young]));
    assert_eq!(
        (events[0].type_, events[0].message.as_str()),
        (
            EventType::Warning,
            "1.6.0 held back by minAge: until 2026-12-14T10:00:00Z: ...; and by verify: no signature"
        )
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
        also_held_by: None,
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

/// A refused downgrade is new once while the policy holds at the same tag, whichever lower tag
/// is listed; held at another tag it is new again; a gate's hold is never the guard's.
#[test]
fn a_refused_downgrade_is_new_once_per_tag_held_at() {
    let refused = |tag: &str, reason: &str| HeldBackTag {
        tag: tag.into(),
        digest: None,
        gate: "downgrade".into(),
        reason: reason.into(),
        also_held_by: None,
    };
    let status = |held: Vec<HeldBackTag>| ImagePolicyStatus {
        latest_ref: Some(r("1.5.0", None)),
        held_back: Some(held),
        ..Default::default()
    };
    let at = "held at 1.5.0";
    let before = status(vec![refused("1.4.0", at)]);
    let again = status(vec![refused("1.3.0", at)]);
    assert_eq!(
        newly_held(&before, &again).count(),
        0,
        "the same tag held at"
    );
    let elsewhere = status(vec![refused("1.3.0", "held at 1.6.0")]);
    assert_eq!(newly_held(&before, &elsewhere).count(), 1);
    let gate = HeldBackTag {
        gate: "minAge".into(),
        ..refused("1.4.0", at)
    };
    assert_eq!(newly_held(&status(vec![gate]), &before).count(), 1);
}

/// `HeldBackElected` only for a tag that was held back and is elected now: an election moving
/// to a tag never held says nothing of the tags still held.
#[test]
fn held_back_elected_is_for_the_tag_held_before() {
    let held = HeldBackTag {
        tag: "1.6.0".into(),
        digest: None,
        gate: "minAge".into(),
        reason: "1h old, minAge 168h".into(),
        also_held_by: None,
    };
    let status = |latest: &str| ImagePolicyStatus {
        latest_ref: Some(r(latest, None)),
        held_back: Some(vec![held.clone()]),
        ..Default::default()
    };
    let events = held_events(&status("1.4.0"), &status("1.5.0"));
    assert!(
        events.iter().all(|e| e.reason != "HeldBackElected"),
        "{events:?}"
    );
}
