//! What a policy's election says: Ready's message (Flux's words) and the Alert metadata of its
//! events.

use super::downgrade;
use crate::api::{HeldBackTag, ImagePolicyStatus, API_GROUP};
use crate::controller::events::transition::{EventSpec, EventType};
use crate::policy::conditions::MISSING_FIELD;

/// The gate whose holds beside an election are Warnings.
const VERIFY: &str = "verify";
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
/// `; 1.5.0 held back: until 2026-12-14T10:00:00Z: minAge 168h after its creation (...)`, the
/// longest hold of the best.
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
    let said = held.first().map(|h| (h.tag.as_str(), h.reason.as_str()));
    let typo = held
        .iter()
        .flat_map(|h| h.holds().map(|(_, reason)| (h.tag.as_str(), reason)))
        .find(|(_, reason)| reason.contains(MISSING_FIELD));
    if let Some((tag, reason)) = typo.filter(|read| Some(*read) != said) {
        message.push_str(&format!("; {tag} held back: {reason}"));
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

/// The entries of `new`'s heldBack that `old`'s did not hold: a tag and digest not held
/// before; a downgrade refused, once while the policy holds at the same tag, whichever lower
/// tag is the best listed.
pub fn newly_held<'a>(
    old: &'a ImagePolicyStatus,
    new: &'a ImagePolicyStatus,
) -> impl Iterator<Item = &'a HeldBackTag> {
    let before = old.held_back.as_deref().unwrap_or_default();
    let now = new.held_back.as_deref().unwrap_or_default();
    let refused = |h: &HeldBackTag| h.gate == downgrade::GATE;
    now.iter().filter(move |h| {
        !before.iter().any(|b| match refused(h) {
            true => refused(b) && b.reason == h.reason,
            false => b.tag == h.tag && b.digest == h.digest,
        })
    })
}

/// The events of a gated election (docs/imagepolicy.md): `HeldBack` when a gate first holds a
/// candidate back (a Warning when `verify` holds it beside an elected tag, which passed it:
/// an unsigned or wrongly built image appeared), `DowngradeRefused` when the downgrade guard
/// first holds at the elected tag, and `HeldBackElected` when a tag that was held back is
/// elected.
pub fn held_events(old: &ImagePolicyStatus, new: &ImagePolicyStatus) -> Vec<EventSpec> {
    let before = old.held_back.as_deref().unwrap_or_default();
    let alarming =
        |h: &HeldBackTag| h.holds().any(|(g, _)| g == VERIFY) && new.latest_ref.is_some();
    let mut events: Vec<EventSpec> = newly_held(old, new)
        .map(|h| match h.gate == downgrade::GATE {
            true => EventSpec {
                type_: EventType::Normal,
                reason: "DowngradeRefused".into(),
                message: downgrade::held_at(new, h),
            },
            false => EventSpec {
                type_: match alarming(h) {
                    true => EventType::Warning,
                    false => EventType::Normal,
                },
                reason: "HeldBack".into(),
                message: held_message(h),
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

/// `1.5.0 held back by verify: <reason>; and by minAge: <reason>`: every gate that holds it.
fn held_message(h: &HeldBackTag) -> String {
    let holds: Vec<String> = h
        .holds()
        .map(|(gate, reason)| format!("by {gate}: {reason}"))
        .collect();
    format!("{} held back {}", h.tag, holds.join("; and "))
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
mod tests;
