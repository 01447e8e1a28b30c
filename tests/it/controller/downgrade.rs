//! The downgrade guard (`spec.downgrade: Refuse`, docs/imagepolicy.md) through the ImagePolicy
//! reconcile, against a real Distribution registry: listings that shrink and come back (as a
//! scan after deleted tags, or a short or flapping listing, leaves them in the store), spec
//! changes that keep the guard and one that excludes the elected tag, a gate turned on, and
//! the guard beside another gate. The status is carried from
//! one reconcile to the next by hand, as the API server would keep it.

use crate::support::distribution::{Distribution, Variant};
use crate::support::policy_bench::{ago, elected, held, policy, ready, status, Bench};
use image_reflector::api::{ConditionStatus, ImagePolicy, ImagePolicyStatus};
use image_reflector::controller::image_policy::report::held_events;
use image_reflector::controller::outcome::next::Next;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

const ALL: &[&str] = &["1.3.0", "1.4.0", "1.5.0"];

/// Three images, one per tag, each with its own digest.
async fn bench(now: Timestamp) -> (Bench, Vec<String>) {
    let registry = Distribution::start(Variant::default());
    let mut digests = Vec::new();
    for (i, tag) in ALL.iter().enumerate() {
        let created = ago(now, 24 * 30 - i as i64);
        let digest = registry
            .push_dated("app", tag, "amd64", Some(&created), tag)
            .await;
        digests.push(digest);
    }
    (Bench::new(registry, ALL), digests)
}

fn refusing(extra: serde_json::Value) -> ImagePolicy {
    let mut spec = json!({"digestReflectionPolicy": "IfNotPresent", "downgrade": "Refuse"});
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    policy(spec)
}

/// What the API server does with a spec change.
fn new_generation(p: &mut ImagePolicy, spec: serde_json::Value) {
    let mut raw = serde_json::to_value(&*p).unwrap();
    for (k, v) in spec.as_object().unwrap() {
        raw["spec"][k] = v.clone();
    }
    let generation = p.metadata.generation.unwrap() + 1;
    raw["metadata"]["generation"] = json!(generation);
    *p = serde_json::from_value(raw).unwrap();
}

#[tokio::test]
async fn refuse_holds_the_elected_tag_while_higher_tags_vanish_until_the_spec_excludes_it() {
    let now = Timestamp::now();
    let (bench, digests) = bench(now).await;
    let mut p = refusing(json!({}));
    bench.reconcile(&mut p, now).await;
    assert_eq!(elected(&p), ("1.5.0".into(), Some(digests[2].clone())));

    // A scan lists only 1.3.0: the guard holds at 1.5.0, Ready, without asking the registry.
    bench.list(&["1.3.0"]);
    let before = bench.requests();
    let next = bench.reconcile(&mut p, now).await;
    assert_eq!(elected(&p), ("1.5.0".into(), Some(digests[2].clone())));
    assert_eq!(bench.requests(), before, "a refused downgrade asks nothing");
    assert_eq!(next, Next::AwaitChange);
    let refused = "1.5.0 is no longer listed and no tag ranks higher (downgrade refused)";
    assert_eq!(
        held(&p),
        vec![("1.3.0".into(), "downgrade".into(), refused.into())]
    );
    let (ready_status, reason, message) = ready(&p);
    assert_eq!(
        (ready_status, reason.as_str()),
        (ConditionStatus::True, "Succeeded")
    );
    assert!(
        message.ends_with(&format!("; held at 1.5.0: {refused}")),
        "{message}"
    );
    assert_eq!(
        status(&p)
            .observed_previous_ref
            .as_ref()
            .map(|r| r.tag.as_str()),
        None,
        "nothing moved"
    );

    // The listing comes back: the same election, nothing held.
    bench.list(ALL);
    bench.reconcile(&mut p, now).await;
    assert_eq!(elected(&p).0, "1.5.0");
    assert!(held(&p).is_empty());

    // Flux's behaviour without the field: the best listed tag.
    let mut flux = policy(json!({"digestReflectionPolicy": "IfNotPresent"}));
    bench.reconcile(&mut flux, now).await;
    bench.list(&["1.3.0", "1.4.0"]);
    bench.reconcile(&mut flux, now).await;
    assert_eq!(elected(&flux), ("1.4.0".into(), Some(digests[1].clone())));

    // A spec change that still admits the elected tag does not lift the guard.
    bench.reconcile(&mut p, now).await;
    assert_eq!(elected(&p).0, "1.5.0", "held while the spec is unchanged");
    new_generation(
        &mut p,
        json!({"policy": {"semver": {"range": ">=1.0.0 <2.0.0"}}}),
    );
    bench.reconcile(&mut p, now).await;
    assert_eq!(elected(&p).0, "1.5.0", "held across a spec change");
    assert_eq!(held(&p)[0].1, "downgrade");
    assert_eq!(status(&p).observed_generation, Some(2));
    // A deliberate rollback is a spec that excludes the elected tag: it is replaced, saying so.
    new_generation(
        &mut p,
        json!({"policy": {"semver": {"range": ">=1.0.0 <1.5.0"}}}),
    );
    bench.reconcile(&mut p, now).await;
    assert_eq!(elected(&p), ("1.4.0".into(), Some(digests[1].clone())));
    assert!(held(&p).is_empty());
    assert_eq!(status(&p).observed_generation, Some(3));
    let (_, _, message) = ready(&p);
    assert!(
        message.ends_with(
            "; 1.5.0 replaced: the spec excludes it, so downgrade: Refuse does not hold there"
        ),
        "{message}"
    );
    // ...and from then on it holds at the tag elected under the new spec.
    bench.list(&["1.3.0"]);
    bench.reconcile(&mut p, now).await;
    assert_eq!(elected(&p).0, "1.4.0");
    assert_eq!(held(&p)[0].1, "downgrade");
}

#[tokio::test]
async fn with_another_gate_the_guard_stops_the_walk_at_the_elected_tag() {
    let now = Timestamp::now();
    let (bench, digests) = bench(now).await;
    // 1.5.0 is an hour old: minAge holds it, 1.4.0 is elected.
    bench
        .registry
        .push_dated("app", "1.5.0", "amd64", Some(&ago(now, 1)), "fresh")
        .await;
    let mut p = refusing(json!({"filterTags": {"minAge": "24h"}}));
    bench.reconcile(&mut p, now).await;
    assert_eq!(elected(&p), ("1.4.0".into(), Some(digests[1].clone())));
    assert_eq!(held(&p)[0].1, "minAge");

    // 1.4.0 is deleted: without the guard the walk would elect 1.3.0.
    bench.list(&["1.3.0", "1.5.0"]);
    bench.reconcile(&mut p, now).await;
    assert_eq!(elected(&p), ("1.4.0".into(), Some(digests[1].clone())));
    let held_now = held(&p);
    assert_eq!(held_now.len(), 2, "{held_now:?}");
    assert_eq!(
        (held_now[0].0.as_str(), held_now[0].1.as_str()),
        ("1.5.0", "minAge")
    );
    assert_eq!(
        held_now[1],
        (
            "1.3.0".into(),
            "downgrade".into(),
            "1.4.0 is no longer listed and no tag that ranks higher passes the gates (downgrade refused)"
                .into()
        )
    );
    let (ready_status, _, message) = ready(&p);
    assert_eq!(ready_status, ConditionStatus::True);
    assert!(
        message.contains("; held at 1.4.0: 1.4.0 is no longer listed"),
        "{message}"
    );

    let mut allowed = policy(json!({"digestReflectionPolicy": "IfNotPresent",
                                    "filterTags": {"minAge": "24h"}}));
    bench.reconcile(&mut allowed, now).await;
    assert_eq!(elected(&allowed).0, "1.3.0", "Flux's default walks down");
}

#[test]
fn a_refused_downgrade_is_announced_once_while_it_holds_at_the_same_tag() {
    let entry = |tag: &str| image_reflector::api::HeldBackTag {
        tag: tag.into(),
        digest: None,
        gate: "downgrade".into(),
        reason: "1.5.0 is no longer listed and no tag ranks higher (downgrade refused)".into(),
        also_held_by: None,
    };
    let at = |held: Vec<image_reflector::api::HeldBackTag>| ImagePolicyStatus {
        latest_ref: Some(image_reflector::api::ImageRef {
            name: "reg/app".into(),
            tag: "1.5.0".into(),
            digest: None,
        }),
        held_back: (!held.is_empty()).then_some(held),
        ..Default::default()
    };
    let first = held_events(&at(vec![]), &at(vec![entry("1.3.0")]));
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].reason, "DowngradeRefused");
    assert_eq!(
        first[0].message,
        "held at 1.5.0: 1.5.0 is no longer listed and no tag ranks higher (downgrade refused)"
    );
    assert!(held_events(&at(vec![entry("1.3.0")]), &at(vec![entry("1.3.0")])).is_empty());
    assert!(
        held_events(&at(vec![entry("1.3.0")]), &at(vec![entry("1.2.0")])).is_empty(),
        "another lower tag listed is the same refusal"
    );
}

/// Issue 69: a live policy at 1.5.0 gets `minAge` while 1.5.0 is too young. `Refuse` keeps
/// 1.5.0 (no rollback, Ready saying why); `Allow` walks down and warns, naming both tags and
/// the gate.
#[tokio::test]
async fn turning_a_gate_on_never_rolls_a_refuse_policy_back() {
    let now = Timestamp::now();
    let (bench, digests) = bench(now).await;
    let fresh = bench
        .registry
        .push_dated("app", "1.5.0", "amd64", Some(&ago(now, 0)), "fresh")
        .await;
    for downgrade in ["Refuse", "Allow"] {
        let mut p =
            policy(json!({"digestReflectionPolicy": "IfNotPresent", "downgrade": downgrade}));
        bench.reconcile(&mut p, now).await;
        assert_eq!(elected(&p), ("1.5.0".into(), Some(fresh.clone())));
        let before = status(&p).clone();
        new_generation(&mut p, json!({"filterTags": {"minAge": "1h"}}));
        bench.reconcile(&mut p, now).await;
        let events = held_events(&before, status(&p));
        let warnings: Vec<_> = events.iter().filter(|e| e.reason == "Downgraded").collect();
        match downgrade {
            "Refuse" => {
                assert_eq!(elected(&p), ("1.5.0".into(), Some(fresh.clone())));
                assert_eq!(held(&p)[0].0, "1.5.0");
                assert_eq!(held(&p)[0].1, "minAge");
                let (ready_status, reason, message) = ready(&p);
                assert_eq!(
                    (ready_status, reason.as_str()),
                    (ConditionStatus::False, "NoEligibleTag")
                );
                assert!(message.ends_with("; 1.5.0 stays elected"), "{message}");
                assert!(warnings.is_empty(), "{events:?}");
                assert!(events.iter().any(|e| e.reason == "HeldBack"), "{events:?}");
            }
            _ => {
                assert_eq!(elected(&p), ("1.4.0".into(), Some(digests[1].clone())));
                assert_eq!(warnings.len(), 1, "{events:?}");
                assert!(
                    warnings[0]
                        .message
                        .starts_with("1.4.0 elected below 1.5.0, which minAge now holds back: "),
                    "{:?}",
                    warnings[0]
                );
            }
        }
    }
}
