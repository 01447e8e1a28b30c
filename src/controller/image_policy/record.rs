//! The one place an election reaches the status: `latestRef`, `observedPreviousRef`,
//! `heldBack` and the conditions, whichever way the tag was elected (with gates or without).

use super::election::{Election, Pause, MAX_INSPECTIONS};
use super::report::{held_note, no_eligible_message, ready_message};
use crate::api::{HeldBackTag, ImagePolicyStatus, MAX_HELD_BACK};
use crate::controller::outcome::conditions::{ConditionType, Conditions, Reason};
use crate::controller::outcome::next::Next;
use crate::controller::outcome::stop::Stop;
use crate::controller::outcome::summary::Outcome;
use std::time::Duration;

/// How soon an unfinished walk goes on.
pub const CONTINUE_WALK: Duration = Duration::from_secs(2);

/// Writes `election` into `status` and says how the reconcile ends: a new tag, or a new digest
/// under the same tag, moves the previous `latestRef` to `observedPreviousRef`.
pub(super) fn record(
    status: &mut ImagePolicyStatus,
    c: &mut Conditions<'_>,
    election: Election,
) -> Result<(Outcome, Next, String), Stop> {
    let was = status.latest_ref.as_ref().map(|r| r.tag.clone());
    let before = status.observed_previous_ref.as_ref().map(|r| r.tag.clone());
    let keep = |held: Vec<HeldBackTag>| keep_held(held, [was.as_deref(), before.as_deref()]);
    match election {
        Election::Elected {
            elected,
            held,
            next,
        } => {
            status.held_back = keep(held);
            if status.latest_ref.as_ref() != Some(&elected) {
                status.observed_previous_ref = status.latest_ref.replace(elected).map(Box::new);
            }
            c.delete(ConditionType::Ready);
            let message = ready_message(status) + &held_note(status);
            let outcome = Outcome::Succeeded {
                message: message.clone(),
            };
            Ok((
                outcome,
                next.map_or(Next::AwaitChange, Next::After),
                message,
            ))
        }
        Election::Unfinished {
            held,
            walked,
            pause,
        } => {
            status.held_back = keep(held);
            let why = match pause {
                Pause::Inspections => {
                    format!("at most {MAX_INSPECTIONS} registry inspections each")
                }
                Pause::Yielded => "an attestation evaluation gave its slot to another \
                    namespace under its fair share"
                    .to_string(),
            };
            Err(Stop::Progressing {
                message: format!(
                    "looked at {walked} candidates; going on in the next reconcile ({why})"
                ),
                next: CONTINUE_WALK,
                unknown: false,
            })
        }
        Election::Dating { left, of } => Err(Stop::Progressing {
            message: format!(
                "reading the creation times of the {of} tags first listed at the same scan \
                 (spec.policy.newest orders them so), {left} left; going on in the next \
                 reconcile (at most {MAX_INSPECTIONS} registry inspections each)"
            ),
            next: CONTINUE_WALK,
            unknown: false,
        }),
        Election::NoneEligible { held, walked, next } => {
            status.held_back = keep(held);
            let message = no_eligible_message(status, walked);
            Err(Stop::Settled(Reason::NoEligibleTag, message, next))
        }
    }
}

/// The first [`MAX_HELD_BACK`] entries, best first; when a tag elected before (`latestRef`, or
/// `observedPreviousRef`, judged again for the door) is held back beyond them, its entry takes
/// the last place, so that neither the Warning of a downgrade (report.rs) nor the door's
/// leaving it out (docs/admission.md) is cut away.
fn keep_held(mut held: Vec<HeldBackTag>, kept: [Option<&str>; 2]) -> Option<Vec<HeldBackTag>> {
    let must = |h: &HeldBackTag| kept.contains(&Some(h.tag.as_str()));
    let beyond: Vec<HeldBackTag> = held
        .iter()
        .skip(MAX_HELD_BACK)
        .filter(|h| must(h))
        .cloned()
        .collect();
    held.truncate(MAX_HELD_BACK);
    for entry in beyond {
        if let Some(last) = held.iter().rposition(|h| !must(h)) {
            held.remove(last);
        }
        held.push(entry);
    }
    (!held.is_empty()).then_some(held)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_elected_before_keeps_its_entry_among_the_ten() {
        let held: Vec<HeldBackTag> = (0..14)
            .map(|i| HeldBackTag {
                tag: format!("1.{}.0", 20 - i),
                gate: "minAge".into(),
                ..Default::default()
            })
            .collect();
        let tags = |kept: Option<Vec<HeldBackTag>>| -> Vec<String> {
            kept.unwrap().into_iter().map(|h| h.tag).collect()
        };
        let plain = tags(keep_held(held.clone(), [Some("1.20.0"), None]));
        assert_eq!(plain.len(), MAX_HELD_BACK);
        assert_eq!((plain[0].as_str(), plain[9].as_str()), ("1.20.0", "1.11.0"));
        let kept = tags(keep_held(held.clone(), [Some("1.8.0"), None]));
        assert_eq!(kept.len(), MAX_HELD_BACK);
        assert_eq!((kept[8].as_str(), kept[9].as_str()), ("1.12.0", "1.8.0"));
        let both = tags(keep_held(held.clone(), [Some("1.8.0"), Some("1.7.0")]));
        assert_eq!(both.len(), MAX_HELD_BACK);
        assert_eq!(both[7..], ["1.13.0", "1.8.0", "1.7.0"]);
        assert_eq!(keep_held(Vec::new(), [None, None]), None);
    }

    /// A new tag (or digest) moves the last `latestRef` to `observedPreviousRef`; the same one
    /// leaves both as they are.
    #[test]
    fn a_new_election_keeps_the_previous_one() {
        let image = |tag: &str| crate::api::ImageRef {
            name: "reg/app".into(),
            tag: tag.into(),
            digest: None,
        };
        let elect = |status: &mut ImagePolicyStatus, tag: &str| {
            let mut list = Vec::new();
            let now = k8s_openapi::jiff::Timestamp::UNIX_EPOCH;
            let mut c = Conditions::new(&mut list, 1, now);
            let election = Election::Elected {
                elected: image(tag),
                held: Vec::new(),
                next: None,
            };
            record(status, &mut c, election).unwrap();
        };
        let mut status = ImagePolicyStatus::default();
        elect(&mut status, "1.0.0");
        assert_eq!(status.observed_previous_ref, None);
        elect(&mut status, "1.1.0");
        let previous = status.observed_previous_ref.clone().map(|p| p.tag);
        assert_eq!(previous.as_deref(), Some("1.0.0"));
        elect(&mut status, "1.1.0");
        let previous = status.observed_previous_ref.clone().map(|p| p.tag);
        assert_eq!(
            previous.as_deref(),
            Some("1.0.0"),
            "unchanged by the same election"
        );
    }
}
