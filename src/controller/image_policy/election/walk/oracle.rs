//! The property test's oracle (issue 87): what docs/imagepolicy.md says each gate asks of a
//! candidate, written from the docs over the model's own facts and calling no production gate
//! (`policy/gates/` is what it checks), and the property that uses it: an elected tag must
//! pass it. The production gates may hold more (they also fail closed on facts the docs pass
//! over), never less.

use super::model::{gates, index, run, Answer, Case, Image, StoredVerdict, Tag};
use super::Walked;
use crate::policy::Bump;
use proptest::prelude::*;

const NOW: i64 = 1_000 * 86_400;
const DAY: i64 = 86_400;

/// `Ok` when every gate `case` sets passes `t` by the docs, else the first that does not.
pub(super) fn passes(case: &Case, t: &Tag) -> Result<(), String> {
    failing(case, t).into_iter().next().map_or(Ok(()), Err)
}

/// Every gate `case` sets that the docs say holds `t` ("status.heldBack says every gate that
/// holds a tag"), each as `gate: why`, in the gates' order.
pub(super) fn failing(case: &Case, t: &Tag) -> Vec<String> {
    let image = t.stored_image.as_ref().or(match &t.image {
        Answer::Found(image) => Some(image),
        _ => None,
    });
    let mut failing = Vec::new();
    // "spec.platforms: every platform present": the model's policy asks for linux/amd64.
    let offered = image.is_some_and(|i| i.platforms.contains(&"linux/amd64"));
    if case.gates & 1 != 0 && !offered {
        failing.push("platforms: linux/amd64 is not offered".into());
    }
    let age = asked_days(case, t).and_then(|days| match days {
        Some(days) => min_age(case, t, image, days * DAY),
        None => Ok(()),
    });
    failing.extend(age.err());
    if case.gates & 4 != 0 && !signed(case, t) {
        failing.push("verify: no valid signature by the trusted key".into());
    }
    failing
}

/// The age a candidate waits, in days: "minAge 168h"; with "minAgeByBump" (major 720h, patch
/// 24h here), its bump's, and minAge's for a kind not set and for a tag that is no rise (none
/// without minAge). A bump the walk was not given is not known: held.
fn asked_days(case: &Case, t: &Tag) -> Result<Option<i64>, String> {
    let base = (case.gates & 2 != 0).then_some(7);
    if case.gates & 8 == 0 {
        return Ok(base);
    }
    if case.gates & 16 == 0 {
        return Err("minAge: the candidate's bump is not known".into());
    }
    Ok(match t.bump {
        Bump::Major => Some(30),
        Bump::Patch => Some(1),
        Bump::Minor | Bump::Unranked => base,
    })
}

/// "minAge holds until both the creation time and the first sighting are old enough"; an
/// image that says nothing of its creation is not eligible, unless `minAgeUndated: FirstSeen`
/// judges it by its first sighting alone.
fn min_age(case: &Case, t: &Tag, image: Option<&Image>, needed: i64) -> Result<(), String> {
    match image.and_then(|i| i.age_days) {
        Some(days) if days * DAY < needed => return Err(format!("minAge: created {days}d ago")),
        Some(_) => {}
        None if case.undated => {}
        None => return Err("minAge: no creation time".into()),
    }
    match t.first_seen_stored.or(t.first_seen) {
        Some(seen) if NOW - seen >= needed => {}
        Some(seen) => return Err(format!("minAge: first seen {}s ago", NOW - seen)),
        None => return Err("minAge: never seen".into()),
    }
    signed_clock(case, t, needed)
}

/// "With spec.verify, minAge also reads when the valid signature was made"; without such a
/// time, `minAgeSignedTime: IfPresent` passes on the other clocks and `Required` holds. A
/// signature that does not verify is the verify gate's to hold.
fn signed_clock(case: &Case, t: &Tag, needed: i64) -> Result<(), String> {
    if case.gates & 4 == 0 || case.signed_clock == 0 || !signed(case, t) {
        return Ok(());
    }
    match t.signed_days {
        Some(days) if days * DAY < needed => Err(format!("minAge: signed {days}d ago")),
        Some(_) => Ok(()),
        None if case.signed_clock == 2 => Err("minAge: no signing time, Required".into()),
        None => Ok(()),
    }
}

/// "A valid signature is kept until its own end", and a refusal for the recheck (five minutes
/// in the model) unless a reconcile is requested; otherwise the check made now decides.
fn signed(case: &Case, t: &Tag) -> bool {
    match t.stored_verdict {
        Some(StoredVerdict::Valid(until)) if until.is_none_or(|u| u > 0) => true,
        Some(StoredVerdict::Invalid(age)) if age < 300 && !case.requested => false,
        _ => matches!(t.signature, Answer::Found(true)),
    }
}

/// "`downgrade: Refuse`: once a tag is elected, the policy never elects a tag its own ordering
/// ranks lower"; the walk stops at it ("held at"), and a downgrade is refused only when that
/// tag is no longer listed and nothing above it passes.
fn floor(case: &Case, walked: &Walked, held: &[usize]) -> Result<(), TestCaseError> {
    let Some((at, listed)) = case.floor else {
        prop_assert!(walked.refused.is_none(), "refused without a floor");
        return Ok(());
    };
    let elected = walked.elected.as_ref().map(|e| index(&e.tag));
    prop_assert!(elected.is_none_or(|e| e <= at), "elected below the floor");
    prop_assert!(held.iter().all(|i| *i <= at), "walked below the floor");
    let refuses =
        !listed && elected.is_none() && walked.unfinished.is_none() && at + 1 < case.tags.len();
    match &walked.refused {
        Some(refused) => {
            prop_assert!(refuses, "refused {refused}");
            prop_assert_eq!(index(refused), at + 1, "the first tag below the floor");
        }
        None => prop_assert!(!refuses, "no downgrade refused"),
    }
    Ok(())
}

/// The property, for one case.
pub(super) fn check(case: &Case) -> Result<(), TestCaseError> {
    let Some(walked) = run(case) else {
        return Ok(()); // a failed look elects nothing
    };
    let held: Vec<usize> = walked.held.iter().map(|h| index(&h.tag)).collect();
    prop_assert!(
        held.windows(2).all(|w| w[0] < w[1]),
        "held best first: {held:?}"
    );
    for h in &walked.held {
        let gates: Vec<&str> = h.holds().map(|(gate, _)| gate).collect();
        for why in failing(case, &case.tags[index(&h.tag)]) {
            let gate = why.split(':').next().unwrap_or_default();
            prop_assert!(
                gates.contains(&gate),
                "{} held by {gates:?}: not by {why}",
                h.tag
            );
        }
        // Longest first: a hold time alone opens ("until ...") after those it does not.
        let timed: Vec<bool> = h.holds().map(|(_, r)| r.starts_with("until ")).collect();
        prop_assert!(timed.windows(2).all(|w| w[0] <= w[1]), "{h:?}");
    }
    floor(case, &walked, &held)?;
    let Some(elected) = &walked.elected else {
        return Ok(());
    };
    let at = index(&elected.tag);
    let t = &case.tags[at];
    // Flux's election with `Never` and no gate looks nothing up: it elects from the scan's
    // list, as Flux does, a tag deleted since included.
    let flux = case.never && case.gates & (1 | 2 | 4 | 8) == 0;
    prop_assert!(!t.gone || flux, "a gone tag elected");
    let gates = gates(case);
    let names = gates.names();
    prop_assert_eq!(elected.passed.gates(), names.as_slice());
    // The docs' gates, not the production ones, judge what was elected.
    let oracle = passes(case, t);
    prop_assert!(
        oracle.is_ok(),
        "{} elected, but the docs hold it: {:?}",
        elected.tag,
        oracle
    );
    // Nothing below it was held back, and every candidate above it was, unless it is gone
    // (since the scan, or found gone by a look-up).
    prop_assert!(
        held.iter().all(|i| *i < at),
        "held below the elected: {held:?}"
    );
    let may_be_gone =
        |t: &Tag| t.gone || matches!(t.image, Answer::Gone) || matches!(t.signature, Answer::Gone);
    let skipped: Vec<usize> = (0..at).filter(|i| !held.contains(i)).collect();
    prop_assert!(
        skipped.iter().all(|i| may_be_gone(&case.tags[*i])),
        "candidates above {} neither held nor gone: {skipped:?}",
        elected.tag
    );
    Ok(())
}
