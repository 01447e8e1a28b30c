//! The walk with a fact source made of tables (`table.rs`: no registry, no store): every gate
//! alone and together, the order, and the bounds.

use super::table::{Stored, Table, DAY, NOW};
use super::*;
use crate::policy::{gate, MinAge, Platform, Platforms, Undated, Verify};
use std::collections::HashSet;

fn week() -> MinAge {
    MinAge::new(
        Duration::from_secs(7 * DAY as u64),
        "168h".into(),
        Undated::Hold,
    )
}

fn platform(text: &str) -> Platform {
    Platform::parse(text).unwrap()
}

fn judge(gates: &Gates) -> Judge<'_> {
    Judge {
        gates,
        mode: Mode::of(gates),
        wants_digest: true,
        now: NOW,
        recheck: Duration::from_secs(300),
        bumps: None,
    }
}

async fn run(ranked: &[&str], gates: &Gates, table: &mut Table) -> Walked {
    let candidates = Candidates::listed(ranked);
    walk(candidates, judge(gates), table).await.unwrap()
}

fn elected(walked: &Walked) -> Option<(&str, Option<&str>)> {
    let e = walked.elected.as_ref()?;
    Some((e.tag.as_str(), e.digest.as_deref()))
}

/// Each tag held, with every gate that holds it, longest first (`1.2.0 by verify+minAge`).
fn held(walked: &Walked) -> Vec<String> {
    let gates = |h: &HeldBackTag| h.holds().map(|(g, _)| g).collect::<Vec<_>>().join("+");
    walked
        .held
        .iter()
        .map(|h| format!("{} by {}", h.tag, gates(h)))
        .collect()
}

#[tokio::test]
async fn without_gates_the_best_is_elected_with_its_digest_only() {
    let mut table = Table::default();
    let walked = run(&["1.2.0", "1.1.0"], &Gates::default(), &mut table).await;
    assert_eq!(elected(&walked), Some(("1.2.0", Some("d-1.2.0"))));
    assert_eq!(table.asked, ["digest 1.2.0"]);
    assert!(table.kept.is_empty());
}

#[tokio::test]
async fn each_gate_alone_holds_back_what_fails_it() {
    let amd = vec![platform("linux/amd64")];
    // minAge: the young best is held, the week-old one elected; time alone opens the hold.
    let mut table =
        Table::default()
            .image("1.2.0", 2, &["linux/amd64"])
            .image("1.1.0", 9, &["linux/amd64"]);
    let walked = run(&["1.2.0", "1.1.0"], &Gates::of([gate(week())]), &mut table).await;
    assert_eq!(walked.elected.as_ref().unwrap().tag, "1.1.0");
    assert_eq!(held(&walked), ["1.2.0 by minAge"]);
    assert_eq!(walked.look_again, Some(Duration::from_secs(5 * DAY as u64)));
    // platforms
    let mut table = Table::default().image("1.2.0", 9, &["linux/arm64"]).image(
        "1.1.0",
        9,
        &["linux/amd64", "linux/arm64"],
    );
    let walked = run(
        &["1.2.0", "1.1.0"],
        &Gates::of([gate(Platforms::new(amd))]),
        &mut table,
    )
    .await;
    assert_eq!(walked.elected.as_ref().unwrap().tag, "1.1.0");
    assert_eq!(held(&walked), ["1.2.0 by platforms"]);
    assert_eq!(
        walked.look_again,
        Some(Duration::from_secs(300)),
        "a recheck"
    );
    // verify: no image read at all.
    let mut table = Table::default();
    table.signed.insert("1.1.0".into());
    let walked = run(
        &["1.2.0", "1.1.0"],
        &Gates::of([gate(Verify::SIGNATURE)]),
        &mut table,
    )
    .await;
    assert_eq!(walked.elected.as_ref().unwrap().tag, "1.1.0");
    assert_eq!(held(&walked), ["1.2.0 by verify"]);
    assert_eq!(
        table.asked,
        [
            "digest 1.2.0",
            "signature d-1.2.0",
            "digest 1.1.0",
            "signature d-1.1.0"
        ]
    );
    // minAge by first sighting: a month-old image listed a day ago.
    let mut table = Table::default()
        .image("1.2.0", 30, &[])
        .image("1.1.0", 30, &[]);
    table.first_seen.insert("1.2.0".into(), NOW - DAY);
    let walked = run(&["1.2.0", "1.1.0"], &Gates::of([gate(week())]), &mut table).await;
    assert_eq!(walked.elected.as_ref().unwrap().tag, "1.1.0");
    assert!(
        walked.held[0]
            .reason
            .ends_with("after it was first seen at this digest (1972-09-26T00:00:00Z)"),
        "{:?}",
        walked.held
    );
}

/// A tag held by a gate time alone does not open and by one it does is looked at again when
/// the timed one opens, not at the recheck: status.heldBack then stops naming it.
#[tokio::test]
async fn a_held_tag_is_looked_at_again_when_any_of_its_holds_opens() {
    let gates = Gates::of([gate(Verify::SIGNATURE), gate(week())]);
    let mut table = Table::default();
    table
        .created
        .insert("1.2.0".into(), Some(NOW - 7 * DAY + 3600));
    let judge = Judge {
        recheck: Duration::from_secs(DAY as u64),
        ..judge(&gates)
    };
    let candidates = Candidates::listed(&["1.2.0"]);
    let walked = walk(candidates, judge, &mut table).await.unwrap();
    assert_eq!(held(&walked), ["1.2.0 by verify+minAge"]);
    assert_eq!(walked.look_again, Some(Duration::from_secs(3600)));
    let minage = &walked.held[0].also_held_by.as_ref().unwrap()[0];
    assert_eq!(
        minage.reason,
        "until 1972-09-27T01:00:00Z: minAge 168h after its creation (1972-09-20T01:00:00Z)"
    );
}

/// A tag the registry refuses to serve is held back by `served` in its words, with no digest,
/// looked at again at the recheck, and the walk goes on to elect the next.
#[tokio::test]
async fn a_tag_the_registry_refuses_is_held_back_and_the_walk_goes_on() {
    let gates = Gates::of([gate(week())]);
    let mut table = Table::default()
        .image("1.2.0", 1, &[])
        .image("1.1.0", 9, &[]);
    table.refused.insert("1.2.0".into());
    let walked = run(&["1.2.0", "1.1.0"], &gates, &mut table).await;
    assert_eq!(elected(&walked), Some(("1.1.0", Some("d-1.1.0"))));
    assert_eq!(held(&walked), ["1.2.0 by served"]);
    let entry = &walked.held[0];
    assert_eq!(
        (entry.digest.as_deref(), entry.reason.as_str()),
        (
            None,
            "the registry refuses to serve it: 403 Forbidden: DENIED: cooldown"
        )
    );
    assert_eq!(walked.look_again, Some(Duration::from_secs(300)));
}

#[tokio::test]
async fn together_the_gates_judge_in_order_and_read_each_fact_once() {
    let amd = vec![platform("linux/amd64")];
    let week = week().for_platforms(amd.clone());
    let gates = Gates::of([
        gate(Verify::SIGNATURE),
        gate(week),
        gate(Platforms::new(amd)),
    ]);
    let mut table = Table::default()
        .image("1.4.0", 9, &["linux/arm64"]) // platforms
        .image("1.3.0", 2, &["linux/amd64"]) // minAge, unsigned
        .image("1.2.0", 9, &["linux/amd64"]) // unsigned
        .image("1.1.0", 9, &["linux/amd64"]);
    table.signed.insert("1.1.0".into());
    table.gone.insert("1.5.0".into());
    let walked = run(
        &["1.5.0", "1.4.0", "1.3.0", "1.2.0", "1.1.0"],
        &gates,
        &mut table,
    )
    .await;
    assert_eq!(elected(&walked), Some(("1.1.0", Some("d-1.1.0"))));
    assert_eq!(
        held(&walked),
        [
            "1.4.0 by platforms+verify",
            "1.3.0 by verify+minAge",
            "1.2.0 by verify"
        ],
        "a tag gone since the scan is no candidate; every gate that holds, the gates time \
         alone does not open first"
    );
    // The signature is read after the image, for every candidate: held, it still says why.
    let signatures: Vec<&String> = table
        .asked
        .iter()
        .filter(|a| a.starts_with("signature"))
        .collect();
    assert_eq!(
        signatures,
        [
            "signature d-1.4.0",
            "signature d-1.3.0",
            "signature d-1.2.0",
            "signature d-1.1.0"
        ]
    );
    let images = table
        .asked
        .iter()
        .filter(|a| a.starts_with("image"))
        .count();
    assert_eq!(images, 4, "one read per image");
    assert_eq!(table.kept.len(), 4);
    assert_eq!(walked.inspected, 5, "one charge per candidate that asked");
}

#[tokio::test]
async fn the_bounds_stop_the_walk_and_let_it_go_on() {
    let gates = Gates::of([gate(Verify::SIGNATURE)]);
    let tags: Vec<String> = (0..80).map(|i| format!("1.{}.0", 100 - i)).collect();
    let ranked: Vec<&str> = tags.iter().map(String::as_str).collect();
    // Nothing is signed: ten candidates per reconcile need the registry, then it goes on.
    let mut table = Table::default();
    let walked = run(&ranked, &gates, &mut table).await;
    assert!(walked.unfinished == Some(Pause::Inspections) && walked.elected.is_none());
    assert_eq!(
        (walked.walked, walked.inspected),
        (MAX_INSPECTIONS + 1, MAX_INSPECTIONS)
    );
    // With everything known in the store, fifty are walked and no more.
    let mut source = Stored(Table {
        stored: tags.iter().cloned().collect(),
        ..Table::default()
    });
    let candidates = Candidates::listed(&ranked);
    let walked = walk(candidates, judge(&gates), &mut source).await.unwrap();
    assert_eq!((walked.walked, walked.inspected), (MAX_WALK, 0));
    assert!(walked.unfinished.is_none() && walked.elected.is_none());
    assert!(source.0.asked.is_empty(), "{:?}", source.0.asked);
    // An evaluation that gave its slot away judged nothing: the walk pauses there, holding
    // nothing and keeping no verdict, to go on in the next reconcile.
    let mut table = Table {
        yielded: HashSet::from(["1.100.0".to_string()]),
        signed: tags.iter().cloned().collect(),
        ..Table::default()
    };
    let walked = run(&ranked, &gates, &mut table).await;
    assert_eq!(walked.unfinished, Some(Pause::Yielded));
    assert!(walked.elected.is_none() && walked.held.is_empty() && table.kept.is_empty());
}

#[tokio::test]
async fn a_registry_failure_ends_the_walk_naming_the_tag() {
    struct Failing;
    impl FactSource for Failing {
        async fn digest(&mut self, _: &str, budget: &mut Budget<'_>) -> Result<String, Cut> {
            budget.charge()?;
            Err(LookError::Timeout(Duration::from_secs(10)).into())
        }
        fn known(&self, _: &str, _: &str) -> Evidence {
            Evidence::default()
        }
        async fn look_up(&mut self, _: Fact, _: &mut Evidence) -> Result<(), Cut> {
            Ok(())
        }
        fn verdict<'f>(&self, _: &'f ImageFacts, _: bool) -> Option<&'f SignatureVerdict> {
            None
        }
        async fn keep(&mut self, _: ImageFacts) {}
    }
    let gates = Gates::of([gate(Verify::SIGNATURE)]);
    let candidates = Candidates::listed(&["1.0.0"]);
    let err = walk(candidates, judge(&gates), &mut Failing)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "checking the gates of 1.0.0: no answer within 10s (the ImageRepository's spec.timeout)"
    );
}

/// The guard's refusal counts only when the walk elected nothing and finished: a candidate
/// elected above the floor, or a walk cut by its budget, refuses nothing.
#[tokio::test]
async fn a_refused_downgrade_counts_only_when_nothing_is_elected() {
    let gates = Gates::of([gate(Verify::SIGNATURE)]);
    let mut table = Table::default();
    table.signed.insert("1.4.0".into());
    let walked = run(&["1.5.0", "1.4.0", "!1.2.0"], &gates, &mut table).await;
    assert_eq!(elected(&walked).map(|e| e.0), Some("1.4.0"));
    assert_eq!(walked.refused, None, "elected above the floor");
    let mut table = Table::default();
    let walked = run(&["1.5.0", "1.4.0", "!1.2.0"], &gates, &mut table).await;
    assert!(walked.elected.is_none());
    assert_eq!(
        walked.refused.as_deref(),
        Some("1.2.0"),
        "a downgrade refused"
    );
    let tags: Vec<String> = (0..12).map(|i| format!("1.{}.0", 50 - i)).collect();
    let mut ranked: Vec<&str> = tags.iter().map(String::as_str).collect();
    ranked.push("!1.0.0");
    let walked = run(&ranked, &gates, &mut Table::default()).await;
    assert_eq!(walked.unfinished, Some(Pause::Inspections));
    assert_eq!(walked.refused, None, "unfinished: nothing refused yet");
}

/// The previous election, judged again for the door (`previous.rs`): held at its digest when a
/// gate now fails it (a key revoked), left as it is when it passes, and not judged twice when
/// the walk already did.
#[tokio::test]
async fn the_previous_election_is_judged_again_at_its_digest() {
    use super::super::previous::{judge_previous, previous_after};
    use crate::api::{ImagePolicyStatus, ImageRef};
    let reference = |tag: &str| ImageRef {
        name: "reg/app".into(),
        tag: tag.into(),
        digest: Some(format!("d-{tag}")),
    };
    let gates = Gates::of([gate(Verify::SIGNATURE)]);
    let mut table = Table::default();
    table.signed.insert("1.2.0".into());
    let mut walked = run(&["1.2.0"], &gates, &mut table).await;
    let status = ImagePolicyStatus {
        latest_ref: Some(reference("1.1.0")),
        observed_previous_ref: Some(Box::new(reference("1.0.0"))),
        ..Default::default()
    };
    let previous = previous_after(&status, &walked).cloned();
    assert_eq!(previous, Some(reference("1.1.0")), "the election moved");
    judge_previous(previous.as_ref(), judge(&gates), &mut table, &mut walked).await;
    assert_eq!(held(&walked), ["1.1.0 by verify"]);
    assert_eq!(walked.held[0].digest.as_deref(), Some("d-1.1.0"));
    assert_eq!(
        table.asked,
        ["digest 1.2.0", "signature d-1.2.0", "signature d-1.1.0"]
    );

    // Judged once: the walk's own entry stands, nothing asked again.
    judge_previous(previous.as_ref(), judge(&gates), &mut table, &mut walked).await;
    assert_eq!((walked.held.len(), table.asked.len()), (1, 3));

    // Signed, it passes: nothing held. The same election: the previous stays the one before.
    let mut table = Table::default();
    table
        .signed
        .extend(["1.2.0".to_string(), "1.0.0".to_string()]);
    let mut walked = run(&["1.2.0"], &gates, &mut table).await;
    let status = ImagePolicyStatus {
        latest_ref: Some(reference("1.2.0")),
        ..status
    };
    let previous = previous_after(&status, &walked).cloned();
    assert_eq!(previous, Some(reference("1.0.0")), "the same election");
    judge_previous(previous.as_ref(), judge(&gates), &mut table, &mut walked).await;
    assert!(walked.held.is_empty());
    assert_eq!(
        table.asked.last().map(String::as_str),
        Some("signature d-1.0.0")
    );

    // The tag moved since: the walk's entry is at the tag's new digest, so the previous
    // election is still judged, at its own.
    let mut table = Table::default();
    table.signed.insert("1.0.5".into());
    let mut walked = run(&["1.1.0", "1.0.5"], &gates, &mut table).await;
    let moved = ImageRef {
        digest: Some("d-1.1.0-old".into()),
        ..reference("1.1.0")
    };
    judge_previous(Some(&moved), judge(&gates), &mut table, &mut walked).await;
    let at: Vec<_> = walked.held.iter().map(|h| h.digest.as_deref()).collect();
    assert_eq!(at, [Some("d-1.1.0"), Some("d-1.1.0-old")]);
}
