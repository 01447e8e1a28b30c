//! The handoff's caps and its life cycle: a decision parked and woken, taken with a rerun
//! when asked in between, aborted when its object changed or was cancelled, a panic carried
//! to where it would have gone.

use super::*;
use crate::api::ImagePolicy;

fn policy(namespace: &str, name: &str) -> ImagePolicy {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1",
        "kind": "ImagePolicy",
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {"imageRepositoryRef": {"name": "r"}, "policy": {"alphabetical": {}}},
    }))
    .unwrap()
}

/// Decisions that never end (a registry that drips): 16 of one namespace run in the
/// background, the 17th waits saying why; another namespace still gets room, up to 64 in
/// all. The numbers are the documented ones (docs/security.md), written out.
#[tokio::test(start_paused = true)]
async fn background_decisions_are_capped_in_all_and_per_namespace() {
    let handoffs: Handoffs<ImagePolicy, ()> = Handoffs::default();
    let decide = |ns: &str, i: usize| {
        let obj = policy(ns, &format!("p{i}"));
        let handoffs = &handoffs;
        async move { handoffs.decide(&obj, std::future::pending::<()>).await }
    };
    let hostile = futures::future::join_all((0..17).map(|i| decide("hostile", i))).await;
    let working = hostile
        .iter()
        .filter(|h| matches!(h, Handed::Working))
        .count();
    assert_eq!(working, 16);
    let busy: Vec<&String> = hostile
        .iter()
        .filter_map(|h| match h {
            Handed::Busy(why) => Some(why),
            _ => None,
        })
        .collect();
    assert_eq!(busy.len(), 1);
    assert!(
        busy[0].contains("16 decisions of this namespace") && busy[0].contains("in 30s"),
        "{}",
        busy[0]
    );
    for ns in ["a", "b", "c"] {
        let handed = futures::future::join_all((0..16).map(|i| decide(ns, i))).await;
        assert!(handed.iter().all(|h| matches!(h, Handed::Working)), "{ns}");
    }
    assert_eq!(handoffs.parked(), 64);
    // The background is full: a namespace running nothing there is under its fair share (12
    // of 64 among 5) and takes room from the one running the most.
    let mut wakes = handoffs.wakes().unwrap();
    assert!(matches!(decide("d", 0).await, Handed::Working));
    let stopped = futures::StreamExt::next(&mut wakes).await.unwrap();
    assert_eq!(stopped.namespace.as_deref(), Some("a"), "{stopped:?}");
    let taken = policy("a", &stopped.name);
    match handoffs.decide(&taken, std::future::pending::<()>).await {
        Handed::Busy(why) => assert!(
            why.contains("namespace a ran 16 of the 64")
                && why.contains("fair share among 5 namespaces (12)")
                && why.contains("in 30s"),
            "{why}"
        ),
        _ => panic!("the stopped decision says why"),
    }
    for i in 1..12 {
        assert!(matches!(decide("d", i).await, Handed::Working), "d{i}");
    }
    match decide("d", 12).await {
        Handed::Busy(why) => assert!(why.contains("its fair share among the 5"), "{why}"),
        _ => panic!("d's 13th is past its fair share"),
    }
    let parked = handoffs.parked.lock().unwrap();
    let running = running_by_namespace(&parked);
    assert_eq!(running.values().sum::<usize>(), 64, "{running:?}");
    assert_eq!(running["d"], 12);
    assert!(
        running.values().all(|n| (12..=13).contains(n)),
        "{running:?}"
    );
    assert_eq!(
        parked.len(),
        75,
        "11 stopped ones wait for their objects to take why"
    );
}

/// The documented handoff (docs/security.md), written out: a worker waits 3 s for a
/// decision, no longer.
#[tokio::test(start_paused = true)]
async fn a_worker_waits_three_seconds_for_a_decision() {
    let handoffs: Handoffs<ImagePolicy, u8> = Handoffs::default();
    let slow = |ms: u64| {
        move || async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            7
        }
    };
    let quick = handoffs.decide(&policy("team", "a"), slow(2_900)).await;
    assert!(matches!(quick, Handed::Decided { outcome: 7, .. }));
    let started = tokio::time::Instant::now();
    let parked = handoffs.decide(&policy("team", "b"), slow(3_100)).await;
    assert!(matches!(parked, Handed::Working));
    assert_eq!(started.elapsed(), Duration::from_secs(3));
}

fn generation(mut p: ImagePolicy, generation: i64) -> ImagePolicy {
    p.metadata.generation = Some(generation);
    p
}

/// The deadline is the documented one (docs/security.md): a scan's cap and a minute.
#[test]
fn a_decision_runs_six_minutes_at_most() {
    assert_eq!(RECONCILE_DEADLINE, Duration::from_secs(360));
    assert_eq!(HANDOFF_AFTER, Duration::from_secs(3));
    assert_eq!(BUSY_RETRY, Duration::from_secs(30));
    assert_eq!((MAX_BACKGROUND, MAX_BACKGROUND_PER_NAMESPACE), (64, 16));
}

/// A parked decision wakes its object when it ends; the next reconcile takes it, with a rerun
/// when a reconcile came while it ran; nothing is left parked.
#[tokio::test(start_paused = true)]
async fn a_parked_decision_wakes_its_object_and_is_taken_once() {
    use futures::StreamExt;
    let handoffs: Handoffs<ImagePolicy, u8> = Handoffs::default();
    let mut wakes = handoffs.wakes().expect("the first call gets the stream");
    assert!(handoffs.wakes().is_none(), "one stream");
    let obj = policy("team", "slow");
    let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
    let parked = handoffs
        .decide(&obj, move || async move { rx.await.unwrap() })
        .await;
    assert!(matches!(parked, Handed::Working));
    assert_eq!(handoffs.parked(), 1);
    // A reconcile while it runs: still working, and a rerun is owed.
    let again = handoffs
        .decide(&obj, || async { panic!("not decided twice") })
        .await;
    assert!(matches!(again, Handed::Working));
    tx.send(9).unwrap();
    let woken = wakes.next().await.expect("a wake");
    assert_eq!(woken.name, "slow");
    match handoffs.decide(&obj, || async { 0 }).await {
        Handed::Decided { outcome, rerun } => assert_eq!((outcome, rerun), (9, true)),
        _ => panic!("the finished decision is taken"),
    }
    assert_eq!(handoffs.parked(), 0);
    // Taken once: the next reconcile decides anew, without a rerun.
    match handoffs.decide(&obj, || async { 4 }).await {
        Handed::Decided { outcome, rerun } => assert_eq!((outcome, rerun), (4, false)),
        _ => panic!("decided here"),
    }
}

/// A parked decision finished without a reconcile in between is taken without a rerun.
#[tokio::test(start_paused = true)]
async fn a_decision_taken_untouched_owes_no_rerun() {
    let handoffs: Handoffs<ImagePolicy, u8> = Handoffs::default();
    let obj = policy("team", "slow");
    let slow = || async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        3
    };
    assert!(matches!(handoffs.decide(&obj, slow).await, Handed::Working));
    tokio::time::sleep(Duration::from_secs(10)).await;
    match handoffs.decide(&obj, || async { 0 }).await {
        Handed::Decided { outcome, rerun } => assert_eq!((outcome, rerun), (3, false)),
        _ => panic!("taken"),
    }
}

/// An object whose trigger changed (a new generation) aborts its parked decision and decides
/// again; `cancel` aborts one and says whether there was one.
#[tokio::test(start_paused = true)]
async fn a_changed_object_or_a_cancel_aborts_the_parked_decision() {
    let handoffs: Handoffs<ImagePolicy, u8> = Handoffs::default();
    let obj = policy("team", "slow");
    let never = || std::future::pending::<u8>();
    assert!(matches!(
        handoffs.decide(&obj, never).await,
        Handed::Working
    ));
    let changed = generation(obj.clone(), 2);
    match handoffs.decide(&changed, || async { 5 }).await {
        Handed::Decided { outcome, rerun } => assert_eq!((outcome, rerun), (5, false)),
        _ => panic!("decided again for the new generation"),
    }
    assert_eq!(handoffs.parked(), 0);
    assert!(matches!(
        handoffs.decide(&obj, never).await,
        Handed::Working
    ));
    assert!(handoffs.cancel(&object_key(&obj)));
    assert!(
        !handoffs.cancel(&object_key(&obj)),
        "nothing left to cancel"
    );
    assert_eq!(handoffs.parked(), 0);
}

/// A decision parked for a pruned object (a watch under Flux's schema: no gates) is never
/// taken by a reconcile of the whole object, of the same generation: its trigger covers the
/// spec. The whole object's decision is made, and written, instead.
#[tokio::test(start_paused = true)]
async fn a_decision_made_from_a_pruned_spec_is_not_taken_for_the_whole_one() {
    let handoffs: Handoffs<ImagePolicy, &str> = Handoffs::default();
    let mut wakes = handoffs.wakes().unwrap();
    let pruned = policy("team", "gated");
    let mut whole = pruned.clone();
    whole.spec.filter_tags = Some(Box::new(crate::api::TagFilter {
        min_age: Some("168h".into()),
        ..Default::default()
    }));
    assert_eq!(pruned.metadata.generation, whole.metadata.generation);
    let slow = || async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        "gate-less"
    };
    assert!(matches!(
        handoffs.decide(&pruned, slow).await,
        Handed::Working
    ));
    futures::StreamExt::next(&mut wakes)
        .await
        .expect("it ended");
    match handoffs.decide(&whole, || async { "gated" }).await {
        Handed::Decided { outcome, .. } => assert_eq!(outcome, "gated"),
        _ => panic!("decided for the whole object"),
    }
    assert_eq!(handoffs.parked(), 0, "the pruned decision is gone");
}

/// A decision that panics on the worker panics there, as it would have without the handoff.
#[tokio::test(start_paused = true)]
#[should_panic(expected = "the decision's own panic")]
async fn a_panic_goes_where_it_would_have_gone() {
    let handoffs: Handoffs<ImagePolicy, u8> = Handoffs::default();
    let obj = policy("team", "p");
    handoffs
        .decide(&obj, || async { panic!("the decision's own panic") })
        .await;
}

/// Finished decisions waiting to be taken hold no room: only running ones count.
#[tokio::test(start_paused = true)]
async fn finished_decisions_hold_no_room() {
    let handoffs: Handoffs<ImagePolicy, u8> = Handoffs::default();
    let slow = || async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        1
    };
    for i in 0..16 {
        let obj = policy("team", &format!("p{i}"));
        assert!(matches!(handoffs.decide(&obj, slow).await, Handed::Working));
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    let obj = policy("team", "p16");
    let never = || std::future::pending::<u8>();
    assert!(matches!(
        handoffs.decide(&obj, never).await,
        Handed::Working
    ));
    assert_eq!(handoffs.parked(), 17);
}

/// Outnumbered (issue 87): 64 namespaces each run one decision that never ends, filling the
/// background at one each; a 65th namespace's decision waits while the oldest has run under
/// 30 s, then takes its place, and the namespace stopped is told why and woken.
#[tokio::test(start_paused = true)]
async fn outnumbered_a_namespace_running_none_takes_the_longest_runnings_place() {
    let handoffs: Handoffs<ImagePolicy, ()> = Handoffs::default();
    let mut wakes = handoffs.wakes().unwrap();
    let objects: Vec<ImagePolicy> = (0..64).map(|i| policy(&format!("ns{i}"), "p")).collect();
    let all = objects
        .iter()
        .map(|obj| handoffs.decide(obj, std::future::pending::<()>));
    let handed = futures::future::join_all(all).await;
    assert!(handed.iter().all(|h| matches!(h, Handed::Working)));
    let late = policy("late", "p");
    match handoffs.decide(&late, std::future::pending::<()>).await {
        Handed::Busy(why) => assert!(why.contains("being 1;"), "{why}"),
        _ => panic!("the oldest has run 3 s, not 30"),
    }
    tokio::time::sleep(BUSY_RETRY).await;
    let handed = handoffs.decide(&late, std::future::pending::<()>).await;
    assert!(matches!(handed, Handed::Working));
    let stopped = futures::StreamExt::next(&mut wakes).await.unwrap();
    let namespace = stopped.namespace.clone().unwrap();
    match handoffs
        .decide(&policy(&namespace, "p"), std::future::pending::<()>)
        .await
    {
        Handed::Busy(why) => assert!(why.contains("to a namespace running none"), "{why}"),
        _ => panic!("{namespace} is told why it stopped"),
    }
    assert_eq!(handoffs.parked(), 64);
}

/// The background's bound against many namespaces (issue 87): 64 namespaces run one
/// never-ending decision each; W more, W up to twice the places, each try every BUSY_RETRY.
/// The decisions running longest give their places up in turn, 64 a round: every waiting
/// namespace is placed within ⌈W/64⌉ retries after its first try.
#[tokio::test(start_paused = true)]
async fn outnumbered_namespaces_are_placed_64_a_round() {
    for waiting in [1usize, 64, 128] {
        let handoffs: Handoffs<ImagePolicy, ()> = Handoffs::default();
        let running: Vec<ImagePolicy> = (0..64).map(|i| policy(&format!("ns{i}"), "p")).collect();
        let all = running
            .iter()
            .map(|obj| handoffs.decide(obj, std::future::pending::<()>));
        futures::future::join_all(all).await;
        let mut pending: Vec<ImagePolicy> = (0..waiting)
            .map(|i| policy(&format!("late{i}"), "p"))
            .collect();
        let mut retries = 0;
        loop {
            // Each round's tries at once (each waits the worker's 3 s).
            let tries = pending
                .iter()
                .map(|obj| handoffs.decide(obj, std::future::pending::<()>));
            let handed = futures::future::join_all(tries).await;
            let placed = handed.iter().map(|h| matches!(h, Handed::Working));
            let placed: Vec<bool> = placed.collect();
            pending = pending
                .into_iter()
                .zip(placed)
                .filter_map(|(obj, placed)| (!placed).then_some(obj))
                .collect();
            if pending.is_empty() {
                break;
            }
            retries += 1;
            tokio::time::sleep(BUSY_RETRY).await;
        }
        assert!(
            retries <= waiting.div_ceil(64),
            "{waiting} waiting: {retries} retries"
        );
    }
}
