//! `minAge` by a time the publisher does not write (docs/imagepolicy.md): the store records
//! when each tag was first listed and at which digest, across a controller restart (the file
//! store reopened), against a real Distribution registry whose images carry backdated
//! creation times.

use crate::support::distribution::{Distribution, Variant};
use crate::support::held_until;
use crate::support::policy_bench::{ago, elected, held, policy, Bench, NS};
use image_reflector::store::{FsStore, RepoKey, TagList, TagStore};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::json;
use std::sync::Arc;

fn scan(store: &Arc<dyn TagStore>, tags: &[&str], at: Timestamp) {
    let key = RepoKey::new(NS, "app").unwrap();
    store
        .set_seen(&key, &TagList::new(tags).unwrap(), at.as_second())
        .unwrap();
}

#[tokio::test]
async fn a_backdated_image_waits_from_its_first_sighting_and_a_repush_restarts_the_clock() {
    let registry = Distribution::start(Variant::default());
    let t0 = Timestamp::now();
    let month = 30 * 24;
    let old = registry
        .push_dated("app", "1.0.0", "amd64", Some(&ago(t0, month)), "a")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let open = || -> Arc<dyn TagStore> { Arc::new(FsStore::open(dir.path(), 64 * 1024).unwrap()) };
    let store = open();
    // The repository's first scan: what is listed was there before the controller.
    scan(&store, &["1.0.0"], t0);
    // A release claiming to be a month old appears at the next scan.
    let backdated = registry
        .push_dated("app", "1.1.0", "amd64", Some(&ago(t0, month)), "b")
        .await;
    let t1 = t0 + SignedDuration::from_mins(5);
    scan(&store, &["1.0.0", "1.1.0"], t1);
    let bench = Bench::with_store(registry, store, 2);
    let mut p = policy(json!({"filterTags": {"minAge": "168h"},
                              "digestReflectionPolicy": "Always", "interval": "1h"}));
    bench
        .reconcile(&mut p, t1 + SignedDuration::from_hours(1))
        .await;
    assert_eq!(elected(&p), ("1.0.0".into(), Some(old.clone())));
    assert_eq!(
        held(&p),
        vec![(
            "1.1.0".into(),
            "minAge".into(),
            held_until("minAge 168h", 168, "it was first seen at this digest", t1)
        )]
    );

    // The controller restarts on the same store: the sighting is kept.
    let Bench { registry, .. } = bench;
    let store = open();
    let bench = Bench::with_store(registry, store.clone(), 2);
    let t2 = t1 + SignedDuration::from_hours(7 * 24 + 1);
    bench.reconcile(&mut p, t2).await;
    assert_eq!(elected(&p), ("1.1.0".into(), Some(backdated.clone())));
    assert!(held(&p).is_empty());

    // 1.1.0 is pushed again with other content, dated a month back too: when its digest is
    // next resolved (the policy's interval), its clock restarts, and 1.0.0 is elected again.
    let repushed = bench
        .registry
        .push_dated("app", "1.1.0", "amd64", Some(&ago(t2, month)), "c")
        .await;
    assert_ne!(repushed, backdated);
    let t3 = t2 + SignedDuration::from_hours(2);
    bench.reconcile(&mut p, t3).await;
    assert_eq!(elected(&p), ("1.0.0".into(), Some(old)));
    assert_eq!(
        held(&p)[0].2,
        held_until("minAge 168h", 168, "it was first seen at this digest", t3)
    );
    let key = RepoKey::new(NS, "app").unwrap();
    assert_eq!(store.first_seen(&key).unwrap().at("1.1.0"), t3.as_second());

    // An undated release passes on its first sighting alone only when the policy says so.
    let undated = bench
        .registry
        .push_dated("app", "2.0.0", "amd64", None, "d")
        .await;
    scan(&store, &["1.0.0", "1.1.0", "2.0.0"], t3);
    let t4 = t3 + SignedDuration::from_hours(8 * 24);
    let mut strict = policy(json!({"filterTags": {"minAge": "168h"},
                                   "digestReflectionPolicy": "IfNotPresent"}));
    bench.reconcile(&mut strict, t4).await;
    assert_eq!(elected(&strict).0, "1.1.0");
    assert!(
        held(&strict)[0].2.contains("fails closed"),
        "{:?}",
        held(&strict)
    );
    let mut lenient = policy(
        json!({"filterTags": {"minAge": "168h", "minAgeUndated": "FirstSeen"},
                                    "digestReflectionPolicy": "IfNotPresent"}),
    );
    bench.reconcile(&mut lenient, t4).await;
    assert_eq!(elected(&lenient), ("2.0.0".into(), Some(undated)));
}
