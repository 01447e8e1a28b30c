//! Events are rate-limited and merged per object, as client-go's recorder does (docs/security.md,
//! "What a registry answers"): a registry alternating success and 400 with fresh 30 KB messages
//! made 290 Event objects and 4.4 MB of messages in 3 minutes from 10 repositories. Through
//! the controller's recorder, over a mocked API server that checks every call.

use crate::support::api_mock::{calls, mock, Expect};
use image_reflector::api::{Condition, ConditionStatus, ImageRepository};
use image_reflector::store::MemoryStore;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;

fn ready(status: ConditionStatus, reason: &str, message: String) -> Vec<Condition> {
    vec![Condition {
        type_: "Ready".into(),
        status,
        observed_generation: Some(1),
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
        reason: reason.into(),
        message,
    }]
}

#[tokio::test]
async fn forty_flapping_transitions_write_at_most_twenty_five_events_merged_from_the_tenth() {
    let repo: ImageRepository = serde_json::from_value(json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
        "metadata": {"name": "app", "namespace": "team", "uid": "u-1"},
        "spec": {"image": "r.example/team/app", "interval": "5m"},
    }))
    .unwrap();
    // Normal and Warning alternate: 13 Normals and 12 Warnings use the burst of 25; of each
    // kind the first nine are Events of their own, the tenth the merged one, the rest patch it.
    let post = || Expect::event("team");
    let patch = || Expect::ok("PATCH", "/api/v1/namespaces/team/events/*", |b| b.clone());
    let mut script = Vec::new();
    for i in 1..=25 {
        let nth = (i + 1) / 2; // the nth of its kind
        script.push(if nth <= 10 { post() } else { patch() });
    }
    let (client, server) = mock(script);
    let store: Arc<dyn image_reflector::store::TagStore> = Arc::new(MemoryStore::new());
    let ctx = crate::support::api_mock::context(client, store, |_| {});
    let fresh = |i: usize| format!("{i}: {}", "x".repeat(30_000));
    for i in 0..40 {
        let failed = ready(ConditionStatus::False, "ReadOperationFailed", fresh(i));
        let ok = ready(
            ConditionStatus::True,
            "Succeeded",
            format!("found {i} tags"),
        );
        let (old, new) = match i % 2 {
            0 => (failed, ok),
            _ => (ok, failed),
        };
        ctx.recorder
            .publish_transition(&repo, &old, &new, Timestamp::now(), BTreeMap::new())
            .await;
    }
    let calls = calls(server).await;
    assert_eq!(calls.len(), 25, "the burst, then nothing for five minutes");
    let message = |n: usize| calls[n].body["message"].as_str().unwrap().to_string();
    assert!(
        message(1).len() <= 4096 && message(1).ends_with("(cut)"),
        "{}",
        message(1).len()
    );
    // The tenth Warning (the 20th call) starts the merged Event, whose count then grows.
    assert!(
        message(19).starts_with("(combined from similar events): 19: xxx"),
        "{}",
        &message(19)[..60]
    );
    assert_eq!(calls[19].body["count"], 1);
    assert_eq!(
        calls[23].body["count"], 3,
        "the twelfth Warning patches it to 3"
    );
    let written: usize = calls.iter().map(|c| c.body.to_string().len()).sum();
    assert!(written < 25 * 4300, "{written} bytes of Events");
}
