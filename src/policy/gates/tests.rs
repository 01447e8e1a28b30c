//! Tests of the gates, each alone and in the list's order.

use super::*;

fn p(text: &str) -> Platform {
    Platform::parse(text).unwrap()
}

const DAY: i64 = 86_400;

fn week() -> MinAge {
    MinAge::new(
        Duration::from_secs(7 * DAY as u64),
        "168h".into(),
        Undated::Hold,
    )
}

/// An image read, its tag first seen before the controller (0).
fn image(created: Option<i64>, platforms: &[(Platform, Option<i64>)]) -> Facts<'_> {
    Facts::at(100 * DAY)
        .with_image(ImageView { created, platforms })
        .with_first_seen(0)
}

const PASS: Result<Judgement, Missing> = Ok(Judgement::Pass);

fn held(j: Result<Judgement, Missing>) -> Hold {
    match j {
        Ok(Judgement::Hold(hold)) => hold,
        other => panic!("{other:?}"),
    }
}

/// The gates that hold, longest first.
fn ruled_held(r: Ruling) -> Vec<&'static str> {
    match r {
        Ruling::Held(holds) => holds.iter().map(|h| h.gate).collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn platforms_normalise_as_containerd_does() {
    assert_eq!(p("linux/arm64"), p("linux/arm64/v8"));
    assert_eq!(p("linux/arm64").to_string(), "linux/arm64/v8");
    assert_eq!(Platform::new("linux", "aarch64", None), p("linux/arm64"));
    assert_eq!(
        Platform::new("Linux", "x86_64", Some("v1")),
        p("linux/amd64")
    );
    assert!(p("linux/amd64").served_by(&Platform::new("linux", "amd64", Some("v3"))));
    assert!(!p("linux/arm/v6").served_by(&Platform::new("linux", "arm", None)));
    assert!(!p("linux/amd64").served_by(&p("windows/amd64")));
    for bad in [
        "linux",
        "linux/",
        "/amd64",
        "linux/amd64/v8/x",
        "linux/am d64",
        "",
    ] {
        assert!(Platform::parse(bad).is_err(), "{bad:?}");
    }
    assert!(Platform::parse(&"x/".repeat(100))
        .unwrap_err()
        .contains("longer"));
}

#[test]
fn min_age_says_how_old_and_when() {
    let now = 100 * DAY;
    let gate = week();
    let none = [];
    assert_eq!(gate.judge(&image(Some(now - 8 * DAY), &none)), PASS);
    let young = held(gate.judge(&image(Some(now - 3 * 3600), &none)));
    assert_eq!(young.gate, "minAge");
    assert_eq!(
        young.reason,
        "until 1970-04-17T21:00:00Z: minAge 168h after its creation (1970-04-10T21:00:00Z)"
    );
    assert_eq!(young.eligible_at, Some(now - 3 * 3600 + 7 * DAY));
    let undated = held(gate.judge(&image(None, &none)));
    assert!(undated.reason.contains("fails closed"), "{undated:?}");
    let future = held(gate.judge(&image(Some(now + 7200), &none)));
    assert_eq!(
        future.reason,
        "until 1970-04-18T02:00:00Z: minAge 168h after its creation \
         (1970-04-11T02:00:00Z, in the future)"
    );
    let unknown = Facts::default();
    assert_eq!(gate.judge(&unknown), Err(Missing(Fact::Image)));
}

#[test]
fn platforms_say_what_is_missing() {
    let gate = Platforms::new(vec![p("linux/amd64"), p("linux/arm64")]);
    let both = [(p("linux/amd64"), None), (p("linux/arm64"), None)];
    assert_eq!(gate.judge(&image(None, &both)), PASS);
    let one = held(gate.judge(&image(None, &both[..1])));
    assert_eq!(one.gate, "platforms");
    assert_eq!(one.reason, "missing linux/arm64/v8 (has linux/amd64)");
    let nothing = held(gate.judge(&image(None, &[])));
    assert!(nothing.reason.ends_with("(has none named)"), "{nothing:?}");
    assert_eq!(gate.judge(&Facts::default()), Err(Missing(Fact::Image)));
}

#[test]
fn verify_judges_the_signature_check() {
    let facts = Facts::default();
    assert_eq!(
        Verify::SIGNATURE.judge(&facts),
        Err(Missing(Fact::Signature))
    );
    let signed = facts.clone().with_signature(Ok("cosign.pub"));
    assert_eq!(Verify::SIGNATURE.judge(&signed), PASS);
    let unsigned = facts.with_signature(Err("no cosign signature"));
    assert_eq!(
        held(Verify::SIGNATURE.judge(&unsigned)).reason,
        "no cosign signature"
    );
    let mut attested = Verify {
        attestations: vec!["provenance".into(), "scan".into()],
        signature: true,
    };
    assert_eq!(
        attested.describe(),
        "verify cosign, attestations provenance, scan"
    );
    attested.signature = false;
    assert_eq!(
        attested.describe(),
        "verify cosign attestations provenance, scan (no image signature required)"
    );
    assert_eq!(Verify::SIGNATURE.describe(), "verify cosign");
}

#[test]
fn the_list_judges_in_order_and_asks_for_what_it_lacks() {
    // Given in any order, judged in theirs.
    let amd = vec![p("linux/amd64")];
    let week = week().for_platforms(amd.clone());
    let gates = Gates::of([
        gate(Verify::SIGNATURE),
        gate(week),
        gate(Platforms::new(amd)),
    ]);
    assert_eq!(gates.names(), ["platforms", "minAge", "verify"]);
    assert_eq!(
        gates.describe(),
        ["platforms linux/amd64", "minAge 168h", "verify cosign"]
    );
    assert_eq!(
        gates.needs(),
        Need::of([Fact::Image, Fact::Signature, Fact::FirstSeen])
    );
    // The image first, then the signature: every gate is judged, whichever holds already.
    let none = Need::NONE;
    assert_eq!(
        gates.judge(&Facts::default(), none),
        Ruling::Lacks {
            gate: "platforms",
            fact: Fact::Image
        }
    );
    let amd = [(p("linux/amd64"), Some(0))];
    let arm = [(p("linux/arm64"), Some(0))];
    assert_eq!(
        gates.judge(&image(None, &arm), none),
        Ruling::Lacks {
            gate: "verify",
            fact: Fact::Signature
        }
    );
    let unsigned = |at| image(None, at).with_signature(Err("no signature"));
    let signed = |at| image(None, at).with_signature(Ok("k"));
    assert_eq!(
        ruled_held(gates.judge(&unsigned(&arm), none)),
        ["platforms", "minAge", "verify"],
        "no amd64 image: no creation time either"
    );
    // A hold time alone opens comes after those it does not.
    let young = [(p("linux/amd64"), Some(100 * DAY - 60))];
    assert_eq!(ruled_held(gates.judge(&signed(&young), none)), ["minAge"]);
    assert_eq!(
        ruled_held(gates.judge(&unsigned(&young), none)),
        ["verify", "minAge"]
    );
    // A fact looked up already and still unknown holds its gate.
    let looked = Need::of([Fact::Signature]);
    let holds = match gates.judge(&image(None, &young), looked) {
        Ruling::Held(holds) => holds,
        other => panic!("{other:?}"),
    };
    assert_eq!(holds[0], Hold::unknown("verify", Fact::Signature));
    assert_eq!(holds.len(), 2);
    match gates.judge(&signed(&amd), none) {
        Ruling::Passed(passed) => assert_eq!(passed.gates(), gates.names()),
        other => panic!("{other:?}"),
    }
    assert!(gates.any() && gates.needs_image());
    let verify_only = Gates::of([gate(Verify::SIGNATURE)]);
    assert!(verify_only.any() && !verify_only.needs_image());
    let none = Gates::default();
    assert!(!none.any() && !none.needs_image());
    match none.judge(&Facts::default(), Need::NONE) {
        Ruling::Passed(passed) => assert!(passed.gates().is_empty()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_index_is_as_young_as_the_platforms_that_matter() {
    let amd = (p("linux/amd64"), Some(100));
    let arm = (p("linux/arm64"), Some(300));
    let undated = (p("linux/s390x"), None);
    let all = week();
    let age = Duration::from_secs(1);
    let arm_only =
        MinAge::new(age, "1s".into(), Undated::Hold).for_platforms(vec![p("linux/arm64")]);
    let amd_only =
        MinAge::new(age, "1s".into(), Undated::Hold).for_platforms(vec![p("linux/amd64")]);
    assert_eq!(
        all.created(Some(5), std::slice::from_ref(&amd)),
        Some(5),
        "the image's own"
    );
    assert_eq!(all.created(None, &[amd.clone(), arm.clone()]), Some(300));
    assert_eq!(
        amd_only.created(None, &[amd.clone(), arm.clone()]),
        Some(100)
    );
    assert_eq!(all.created(None, &[amd.clone(), undated.clone()]), None);
    assert_eq!(arm_only.created(None, &[arm, undated]), Some(300));
    assert_eq!(all.created(None, &[]), None);
}

#[test]
fn min_age_needs_both_the_creation_time_and_the_first_sighting() {
    let now = 100 * DAY;
    let gate = week();
    let none = [];
    let facts = image(Some(now - 30 * DAY), &none).with_first_seen(now - 2 * 3600);
    let held_back = held(gate.judge(&facts));
    assert_eq!(
        held_back.reason,
        "until 1970-04-17T22:00:00Z: minAge 168h after it was first seen at this digest \
         (1970-04-10T22:00:00Z)",
        "a backdated creation time does not pass"
    );
    assert_eq!(held_back.eligible_at, Some(now - 2 * 3600 + 7 * DAY));
    let facts = facts.with_first_seen(0);
    assert_eq!(gate.judge(&facts), PASS, "seen before the controller");
    let young = image(Some(now - 3600), &none).with_first_seen(now - 2 * 3600);
    let both = held(gate.judge(&young));
    assert_eq!(
        both.reason,
        "until 1970-04-17T23:00:00Z: minAge 168h after its creation (1970-04-10T23:00:00Z)",
        "the clock that opens last speaks"
    );
    assert_eq!(
        both.eligible_at,
        Some(now - 3600 + 7 * DAY),
        "the later of both"
    );
    // Undated: held, unless the policy judges by first sighting alone.
    let undated = image(None, &none).with_first_seen(now - 8 * DAY);
    assert!(held(gate.judge(&undated)).reason.contains("fails closed"));
    let lenient = MinAge::new(
        Duration::from_secs(7 * DAY as u64),
        "168h".into(),
        Undated::FirstSeen,
    );
    assert_eq!(lenient.judge(&undated), PASS);
    let undated = undated.with_first_seen(now - DAY);
    assert_eq!(
        held(lenient.judge(&undated)).reason,
        "until 1970-04-17T00:00:00Z: minAge 168h after it was first seen at this digest \
         (1970-04-10T00:00:00Z)"
    );
    // No first sighting: a fact to look up, never a pass.
    let unseen = Facts::at(now).with_image(ImageView {
        created: None,
        platforms: &none,
    });
    assert_eq!(lenient.judge(&unseen), Err(Missing(Fact::FirstSeen)));
    let dated = Facts::at(now).with_image(ImageView {
        created: Some(now - 30 * DAY),
        platforms: &none,
    });
    assert_eq!(gate.judge(&dated), Err(Missing(Fact::FirstSeen)));
    assert_eq!(lenient.describe(), "minAge 168h (undated: first seen)");
}

/// The documented bound (docs/security.md), written out: a minimum age of at most ten years of
/// 366 days.
#[test]
fn a_minimum_age_is_at_most_ten_years() {
    assert_eq!(MAX_MIN_AGE, Duration::from_secs(316_224_000));
}

/// Each part of `os/arch[/variant]` is checked, with `_`, `-` and `.` allowed besides ASCII
/// letters and digits, and the whole is at most 64 bytes (exactly 64 is read).
#[test]
fn every_part_of_a_platform_is_checked_up_to_64_bytes() {
    for good in [
        "linux/amd_64",
        "linux/arm-x",
        "linux/arm.x",
        "linux/arm64/v-8",
    ] {
        assert!(Platform::parse(good).is_ok(), "{good:?}");
    }
    for bad in [
        "li nux/arm64/v8",
        "linux/ar m/v8",
        "linux/arm64/v 8",
        "linux//v8",
        "linux/arm64/",
        "lin!ux/amd64",
    ] {
        assert!(Platform::parse(bad).is_err(), "{bad:?}");
    }
    let longest = format!("linux/{}", "a".repeat(58));
    assert_eq!(longest.len(), 64);
    assert!(Platform::parse(&longest).is_ok());
    let over = format!("linux/{}", "a".repeat(59));
    assert!(Platform::parse(&over)
        .unwrap_err()
        .contains("longer than 64 bytes"));
}

/// `minAge` and `platforms` need the image; an image exactly as old as the minimum passes, and
/// one created this very second is not created in the future.
#[test]
fn min_age_passes_at_exactly_its_age() {
    let image_only = Need::of([Fact::Image]);
    assert_eq!(week().needs(), image_only.with(Fact::FirstSeen));
    assert_eq!(Platforms::new(vec![p("linux/amd64")]).needs(), image_only);
    let now = 100 * DAY;
    assert_eq!(week().judge(&image(Some(now - 7 * DAY), &[])), PASS);
    let hold = held(week().judge(&image(Some(now - 7 * DAY + 1), &[])));
    assert_eq!(hold.eligible_at, Some(now + 1));
    let hold = held(week().judge(&image(Some(now), &[])));
    assert_eq!(
        hold.reason,
        "until 1970-04-18T00:00:00Z: minAge 168h after its creation (1970-04-11T00:00:00Z)"
    );
}

/// A gate is shown only the facts it declared: one that reads a fact it did not declare finds
/// it missing even when the walk knows it, so an undeclared fact can never pass a candidate.
#[test]
fn a_gate_sees_only_the_facts_it_needs() {
    #[derive(Debug)]
    struct Undeclared;
    impl Gate for Undeclared {
        fn name(&self) -> &'static str {
            "undeclared"
        }
        fn describe(&self) -> String {
            "reads the signature, declares nothing".into()
        }
        fn needs(&self) -> Need {
            Need::NONE
        }
        fn judge(&self, facts: &Facts<'_>) -> Result<Judgement, Missing> {
            facts.signature().map(|_| Judgement::Pass)
        }
        fn order(&self) -> u8 {
            9
        }
    }
    let gates = Gates::of([gate(Undeclared)]);
    let everything = image(None, &[])
        .with_signature(Ok("k"))
        .with_bump(crate::policy::Bump::Minor);
    assert_eq!(everything.known(), Need::of(Fact::ALL));
    assert_eq!(
        gates.judge(&everything, Need::NONE),
        Ruling::Lacks {
            gate: "undeclared",
            fact: Fact::Signature
        }
    );
    assert_eq!(everything.only(Need::NONE).known(), Need::NONE);
    assert_eq!(
        everything.only(Need::of([Fact::FirstSeen])).first_seen(),
        Ok(0)
    );
    let bump = everything.only(Need::of([Fact::Bump]));
    assert_eq!(bump.bump(), Ok(crate::policy::Bump::Minor));
    assert_eq!(bump.first_seen(), Err(Missing(Fact::FirstSeen)));
    assert_eq!(
        everything.only(Need::of([Fact::Image])).bump(),
        Err(Missing(Fact::Bump))
    );
}

/// A set of facts holds each fact once, lists them in their look-up order, and says so.
#[test]
fn a_need_is_a_set_of_facts() {
    let need = Need::of([Fact::FirstSeen, Fact::Image, Fact::Image]);
    assert_eq!(
        need.iter().collect::<Vec<_>>(),
        [Fact::Image, Fact::FirstSeen]
    );
    assert!(need.contains(Fact::Image) && !need.contains(Fact::Signature));
    assert!(!need.is_empty() && Need::NONE.is_empty());
    let all = need.union(Need::of([Fact::Signature, Fact::Bump]));
    assert_eq!(all, Need::of(Fact::ALL));
    assert_eq!(format!("{need:?}"), "{Image, FirstSeen}");
    assert!(Fact::Image.asks_registry() && Fact::Signature.asks_registry());
    assert!(!Fact::FirstSeen.asks_registry() && !Fact::Bump.asks_registry());
    assert_eq!(
        Hold::unknown("verify", Fact::Signature).reason,
        "the signature check is unknown after it was looked up; held until it is known"
    );
}
