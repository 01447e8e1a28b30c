//! Forwarding to the notification-controller: retries on 5xx and connection errors, never on
//! 429 (a duplicate it already has), gives up on other 4xx.

use crate::fault_server::{FaultServer, Reply};
use image_reflector::controller::notify::Notifier;
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
    assert_eq!(notifier(&flaky).send(&payload).await, Ok(()));
    assert_eq!(flaky.seen().len(), 3, "two 5xx, then delivered");
    assert!(flaky
        .seen()
        .iter()
        .all(|s| s.body == serde_json::to_vec(&payload).unwrap()));

    let duplicate = receiver(vec![429]).await;
    assert_eq!(notifier(&duplicate).send(&payload).await, Ok(()));
    assert_eq!(duplicate.seen().len(), 1, "a 429 is final");

    let rejected = receiver(vec![400]).await;
    let err = notifier(&rejected).send(&payload).await.unwrap_err();
    assert!(err.contains("400"), "{err}");
    assert_eq!(rejected.seen().len(), 1);

    let down = receiver(vec![503; 10]).await;
    let err = notifier(&down).send(&payload).await.unwrap_err();
    assert!(err.contains("503"), "{err}");
    assert_eq!(down.seen().len(), 5, "the first try and four retries");
}

#[test]
fn an_events_address_that_is_not_a_url_is_refused() {
    let err = Notifier::new("not a url", "x".into()).unwrap_err();
    assert!(
        err.contains("--events-addr 'not a url' is not a URL"),
        "{err}"
    );
}
