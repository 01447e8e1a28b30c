//! The signing time as `minAge`'s third clock (issue 74): a store loss makes every tag count
//! as seen long ago, and the creation time is the publisher's; the time a transparency log or
//! timestamp authority vouches the valid signature was made at is neither's to set.

use super::*;
use crate::policy::gates::ImageView;

const DAY: i64 = 86_400;
const NOW: i64 = 100 * DAY;

fn gate(signed: SignedClock) -> MinAge {
    MinAge::new(
        Duration::from_secs(7 * DAY as u64),
        "168h".into(),
        Undated::Hold,
    )
    .with_signed_clock(signed)
}

/// An image created 30 days ago, first seen before the controller (a fresh store), signed as
/// `signature` says at `signed_at`.
fn facts(signature: Result<&'static str, &'static str>, signed_at: Option<i64>) -> Facts<'static> {
    Facts::at(NOW)
        .with_image(ImageView {
            created: Some(NOW - 30 * DAY),
            platforms: &[],
        })
        .with_first_seen(0)
        .with_signature(signature)
        .with_signed_at(signed_at)
}

fn judged(gate: &MinAge, facts: &Facts<'_>) -> Result<Judgement, Missing> {
    gate.judge(&facts.only(gate.needs()))
}

#[test]
fn a_recent_signature_holds_what_the_other_clocks_pass() {
    let hour_old = facts(Ok("dev@example.com"), Some(NOW - 3600));
    for clock in [SignedClock::IfPresent, SignedClock::Required] {
        let Ok(Judgement::Hold(hold)) = judged(&gate(clock), &hour_old) else {
            panic!("held")
        };
        assert_eq!(
            hold.reason,
            "signed 1h ago, as its transparency log or timestamp authority says, minAge 168h"
        );
        assert_eq!(hold.eligible_at, Some(NOW - 3600 + 7 * DAY));
    }
    // Without spec.verify the clock is not read: the creation time and a fresh store pass it.
    assert_eq!(
        judged(&gate(SignedClock::Off), &hour_old),
        Ok(Judgement::Pass)
    );
    assert!(!gate(SignedClock::Off).needs().contains(Fact::Signature));
    assert!(gate(SignedClock::IfPresent)
        .needs()
        .contains(Fact::Signature));
    // Old enough, at exactly its age.
    let week_old = facts(Ok("dev@example.com"), Some(NOW - 7 * DAY));
    assert_eq!(
        judged(&gate(SignedClock::Required), &week_old),
        Ok(Judgement::Pass)
    );
}

#[test]
fn a_signature_without_a_time_passes_unless_one_is_required() {
    let untimed = facts(Ok("cosign.pub"), None);
    assert_eq!(
        judged(&gate(SignedClock::IfPresent), &untimed),
        Ok(Judgement::Pass)
    );
    let Ok(Judgement::Hold(hold)) = judged(&gate(SignedClock::Required), &untimed) else {
        panic!("held")
    };
    assert!(
        hold.reason.contains("minAgeSignedTime: Required"),
        "{}",
        hold.reason
    );
    assert_eq!(hold.eligible_at, None);
    // A signature that does not verify is the verify gate's to hold, with its own reason.
    let refused = facts(Err("no signature"), Some(NOW));
    assert_eq!(
        judged(&gate(SignedClock::Required), &refused),
        Ok(Judgement::Pass)
    );
    // Asked for before the signature is known.
    let unknown = Facts::at(NOW)
        .with_image(ImageView {
            created: Some(NOW - 30 * DAY),
            platforms: &[],
        })
        .with_first_seen(0);
    assert_eq!(
        judged(&gate(SignedClock::IfPresent), &unknown),
        Err(Missing(Fact::Signature))
    );
}
