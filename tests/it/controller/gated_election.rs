//! The gated election (docs/imagepolicy.md, "Gated election") through the ImagePolicy
//! reconcile, against a real Distribution registry holding images with chosen creation times,
//! multi-platform indexes with missing platforms, and cosign signatures made here with P-256
//! keys. The status is carried from one reconcile to the next by hand; the registry's request
//! counts show what a steady state costs.

use crate::support::distribution::{Distribution, Variant};
use crate::support::held_until;
use crate::support::images::{key, payload, public_pem, sign, Arch};
use crate::support::policy_bench::{ago, elected, held, policy, ready, status, Bench};
use image_reflector::api::ConditionStatus;
use image_reflector::controller::image_policy::decide::{CONTINUE_WALK, MAX_INSPECTIONS, MAX_WALK};
use image_reflector::controller::outcome::next::Next;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

#[tokio::test]
async fn min_age_elects_the_newest_old_enough_image_and_waits_for_the_next() {
    let registry = Distribution::start(Variant::default());
    let now = Timestamp::now();
    let day = 24;
    let old = registry
        .push_dated("app", "1.0.0", "amd64", Some(&ago(now, 30 * day)), "a")
        .await;
    let week_old = registry
        .push_dated("app", "1.1.0", "amd64", Some(&ago(now, 10 * day)), "b")
        .await;
    registry
        .push_dated("app", "1.2.0", "amd64", Some(&ago(now, 3)), "c")
        .await;
    registry
        .push_dated("app", "1.3.0", "amd64", None, "d")
        .await;
    // Dated by the manifest's annotation only.
    let annotated = registry
        .push_annotated("app", "0.9.0", &ago(now, 20 * day))
        .await;
    registry.push_annotated("app", "0.9.5", &ago(now, 30)).await;
    let bench = Bench::new(
        registry,
        &["0.9.0", "0.9.5", "1.0.0", "1.1.0", "1.2.0", "1.3.0"],
    );
    let mut p = policy(json!({"filterTags": {"minAge": "168h"},
                              "digestReflectionPolicy": "IfNotPresent"}));
    let next = bench.reconcile(&mut p, now).await;
    assert_eq!(elected(&p), ("1.1.0".into(), Some(week_old.clone())));
    assert_ne!(old, week_old);
    assert_eq!(
        held(&p),
        vec![
            ("1.3.0".into(), "minAge".into(), "no creation time (neither the config's 'created' nor the org.opencontainers.image.created annotation); minAge 168h fails closed".into()),
            ("1.2.0".into(), "minAge".into(), held_until("minAge 168h", 168, "its creation", now - SignedDuration::from_hours(3))),
        ]
    );
    let (status_, reason, message) = ready(&p);
    assert_eq!(
        (status_, reason.as_str()),
        (ConditionStatus::True, "Succeeded")
    );
    assert!(
        message.starts_with(&format!(
            "Latest image tag for {}/app resolved to 1.1.0 with digest {week_old}; 1.3.0 held back: no creation time",
            bench.registry.host
        )) && message.ends_with("(and 1 more in status.heldBack)"),
        "{message}"
    );
    // 1.3.0 may be pushed again with a date: looked at again at the scan interval (1.2.0
    // alone would wait the 165h it needs).
    assert_eq!(next, Next::After(Duration::from_secs(300)));

    let mut zero = policy(json!({"filterTags": {"minAge": "168h"},
                                 "policy": {"semver": {"range": "<1.0.0"}},
                                 "digestReflectionPolicy": "IfNotPresent"}));
    bench.reconcile(&mut zero, now).await;
    assert_eq!(elected(&zero), ("0.9.0".into(), Some(annotated)));
    assert_eq!(
        held(&zero),
        vec![(
            "0.9.5".into(),
            "minAge".into(),
            held_until(
                "minAge 168h",
                168,
                "its creation",
                now - SignedDuration::from_hours(30)
            )
        )]
    );

    // Nothing moved: the same election and not one request.
    let before = bench.requests();
    let creds_read = bench.cluster.creds_reads();
    assert!(
        creds_read > 0,
        "the registry was asked with the repository's credentials"
    );
    bench
        .reconcile(&mut p, now + SignedDuration::from_secs(60))
        .await;
    assert_eq!(elected(&p).0, "1.1.0");
    assert_eq!(bench.requests(), before, "a steady state costs no request");
    assert_eq!(
        bench.cluster.creds_reads(),
        creds_read,
        "nor a read of the repository's Secret"
    );

    // A week later 1.2.0 is old enough; 1.3.0 still has no time.
    bench
        .reconcile(&mut p, now + SignedDuration::from_hours(7 * day))
        .await;
    assert_eq!(elected(&p).0, "1.2.0");
    assert_eq!(held(&p).len(), 1);
    assert_eq!(
        status(&p).observed_previous_ref.as_ref().unwrap().tag,
        "1.1.0"
    );
}

/// The documented cost of a first gated look (docs/imagepolicy.md, "What it costs the
/// registry"): the manifest that names the digest is read once and its config once; the
/// inspection made with the digest's read is kept, not made again.
#[tokio::test]
async fn a_first_look_reads_the_manifest_and_its_config_once() {
    let registry = Distribution::start(Variant::default());
    let now = Timestamp::now();
    let digest = registry
        .push_dated("app", "1.0.0", "amd64", Some(&ago(now, 30 * 24)), "a")
        .await;
    let bench = Bench::new(registry, &["1.0.0"]);
    let mut p = policy(json!({"filterTags": {"minAge": "168h"},
                              "digestReflectionPolicy": "IfNotPresent"}));
    bench.reconcile(&mut p, now).await;
    assert_eq!(elected(&p), ("1.0.0".into(), Some(digest)));
    // Answered requests (a first request to a plain-HTTP host also counts the TLS try).
    let counts = bench.registries.scheduler().request_counts();
    let answered: u64 = counts
        .iter()
        .filter(|((_, outcome), _)| outcome == "200")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(answered, 2, "one manifest, one config: {counts:?}");
}

/// A verify-only policy asks a candidate's digest with a HEAD: a tag the scan listed and the
/// publisher deleted since answers 404, is no candidate, and the walk goes on without it.
#[tokio::test]
async fn a_tag_deleted_since_the_scan_is_no_candidate() {
    let registry = Distribution::start(Variant::default());
    let repo = format!("{}/app", registry.host);
    let signed = registry
        .push_dated("app", "1.0.0", "amd64", None, "a")
        .await;
    let trusted = key(1);
    registry
        .push_signatures("app", &signed, &[sign(&trusted, payload(&repo, &signed))])
        .await;
    let mut bench = Bench::new(registry, &["1.0.0", "1.1.0"]);
    bench
        .cluster
        .keys
        .insert("cosign.pub".into(), public_pem(&trusted));
    let mut p = policy(
        json!({"verify": {"provider": "cosign", "secretRef": {"name": "cosign-keys"}},
               "digestReflectionPolicy": "IfNotPresent"}),
    );
    bench.reconcile(&mut p, Timestamp::now()).await;
    assert_eq!(elected(&p), ("1.0.0".into(), Some(signed)));
    assert!(held(&p).is_empty(), "{:?}", held(&p));
}

#[tokio::test]
async fn platforms_hold_back_an_index_until_it_provides_every_one() {
    let registry = Distribution::start(Variant::default());
    let amd = Arch {
        architecture: "amd64",
        variant: None,
        created: None,
    };
    let arm = Arch {
        architecture: "arm64",
        variant: Some("v8"),
        created: None,
    };
    registry.push_platforms("app", "1.0.0", &[amd, arm]).await;
    let amd = Arch {
        architecture: "amd64",
        variant: None,
        created: None,
    };
    registry.push_platforms("app", "2.0.0", &[amd]).await;
    registry
        .push_dated("app", "0.9.0", "arm64", None, "single")
        .await;
    let bench = Bench::new(registry, &["0.9.0", "1.0.0", "2.0.0"]);
    let mut p = policy(json!({"platforms": ["linux/arm64", "linux/amd64"]}));
    let now = Timestamp::now();
    let next = bench.reconcile(&mut p, now).await;
    assert_eq!(
        elected(&p),
        ("1.0.0".into(), None),
        "Never: no digest in status"
    );
    assert_eq!(
        held(&p),
        vec![(
            "2.0.0".into(),
            "platforms".into(),
            "missing linux/arm64/v8 (has linux/amd64)".into()
        )]
    );
    assert_eq!(
        next,
        Next::After(Duration::from_secs(300)),
        "looked at again at the scan interval"
    );

    // The arm64 image lands under the same tag (a moved tag): elected once looked at again.
    let amd = Arch {
        architecture: "amd64",
        variant: None,
        created: None,
    };
    let arm = Arch {
        architecture: "arm64",
        variant: None,
        created: None,
    };
    bench
        .registry
        .push_platforms("app", "2.0.0", &[amd, arm])
        .await;
    let before = bench.requests();
    bench
        .reconcile(&mut p, now + SignedDuration::from_secs(60))
        .await;
    assert_eq!(
        elected(&p).0,
        "1.0.0",
        "within the scan interval nothing is asked"
    );
    assert_eq!(bench.requests(), before);
    bench
        .reconcile(&mut p, now + SignedDuration::from_secs(301))
        .await;
    assert_eq!(elected(&p).0, "2.0.0");
    assert!(held(&p).is_empty());

    // A single-platform image serves its own platform only.
    let mut arm_only =
        policy(json!({"platforms": ["linux/arm64"], "policy": {"semver": {"range": "<1.0.0"}}}));
    bench.reconcile(&mut arm_only, now).await;
    assert_eq!(elected(&arm_only).0, "0.9.0");
    let mut amd_only =
        policy(json!({"platforms": ["linux/amd64"], "policy": {"semver": {"range": "<1.0.0"}}}));
    bench.reconcile(&mut amd_only, now).await;
    let (status_, reason, message) = ready(&amd_only);
    assert_eq!(
        (status_, reason.as_str()),
        (ConditionStatus::False, "NoEligibleTag")
    );
    assert_eq!(
        message,
        "no tag passes the gates among the 1 best candidates (0.9.0 held back: missing linux/amd64 (has linux/arm64/v8)); nothing is elected yet"
    );
}

#[tokio::test]
async fn only_a_valid_signature_for_this_digest_elects() {
    let registry = Distribution::start(Variant::default());
    let repo = format!("{}/app", registry.host);
    let mut digests = BTreeMap::new();
    for (tag, salt) in [
        ("3.0.0", "a"),
        ("3.1.0", "b"),
        ("3.2.0", "c"),
        ("3.3.0", "d"),
        ("3.4.0", "e"),
    ] {
        digests.insert(
            tag,
            registry.push_dated("app", tag, "amd64", None, salt).await,
        );
    }
    let trusted = key(1);
    registry
        .push_signatures(
            "app",
            &digests["3.0.0"],
            &[sign(&trusted, payload(&repo, &digests["3.0.0"]))],
        )
        .await;
    // A key nobody trusts.
    registry
        .push_signatures(
            "app",
            &digests["3.1.0"],
            &[sign(&key(9), payload(&repo, &digests["3.1.0"]))],
        )
        .await;
    // A valid signature of another digest, copied under this one.
    registry
        .push_signatures(
            "app",
            &digests["3.2.0"],
            &[sign(&trusted, payload(&repo, &digests["3.0.0"]))],
        )
        .await;
    // A signature whose payload was changed afterwards.
    let (_, signature) = sign(&trusted, payload(&repo, &digests["3.0.0"]));
    registry
        .push_signatures(
            "app",
            &digests["3.3.0"],
            &[(payload(&repo, &digests["3.3.0"]), signature)],
        )
        .await;
    let mut bench = Bench::new(registry, &["3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0"]);
    bench
        .cluster
        .keys
        .insert("cosign.pub".into(), public_pem(&trusted));
    bench
        .cluster
        .keys
        .insert("README".into(), "not a key".into());
    let mut p = policy(
        json!({"verify": {"provider": "cosign", "secretRef": {"name": "cosign-keys"}},
                              "digestReflectionPolicy": "IfNotPresent"}),
    );
    let now = Timestamp::now();
    bench.reconcile(&mut p, now).await;
    assert_eq!(
        elected(&p),
        ("3.0.0".into(), Some(digests["3.0.0"].clone()))
    );
    let held_back = held(&p);
    let tags: Vec<&str> = held_back.iter().map(|(t, _, _)| t.as_str()).collect();
    assert_eq!(tags, ["3.4.0", "3.3.0", "3.2.0", "3.1.0"]);
    assert!(held_back.iter().all(|(_, gate, _)| gate == "verify"));
    let reasons: Vec<&str> = held_back.iter().map(|(_, _, r)| r.as_str()).collect();
    assert!(
        reasons[0]
            .starts_with("no signature (no cosign bundle among its referrers, no tag sha256-"),
        "{}",
        reasons[0]
    );
    assert!(
        reasons[1].contains("does not verify with any trusted key"),
        "tampered: {}",
        reasons[1]
    );
    assert!(
        reasons[2].contains(&format!("is for {}", digests["3.0.0"])),
        "{}",
        reasons[2]
    );
    assert!(
        reasons[3].contains("does not verify with any trusted key"),
        "wrong key: {}",
        reasons[3]
    );

    // Steady: verdicts are kept; an unsigned digest is looked at again after the interval.
    let before = bench.requests();
    bench
        .reconcile(&mut p, now + SignedDuration::from_secs(30))
        .await;
    assert_eq!(bench.requests(), before, "no request within the interval");

    // 3.4.0 gets signed: elected at the next look.
    bench
        .registry
        .push_signatures(
            "app",
            &digests["3.4.0"],
            &[sign(&trusted, payload(&repo, &digests["3.4.0"]))],
        )
        .await;
    bench
        .reconcile(&mut p, now + SignedDuration::from_secs(301))
        .await;
    assert_eq!(elected(&p).0, "3.4.0");
    assert!(held(&p).is_empty());

    // A registry error while checking keeps the election; a requested reconcile looks anew.
    let host = bench.registry.host.clone();
    bench.registry.stop();
    p.metadata.annotations = Some(
        [(
            "reconcile.fluxcd.io/requestedAt".to_string(),
            "now".to_string(),
        )]
        .into(),
    );
    bench
        .reconcile(&mut p, now + SignedDuration::from_secs(400))
        .await;
    let (status_, reason, message) = ready(&p);
    assert_eq!(
        (status_, reason.as_str()),
        (ConditionStatus::False, "GateCheckFailed")
    );
    assert!(message.contains(&host), "{message}");
    assert_eq!(elected(&p).0, "3.4.0", "no downgrade to an unchecked tag");
}

#[tokio::test]
async fn keyless_needs_valid_identities_a_missing_secret_is_named_and_no_root_means_public_goods() {
    let registry = Distribution::start(Variant::default());
    registry
        .push_dated("app", "1.0.0", "amd64", None, "a")
        .await;
    let mut bench = Bench::new(registry, &["1.0.0"]);
    bench
        .cluster
        .keys
        .insert("cosign.pub".into(), public_pem(&key(1)));
    let identity = |issuer: &str| {
        json!({"verify": {"provider": "cosign", "secretRef": {"name": "cosign-keys"},
            "matchOIDCIdentity": [{"issuer": issuer, "subject": ".*"}]}})
    };
    // An identity that is not a regular expression stalls the policy.
    let mut invalid = policy(identity("("));
    assert_eq!(
        bench.reconcile(&mut invalid, Timestamp::now()).await,
        Next::AwaitChange
    );
    let (status_, reason, message) = ready(&invalid);
    assert_eq!(
        (status_, reason.as_str()),
        (ConditionStatus::False, "InvalidPolicy")
    );
    assert!(
        message.contains("matchOIDCIdentity issuer \"(\" is not a regular expression"),
        "{message}"
    );
    let mut no_ref = policy(json!({"verify": {"provider": "cosign"}}));
    bench.reconcile(&mut no_ref, Timestamp::now()).await;
    assert!(ready(&no_ref)
        .2
        .contains("spec.verify.secretRef is required"));
    let mut missing =
        policy(json!({"verify": {"provider": "cosign", "secretRef": {"name": "nope"}}}));
    bench.reconcile(&mut missing, Timestamp::now()).await;
    let (_, reason, message) = ready(&missing);
    assert_eq!(reason, "GateCheckFailed");
    assert_eq!(
        message,
        "secret 'team/nope' (spec.verify.secretRef) not found"
    );
    let mut bad_platform = policy(json!({"platforms": ["linux"]}));
    bench.reconcile(&mut bad_platform, Timestamp::now()).await;
    assert!(ready(&bad_platform)
        .2
        .starts_with("invalid spec.platforms: platform 'linux'"));
    assert_eq!(
        bench.requests(),
        0,
        "no request for a policy that cannot elect"
    );
    // A Secret without trusted_root.json checks keyless signatures with Sigstore's public-good
    // root (here the embedded one: no mirror is set), and the conditions say so.
    let mut rootless = policy(identity("^https://token.actions.githubusercontent.com$"));
    bench.reconcile(&mut rootless, Timestamp::now()).await;
    let (_, reason, message) = ready(&rootless);
    assert_eq!(reason, "NoEligibleTag");
    assert!(
        message.ends_with("; keyless signatures are checked with Sigstore's public-good trusted root: no TUF mirror is set (--sigstore-tuf-mirror); the root embedded in the binary is in use"),
        "{message}"
    );
    // With no Secret at all, too.
    let mut secretless = policy(json!({"verify": {"provider": "cosign",
        "matchOIDCIdentity": [{"issuer": "^https://token.actions.githubusercontent.com$", "subject": ".*"}]}}));
    bench.reconcile(&mut secretless, Timestamp::now()).await;
    let (_, reason, message) = ready(&secretless);
    assert_eq!(reason, "NoEligibleTag", "{message}");
    assert!(
        message.contains("Sigstore's public-good trusted root"),
        "{message}"
    );
}

#[tokio::test]
async fn a_long_walk_goes_on_over_reconciles_within_its_bound() {
    let registry = Distribution::start(Variant::default());
    let tags: Vec<String> = (0..12).map(|i| format!("1.{i}.0")).collect();
    for (i, tag) in tags.iter().enumerate() {
        registry
            .push_dated("app", tag, "amd64", None, &i.to_string())
            .await;
    }
    let names: Vec<&str> = tags.iter().map(String::as_str).collect();
    let mut bench = Bench::new(registry, &names);
    bench
        .cluster
        .keys
        .insert("cosign.pub".into(), public_pem(&key(1)));
    let mut p =
        policy(json!({"verify": {"provider": "cosign", "secretRef": {"name": "cosign-keys"}}}));
    let now = Timestamp::now();
    assert_eq!(
        bench.reconcile(&mut p, now).await,
        Next::After(CONTINUE_WALK)
    );
    assert_eq!(
        held(&p).len(),
        10,
        "at most {MAX_INSPECTIONS} inspected, and 10 listed"
    );
    let first = bench.requests();
    // Each inspected: a HEAD, the referrers tag schema, the signature tag; the referrers API
    // once (Distribution has none: 404, remembered for the host).
    assert!(first <= 3 * MAX_INSPECTIONS as u64 + 3, "{first} requests");
    bench.reconcile(&mut p, now).await;
    let (status_, reason, message) = ready(&p);
    assert_eq!(
        (status_, reason.as_str()),
        (ConditionStatus::False, "NoEligibleTag")
    );
    assert!(
        message.starts_with(
            "no tag passes the gates among the 12 best candidates (1.11.0 held back: no signature"
        ),
        "{message}"
    );
    assert!(
        bench.requests() - first <= 3 * 2 + 2,
        "only the two not yet looked at"
    );
}

#[tokio::test]
async fn with_always_a_tag_moved_to_unsigned_content_is_no_longer_elected() {
    let registry = Distribution::start(Variant::default());
    let repo = format!("{}/app", registry.host);
    let signer = key(2);
    for (tag, salt) in [("1.0.0", "a"), ("2.0.0", "b")] {
        let digest = registry.push_dated("app", tag, "amd64", None, salt).await;
        let signature = sign(&signer, payload(&repo, &digest));
        registry.push_signatures("app", &digest, &[signature]).await;
    }
    let mut bench = Bench::new(registry, &["1.0.0", "2.0.0"]);
    bench
        .cluster
        .keys
        .insert("cosign.pub".into(), public_pem(&signer));
    let mut p = policy(
        json!({"verify": {"provider": "cosign", "secretRef": {"name": "cosign-keys"}},
                              "digestReflectionPolicy": "Always", "interval": "10m"}),
    );
    let now = Timestamp::now();
    assert_eq!(
        bench.reconcile(&mut p, now).await,
        Next::After(Duration::from_secs(600))
    );
    assert_eq!(elected(&p).0, "2.0.0");
    let moved = bench
        .registry
        .push_dated("app", "2.0.0", "amd64", None, "unsigned")
        .await;
    bench
        .reconcile(&mut p, now + SignedDuration::from_secs(60))
        .await;
    assert_eq!(
        elected(&p).0,
        "2.0.0",
        "within the interval the digest is not asked again"
    );
    bench
        .reconcile(&mut p, now + SignedDuration::from_secs(601))
        .await;
    assert_eq!(elected(&p).0, "1.0.0");
    let held_back = status(&p).held_back.clone().unwrap();
    assert_eq!(held_back[0].tag, "2.0.0");
    assert_eq!(held_back[0].digest.as_deref(), Some(moved.as_str()));
    assert_eq!(held_back[0].gate, "verify");
}

#[tokio::test]
async fn the_walk_stops_at_fifty_candidates() {
    let registry = Distribution::start(Variant::default());
    let tags: Vec<String> = (0..55).map(|i| format!("1.{i}.0")).collect();
    for tag in &tags {
        registry.push_dated("app", tag, "amd64", None, tag).await;
    }
    let names: Vec<&str> = tags.iter().map(String::as_str).collect();
    let mut bench = Bench::new(registry, &names);
    bench
        .cluster
        .keys
        .insert("cosign.pub".into(), public_pem(&key(1)));
    let mut p =
        policy(json!({"verify": {"provider": "cosign", "secretRef": {"name": "cosign-keys"}}}));
    let now = Timestamp::now();
    let mut reconciles = 0;
    while bench.reconcile(&mut p, now).await == Next::After(CONTINUE_WALK) {
        reconciles += 1;
        assert!(reconciles < 10, "the walk ends");
    }
    // The documented bounds (docs/security.md), written out: 50 candidates walked, 10 that
    // need the registry a reconcile.
    assert_eq!((MAX_WALK, MAX_INSPECTIONS), (50, 10));
    assert_eq!(
        reconciles, 4,
        "ten inspections a reconcile, five reconciles"
    );
    let (_, reason, message) = ready(&p);
    assert_eq!(reason, "NoEligibleTag");
    assert!(
        message.starts_with("no tag passes the gates among the 50 best candidates"),
        "{message}"
    );
    // Each of the 50 cost a HEAD, a GET of the referrers tag schema and one of the signature
    // tag; the referrers API was asked once (404: Distribution has none, remembered for the
    // host); the five below were never asked.
    assert_eq!(
        bench.requests(),
        152,
        "the first HTTPS attempt, the referrers API, then 150"
    );
    let before = bench.requests();
    bench
        .reconcile(&mut p, now + SignedDuration::from_secs(60))
        .await;
    assert_eq!(
        bench.requests(),
        before,
        "all 50 known: no request within the interval"
    );
}
