//! `spec.filterTags.minAgeByBump` (docs/imagepolicy.md, "Cooldowns per bump") through the
//! ImagePolicy reconcile against a real Distribution registry: each candidate waits the age of
//! its bump from the tag elected now, the first election `minAge`'s.

use crate::support::distribution::{Distribution, Variant};
use crate::support::held_until;
use crate::support::policy_bench::{ago, elected, held, policy, ready, status, Bench};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::json;

#[tokio::test]
async fn each_bump_waits_its_own_age_from_the_tag_elected_now() {
    let registry = Distribution::start(Variant::default());
    let now = Timestamp::now();
    let day = 24;
    for (tag, days, content) in [
        ("1.4.2", 60, "a"),
        ("1.4.3", 2, "b"),
        ("1.5.0", 5, "c"),
        ("2.0.0", 10, "d"),
    ] {
        registry
            .push_dated("app", tag, "amd64", Some(&ago(now, days * day)), content)
            .await;
    }
    let bench = Bench::new(registry, &["1.4.2", "1.4.3", "1.5.0", "2.0.0"]);
    let mut p = policy(json!({"filterTags": {
        "minAge": "1440h",
        "minAgeByBump": {"major": "720h", "minor": "168h", "patch": "24h"}}}));
    // The first election has no tag to rise from: minAge's 60 days.
    bench.reconcile(&mut p, now).await;
    assert_eq!(elected(&p).0, "1.4.2");
    let created = |days: i64| now - SignedDuration::from_hours(days * day);
    let minage = |tag: &str, days: i64| {
        let reason = held_until("minAge 1440h", 1440, "its creation", created(days));
        (tag.to_string(), "minAge".to_string(), reason)
    };
    assert_eq!(
        held(&p),
        [minage("2.0.0", 10), minage("1.5.0", 5), minage("1.4.3", 2)]
    );

    // From 1.4.2: the patch is a day old enough, the minor and the major wait.
    bench
        .reconcile(&mut p, now + SignedDuration::from_secs(60))
        .await;
    assert_eq!(elected(&p).0, "1.4.3");
    let bump = |tag: &str, days: i64, kind: &str, hours: i64| {
        let asked = format!("minAgeByBump.{kind} {hours}h (a {kind} bump)");
        let reason = held_until(&asked, hours, "its creation", created(days));
        (tag.to_string(), "minAge".to_string(), reason)
    };
    let waiting = [
        bump("2.0.0", 10, "major", 720),
        bump("1.5.0", 5, "minor", 168),
    ];
    assert_eq!(held(&p), waiting);

    // Three days on, the minor is a week old; the major waits for its 30 days.
    bench
        .reconcile(&mut p, now + SignedDuration::from_hours(3 * day))
        .await;
    assert_eq!(elected(&p).0, "1.5.0");
    assert_eq!(held(&p), [bump("2.0.0", 10, "major", 720)]);
    bench
        .reconcile(&mut p, now + SignedDuration::from_hours(20 * day))
        .await;
    assert_eq!(elected(&p).0, "2.0.0");
    assert!(held(&p).is_empty());
}

/// Issue 90, item 4: `minAgeByBump` that sets major and patch, with no `minAge`, lets a minor
/// through at once. It is not refused (it is documented), but Ready's message says which bumps
/// wait nothing, and the note's first appearance is a Warning `BumpsWaitNothing`.
#[tokio::test]
async fn bumps_left_unset_without_min_age_are_said_to_wait_nothing() {
    use image_reflector::controller::image_policy::notices::{events, BUMPS_UNWAITED};
    let registry = Distribution::start(Variant::default());
    let now = Timestamp::now();
    for (tag, hours, content) in [("1.4.2", 60 * 24, "a"), ("1.5.0", 1, "b")] {
        registry
            .push_dated("app", tag, "amd64", Some(&ago(now, hours)), content)
            .await;
    }
    let bench = Bench::new(registry, &["1.4.2", "1.5.0"]);
    let mut p = policy(json!({"filterTags": {"minAgeByBump": {"major": "72h", "patch": "1h"}}}));
    let before = p.status.clone().unwrap_or_default();
    bench.reconcile(&mut p, now).await;
    assert_eq!(elected(&p).0, "1.5.0", "an hour-old minor, at once");
    let note = "spec.filterTags.minAgeByBump leaves minor unset and filterTags.minAge is not \
                set: minor bumps wait nothing (minAgeByBump waits major 72h and patch 1h); set \
                them, or filterTags.minAge for every kind left unset";
    let (_, _, message) = ready(&p);
    assert!(message.ends_with(&format!("; {note}")), "{message}");
    let said = events(&before, status(&p));
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(
        (said[0].reason.as_str(), said[0].message.as_str()),
        (BUMPS_UNWAITED, note)
    );
    assert_eq!(said[0].type_.as_str(), "Warning");
}
