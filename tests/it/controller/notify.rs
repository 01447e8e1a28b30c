//! Forwarding to the notification-controller: retries on 5xx and connection errors, never on
//! 429 (a duplicate it already has), gives up on other 4xx.

use crate::support::fault_server::{FaultServer, Reply};
use image_reflector::controller::events::notify::Notifier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

async fn receiver(statuses: Vec<u16>) -> FaultServer {
    let count = Arc::new(AtomicUsize::new(0));
    FaultServer::start(move |_| {
        let i = count.fetch_add(1, Ordering::SeqCst);
        Reply::status(*statuses.get(i).unwrap_or(&200))
    })
    .await
}

fn notifier(server: &FaultServer) -> Notifier {
    Notifier::new(&format!("http://{}/", server.host()), "test".into())
        .unwrap()
        .with_retry_base(Duration::from_millis(5))
}

#[tokio::test]
async fn server_errors_are_retried_and_429_is_not() {
    let payload = serde_json::json!({"message": "m"});
    let flaky = receiver(vec![503, 500, 200]).await;
    notifier(&flaky).send(&payload).await.unwrap();
    assert_eq!(flaky.seen().len(), 3, "two 5xx, then delivered");
    assert!(flaky
        .seen()
        .iter()
        .all(|s| s.body == serde_json::to_vec(&payload).unwrap()));

    let duplicate = receiver(vec![429]).await;
    notifier(&duplicate).send(&payload).await.unwrap();
    assert_eq!(duplicate.seen().len(), 1, "a 429 is final");

    let rejected = receiver(vec![400]).await;
    let err = notifier(&rejected)
        .send(&payload)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("400"), "{err}");
    assert_eq!(rejected.seen().len(), 1);

    let down = receiver(vec![503; 10]).await;
    let err = notifier(&down)
        .send(&payload)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("503"), "{err}");
    assert_eq!(down.seen().len(), 5, "the first try and four retries");
}

/// A forwarding failure says why: the connect error, not only "error sending request".
#[tokio::test]
async fn a_failure_to_reach_the_notification_controller_names_its_cause() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let err = Notifier::new(&format!("http://127.0.0.1:{port}/"), "test".into())
        .unwrap()
        .with_retry_base(Duration::from_millis(1))
        .send(&serde_json::json!({"message": "m"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("posting to http://127.0.0.1:{port}/")),
        "{err}"
    );
    assert!(err.to_lowercase().contains("connection refused"), "{err}");
}

#[test]
fn an_events_address_that_is_not_a_url_is_refused() {
    let err = Notifier::new("not a url", "x".into())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--events-addr 'not a url' is not a URL"),
        "{err}"
    );
}

/// What Flux's notification-controller makes of an event we send (its `cleanupMetadata` and
/// de-duplication, in our words): of the metadata it keeps the keys under the involved
/// object's API group, with that prefix removed, except `<group>/checksum` and `<group>/digest`,
/// and the `event.toolkit.fluxcd.io/` keys; two events with the same message and
/// `<group>/revision` (and `<group>/token`) are one. Returns (the Alert's metadata, the
/// de-duplication key).
pub fn as_an_alert_sees_it(
    event: &serde_json::Value,
) -> (std::collections::BTreeMap<String, String>, String) {
    let group = event["involvedObject"]["apiVersion"]
        .as_str()
        .and_then(|v| v.split('/').next())
        .unwrap_or_default()
        .to_string();
    let dropped = [format!("{group}/checksum"), format!("{group}/digest")];
    let mut kept = std::collections::BTreeMap::new();
    let metadata = event["metadata"].as_object().cloned().unwrap_or_default();
    for (key, value) in &metadata {
        let value = value.as_str().unwrap_or_default().to_string();
        if let Some(short) = key.strip_prefix(&format!("{group}/")) {
            if !dropped.contains(key) {
                kept.insert(short.to_string(), value);
            }
        } else if key.starts_with("event.toolkit.fluxcd.io/") {
            kept.insert(key.clone(), value);
        }
    }
    let field = |k: &str| {
        metadata
            .get(&format!("{group}/{k}"))
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    let key = format!(
        "{}|{}|{}",
        event["message"].as_str().unwrap_or_default(),
        field("revision"),
        field("token")
    );
    (kept, key)
}

#[test]
fn the_alert_rules_keep_only_the_groups_keys_and_drop_digest_and_checksum() {
    let event = serde_json::json!({
        "involvedObject": {"apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy"},
        "message": "m",
        "metadata": {"tag": "1", "image.toolkit.fluxcd.io/digest": "x",
                     "image.toolkit.fluxcd.io/checksum": "y", "image.toolkit.fluxcd.io/latestTag": "1",
                     "image.toolkit.fluxcd.io/revision": "1@sha256:a", "event.toolkit.fluxcd.io/cluster": "prod"}
    });
    let (kept, key) = as_an_alert_sees_it(&event);
    let kept: Vec<_> = kept.keys().map(String::as_str).collect();
    assert_eq!(
        kept,
        ["event.toolkit.fluxcd.io/cluster", "latestTag", "revision"]
    );
    assert_eq!(key, "m|1@sha256:a|");
}

fn event_of(namespace: &str, i: usize) -> serde_json::Value {
    serde_json::json!({
        "involvedObject": {"kind": "ImagePolicy", "namespace": namespace, "name": format!("p{i}")},
        "message": "m",
    })
}

/// One task per Event, and no bound on the posts in flight, while notification-controller
/// was slow: a namespace's 200 notifications that it answers slowly (4 s, then 503) are
/// posted at most four at once, at most 64 of them wait (the rest are dropped), and another
/// namespace's notification is posted by the next slot that frees, not after the 64.
#[tokio::test]
async fn a_slow_namespace_holds_no_more_than_its_share_of_the_sends() {
    let server = FaultServer::start(|seen| {
        if String::from_utf8_lossy(&seen.body).contains("\"hostile\"") {
            Reply::status(503).delayed(Duration::from_secs(4))
        } else {
            Reply::status(200)
        }
    })
    .await;
    let notifier = notifier(&server);
    for i in 0..200 {
        notifier.spawn_send(event_of("hostile", i));
    }
    while server.connections() < 4 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    notifier.spawn_send(event_of("team", 0));
    let team = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let seen = server.seen();
            let at = seen
                .iter()
                .position(|s| String::from_utf8_lossy(&s.body).contains("\"team\""));
            if let Some(at) = at {
                return at;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the other namespace's notification is posted");
    assert!(team <= 8, "{team} posts of the slow namespace went first");
    assert!(
        server.peak_concurrency() <= 4,
        "{}",
        server.peak_concurrency()
    );
    notifier.flush(Duration::from_millis(1)).await;
}
