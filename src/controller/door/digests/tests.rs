use super::*;
use serde_json::json;

fn digest(n: usize) -> String {
    format!("sha256:{n:064x}")
}

/// A policy `name` with a minimum age (or no gate), at generation 2, its status as given.
fn policy(name: &str, gated: bool, status: serde_json::Value) -> ImagePolicy {
    let mut spec = json!({"imageRepositoryRef": {"name": "app"},
                          "policy": {"semver": {"range": ">=1.0.0"}}});
    if gated {
        spec["filterTags"] = json!({"minAge": "1h"});
    }
    serde_json::from_value(json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy",
        "metadata": {"name": name, "namespace": "team", "generation": 2},
        "spec": spec,
        "status": status,
    }))
    .unwrap()
}

fn elected(latest: &str, previous: Option<&str>) -> serde_json::Value {
    let mut status = json!({"observedGeneration": 2,
        "latestRef": {"name": "r/app", "tag": "1.1.0", "digest": latest}});
    if let Some(previous) = previous {
        status["observedPreviousRef"] =
            json!({"name": "r/app", "tag": "1.0.0", "digest": previous});
    }
    status
}

#[test]
fn a_gated_policy_vouches_for_its_election_and_the_one_before() {
    let (d1, d0) = (digest(1), digest(0));
    let p = policy("app", true, elected(&d1, Some(&d0)));
    let got = verified([&p]);
    assert_eq!(got.digests[&d1], "ImagePolicy app: 1.1.0 elected");
    assert_eq!(got.digests[&d0], "ImagePolicy app: 1.0.0 elected before");
    assert_eq!((got.digests.len(), got.left_out), (2, 0));
}

#[test]
fn only_a_gated_current_policy_vouches_and_never_for_what_a_gate_now_holds() {
    let d1 = digest(1);
    let flux = policy("flux", false, elected(&d1, None));
    assert!(
        verified([&flux]).digests.is_empty(),
        "no gate: nothing verified"
    );
    let mut stale = elected(&d1, None);
    stale["observedGeneration"] = json!(1);
    let stale = policy("stale", true, stale);
    assert!(
        verified([&stale]).digests.is_empty(),
        "a spec not judged yet"
    );
    let mut held = elected(&d1, Some(&digest(0)));
    held["heldBack"] =
        json!([{"tag": "1.1.0", "digest": d1, "gate": "verify", "reason": "revoked"}]);
    let held = policy("held", true, held);
    let got = verified([&held]);
    assert_eq!(got.digests.keys().collect::<Vec<_>>(), [&digest(0)]);
    // The tag moved to other content a gate holds: the verified digest stays admitted.
    let mut moved = elected(&d1, None);
    moved["heldBack"] =
        json!([{"tag": "1.1.0", "digest": digest(7), "gate": "verify", "reason": "unsigned"}]);
    let moved = policy("moved", true, moved);
    assert!(
        verified([&moved]).digests.contains_key(&d1),
        "held at another digest"
    );
    let mut refused = elected(&d1, None);
    refused["heldBack"] = json!([{"tag": "1.1.0", "gate": "served", "reason": "403 DENIED"}]);
    let refused = policy("refused", true, refused);
    assert!(
        verified([&refused]).digests.is_empty(),
        "held with no digest"
    );
    for odd in [
        "sha256:ABC".to_string(),
        format!("sha256:{}", "A".repeat(64)),
        format!("sha256:{}", "a".repeat(63)),
    ] {
        let odd_policy = policy("odd", true, elected(&odd, None));
        assert!(
            verified([&odd_policy]).digests.is_empty(),
            "{odd}: not a digest"
        );
    }
    let mut gone = policy("gone", true, elected(&d1, None));
    gone.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    ));
    assert!(verified([&gone]).digests.is_empty(), "being deleted");
}

#[test]
fn a_digest_two_policies_elected_names_both_and_the_bound_holds() {
    let d1 = digest(1);
    let (a, b) = (
        policy("a", true, elected(&d1, None)),
        policy("b", true, elected(&d1, None)),
    );
    let got = verified([&b, &a]);
    assert_eq!(
        got.digests[&d1],
        "ImagePolicy a: 1.1.0 elected; b: 1.1.0 elected"
    );
    let many: Vec<ImagePolicy> = (0..MAX_VERIFIED + 5)
        .map(|i| policy(&format!("p{i:05}"), true, elected(&digest(i + 10), None)))
        .collect();
    let got = verified(&many);
    assert_eq!((got.digests.len(), got.left_out), (MAX_VERIFIED, 5));
    assert!(
        got.digests.contains_key(&digest(10)),
        "the first by name are kept"
    );
}

/// The worst object the bound admits (2,048 digests, each vouched for by policies of 253-byte
/// names and 128-byte tags) is written whole: under 1 MiB, below etcd's 1.5 MiB.
#[test]
fn the_largest_object_stays_under_a_mebibyte() {
    use crate::api::{VerifiedDigests, VerifiedDigestsSpec};
    let long = |i: usize| format!("{i:05}{}", "p".repeat(248));
    let tag = "1".repeat(128);
    let many: Vec<ImagePolicy> = (0..MAX_VERIFIED * 2)
        .map(|i| {
            let mut p = policy(&long(i), true, elected(&digest(i / 2 + 10), None));
            p.status.as_mut().unwrap().latest_ref.as_mut().unwrap().tag = tag.clone();
            p
        })
        .collect();
    let got = verified(&many);
    assert_eq!(got.digests.len(), MAX_VERIFIED);
    assert!(got
        .digests
        .values()
        .all(|said| said.len() <= super::MAX_SAID && said.ends_with('…')));
    let spec = VerifiedDigestsSpec {
        count: got.digests.len() as u32,
        digests: got.digests,
        left_out: 0,
    };
    let bytes = serde_json::to_vec(&VerifiedDigests::new("verified", spec))
        .unwrap()
        .len();
    assert!(bytes < 1 << 20, "{bytes} bytes");
}

/// Cut at its bound, marked, and only past it; never inside a character.
#[test]
fn what_vouches_is_cut_at_its_bound_between_characters() {
    use super::{cut, MAX_SAID};
    let mut exact = "a".repeat(MAX_SAID);
    cut(&mut exact);
    assert_eq!(exact, "a".repeat(MAX_SAID), "at the bound: untouched");
    let mut long = "a".repeat(MAX_SAID + 1);
    cut(&mut long);
    assert_eq!((long.len(), long.ends_with('…')), (MAX_SAID, true));
    let mut wide = "é".repeat(MAX_SAID);
    cut(&mut wide);
    assert_eq!((wide.len(), wide.ends_with('…')), (MAX_SAID - 1, true));
}
