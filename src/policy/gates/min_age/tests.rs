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
            "until 1970-04-17T23:00:00Z: minAge 168h after it was signed \
             (1970-04-10T23:00:00Z, as its transparency log or timestamp authority says)"
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

#[test]
fn times_read_as_instants() {
    assert_eq!(instant(0), "1970-01-01T00:00:00Z");
    assert_eq!(instant(1_796_637_600), "2026-12-07T10:00:00Z");
    assert_eq!(
        instant(i64::MAX),
        "9223372036854775807 seconds after 1970-01-01T00:00:00Z"
    );
}

/// `minAgeByBump` (issue 74, item 2): each kind of bump its own age on every clock; a kind not
/// set, and a candidate that is no bump, `minAge`'s.
mod by_bump {
    use super::*;
    use crate::policy::gates::{Age, ByBump};

    fn days(d: i64) -> Option<Age> {
        Some(Age {
            age: Duration::from_secs((d * DAY) as u64),
            written: format!("{}h", d * 24),
        })
    }

    fn cooldown() -> ByBump {
        ByBump {
            major: days(30),
            minor: None,
            patch: days(1),
        }
    }

    /// An image `created` days ago, seen `seen` days ago, signed an hour ago, of `bump`.
    fn candidate(created: i64, seen: i64, bump: Bump) -> Facts<'static> {
        Facts::at(NOW)
            .with_image(ImageView {
                created: Some(NOW - created * DAY),
                platforms: &[],
            })
            .with_first_seen(NOW - seen * DAY)
            .with_signature(Ok("cosign.pub"))
            .with_signed_at(Some(NOW - 3600))
            .with_bump(bump)
    }

    fn reason(gate: &MinAge, facts: &Facts<'_>) -> Option<String> {
        match judged(gate, facts) {
            Ok(Judgement::Pass) => None,
            Ok(Judgement::Hold(hold)) => Some(hold.reason),
            Err(missing) => panic!("{missing:?}"),
        }
    }

    #[test]
    fn each_bump_waits_its_own_age_on_each_clock() {
        let gate = gate(SignedClock::Off).with_bumps(cooldown());
        assert!(gate.needs().contains(Fact::Bump));
        assert_eq!(
            gate.describe(),
            "minAge 168h, major 720h, patch 24h",
            "select --explain names every age"
        );
        // A patch two days old passes on its own day; under minAge's week it would wait.
        assert_eq!(reason(&gate, &candidate(2, 2, Bump::Patch)), None);
        // A major bump ten days old waits for 30, by the creation time...
        assert_eq!(
            reason(&gate, &candidate(10, 40, Bump::Major)).as_deref(),
            Some(
                "until 1970-05-01T00:00:00Z: minAgeByBump.major 720h (a major bump) after its \
                 creation (1970-04-01T00:00:00Z)"
            )
        );
        // ...and by the first sighting.
        assert_eq!(
            reason(&gate, &candidate(40, 10, Bump::Major)).as_deref(),
            Some(
                "until 1970-05-01T00:00:00Z: minAgeByBump.major 720h (a major bump) after it was \
                 first seen at this digest (1970-04-01T00:00:00Z)"
            )
        );
        // Minor is not set: minAge's week. Unranked (a first election): the week too.
        for bump in [Bump::Minor, Bump::Unranked] {
            assert_eq!(
                reason(&gate, &candidate(5, 5, bump)).as_deref(),
                Some(
                    "until 1970-04-13T00:00:00Z: minAge 168h after its creation \
                     (1970-04-06T00:00:00Z)"
                ),
                "clocks that open together: the first named"
            );
            assert_eq!(reason(&gate, &candidate(8, 8, bump)), None);
        }
        // The signing time is a clock of the bump's age too.
        let signed = gate.with_signed_clock(SignedClock::IfPresent);
        assert_eq!(
            reason(&signed, &candidate(2, 2, Bump::Patch)).as_deref(),
            Some(
                "until 1970-04-11T23:00:00Z: minAgeByBump.patch 24h (a patch bump) after it was \
                 signed (1970-04-10T23:00:00Z, as its transparency log or timestamp authority \
                 says)"
            )
        );
    }

    #[test]
    fn without_min_age_a_candidate_of_no_set_kind_passes() {
        let gate = MinAge::by_bump_only(cooldown(), Undated::Hold);
        assert_eq!(gate.describe(), "minAge major 720h, patch 24h");
        assert_eq!(reason(&gate, &candidate(0, 0, Bump::Minor)), None);
        assert_eq!(reason(&gate, &candidate(0, 0, Bump::Unranked)), None);
        assert!(reason(&gate, &candidate(0, 0, Bump::Patch)).is_some());
        // An undated image is held only when a set age asks for one.
        let undated = Facts::at(NOW)
            .with_image(ImageView {
                created: None,
                platforms: &[],
            })
            .with_first_seen(0);
        let held = reason(&gate, &undated.clone().with_bump(Bump::Major)).unwrap();
        assert!(
            held.ends_with("minAgeByBump.major 720h (a major bump) fails closed"),
            "{held}"
        );
        assert_eq!(reason(&gate, &undated.with_bump(Bump::Unranked)), None);
    }

    #[test]
    fn one_kind_alone_is_asked_for() {
        for (by_bump, held) in [
            (
                ByBump {
                    major: days(30),
                    ..Default::default()
                },
                Bump::Major,
            ),
            (
                ByBump {
                    minor: days(30),
                    ..Default::default()
                },
                Bump::Minor,
            ),
            (
                ByBump {
                    patch: days(30),
                    ..Default::default()
                },
                Bump::Patch,
            ),
        ] {
            let gate = MinAge::by_bump_only(by_bump, Undated::Hold);
            assert!(gate.needs().contains(Fact::Bump), "{held:?}");
            assert!(reason(&gate, &candidate(2, 2, held)).is_some(), "{held:?}");
        }
    }

    #[test]
    fn an_unknown_bump_is_missing_never_minage_alone() {
        let gate = gate(SignedClock::Off).with_bumps(cooldown());
        let facts = Facts::at(NOW)
            .with_image(ImageView {
                created: Some(NOW - 8 * DAY),
                platforms: &[],
            })
            .with_first_seen(0);
        assert_eq!(judged(&gate, &facts), Err(Missing(Fact::Bump)));
        // Without minAgeByBump the bump is not asked for.
        let plain = super::gate(SignedClock::Off);
        assert!(!plain.needs().contains(Fact::Bump));
        assert_eq!(judged(&plain, &facts), Ok(Judgement::Pass));
    }
}
