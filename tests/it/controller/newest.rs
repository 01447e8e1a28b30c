//! `spec.policy.newest` (docs/imagepolicy.md, "The newest-pushed order") through the
//! ImagePolicy reconcile against a real Distribution registry: the tag first seen most recently
//! elects, whatever its name or date; tags of one sighting by their image's creation time, read
//! once within the walk's bounds and kept; a steady state costs no request.

use crate::support::distribution::{Distribution, Variant};
use crate::support::policy_bench::{ago, elected, policy, status, Bench, NS};
use image_reflector::controller::image_policy::decide::{CONTINUE_WALK, MAX_INSPECTIONS};
use image_reflector::controller::outcome::next::Next;
use image_reflector::store::{RepoKey, TagList};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::json;

#[tokio::test]
async fn the_tag_seen_last_elects_and_a_steady_state_asks_nothing() {
    let registry = Distribution::start(Variant::default());
    let now = Timestamp::now();
    let day = 24;
    let mut digests = std::collections::HashMap::new();
    for (tag, days, content) in [
        ("main-a1", 10, "a"),
        ("main-b2", 2, "b"),
        ("main-c3", 5, "c"),
    ] {
        let digest = registry
            .push_dated("app", tag, "amd64", Some(&ago(now, days * day)), content)
            .await;
        digests.insert(tag, digest);
    }
    registry
        .push_dated("app", "other", "amd64", Some(&ago(now, 1)), "o")
        .await;
    let bench = Bench::new(registry, &["main-a1", "main-b2", "main-c3", "other"]);
    let mut p = policy(json!({"policy": {"newest": {}},
                              "filterTags": {"pattern": "^main-"},
                              "digestReflectionPolicy": "IfNotPresent"}));
    // The first scan's tags share one sighting: their images' creation times decide (three
    // digests and three images read, kept), not their names; `other` is filtered out.
    bench.reconcile(&mut p, now).await;
    assert_eq!(
        elected(&p),
        ("main-b2".into(), Some(digests["main-b2"].clone()))
    );
    let first = bench.requests();
    assert!(first > 0);

    // Nothing moved: the same election and not one request.
    bench
        .reconcile(&mut p, now + SignedDuration::from_secs(60))
        .await;
    assert_eq!(elected(&p).0, "main-b2");
    assert_eq!(bench.requests(), first, "a steady state costs no request");

    // A later scan lists a tag for the first time, dated a month back: the newest push elects,
    // with no request but its digest (IfNotPresent).
    let old = bench
        .registry
        .push_dated("app", "main-0", "amd64", Some(&ago(now, 30 * day)), "z")
        .await;
    let key = RepoKey::new(NS, "app").unwrap();
    let listed = TagList::new(["main-a1", "main-b2", "main-c3", "main-0", "other"]).unwrap();
    let later = now + SignedDuration::from_hours(1);
    bench
        .store
        .set_seen(&key, &listed, later.as_second())
        .unwrap();
    bench.reconcile(&mut p, later).await;
    assert_eq!(elected(&p), ("main-0".into(), Some(old)));
    assert_eq!(bench.requests(), first + 1, "its digest alone");
}

#[tokio::test]
async fn a_large_sighting_is_dated_within_the_walks_bounds_across_reconciles() {
    let registry = Distribution::start(Variant::default());
    let now = Timestamp::now();
    let tags: Vec<String> = (0..12).map(|i| format!("build-{i:02}")).collect();
    for (i, tag) in tags.iter().enumerate() {
        // build-03 is the newest image; names would elect build-11.
        let hours = if i == 3 { 1 } else { 100 + i as i64 };
        let content = format!("c{i}");
        registry
            .push_dated("app", tag, "amd64", Some(&ago(now, hours)), &content)
            .await;
    }
    let names: Vec<&str> = tags.iter().map(String::as_str).collect();
    let bench = Bench::new(registry, &names);
    let mut p = policy(json!({"policy": {"newest": {}}}));
    let next = bench.reconcile(&mut p, now).await;
    assert_eq!(next, Next::After(CONTINUE_WALK));
    let conditions = status(&p).conditions.clone().unwrap_or_default();
    let message = conditions
        .iter()
        .map(|c| format!("{}: {}", c.type_, c.message))
        .collect::<Vec<_>>()
        .join("\n");
    let left = 12 - MAX_INSPECTIONS;
    assert!(
        message.contains(&format!(
            "Reconciling: reading the creation times of the 12 tags first listed at the same scan \
             (spec.policy.newest orders them so), {left} left"
        )),
        "{message}"
    );
    let spent = bench.requests();
    bench
        .reconcile(&mut p, now + SignedDuration::from_secs(2))
        .await;
    assert_eq!(elected(&p).0, "build-03");
    // Each image was read once (its digest, manifest and config): what the first reconcile
    // read was kept.
    let most = 3 * MAX_INSPECTIONS as u64 + 1; // and the client's first /v2/ once
    assert!(spent <= most, "{spent} requests");
    assert_eq!(bench.requests() - spent, 3 * left as u64);
    // Then no request.
    bench
        .reconcile(&mut p, now + SignedDuration::from_secs(60))
        .await;
    assert_eq!(bench.requests(), spent + 3 * left as u64);
}
