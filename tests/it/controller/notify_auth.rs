//! Forwarding as Flux's RFC "Authenticate in-cluster HTTP traffic" (fluxcd/flux2 #6032) asks,
//! against a loopback notification-controller in each of its modes: verified TLS against the
//! Flux CA bundle with the projected token (enforced: a request without it is a 401), the token
//! read again once rotated, an `http://` address tried over TLS first, and plain HTTP, without
//! the token, where the server does not speak TLS yet (disabled or audit).

use crate::support::distribution::Pki;
use crate::support::fault_server::{FaultServer, Reply};
use crate::support::write;
use image_reflector::controller::events::notify::{EventsAuth, Notifier, NotifyError};
use image_reflector::telemetry::metrics::Metrics;
use std::path::PathBuf;
use std::time::Duration;

/// An enforcing server: 202 for the bearer token `want`, 401 otherwise.
async fn enforcing(pki: &Pki, want: &'static str) -> FaultServer {
    FaultServer::start_tls(&pki.server_cert, &pki.server_key, move |seen| {
        match seen.header("authorization") == Some(&format!("Bearer {want}")) {
            true => Reply::status(202),
            false => Reply::status(401),
        }
    })
    .await
}

fn notifier(address: String, auth: &EventsAuth) -> Result<Notifier, NotifyError> {
    Notifier::new(&address, "test".into())?
        .secured(auth)
        .map(|n| n.with_retry_base(Duration::from_millis(5)))
}

fn auth(dir: &std::path::Path, pki: &Pki, token: Option<&str>) -> EventsAuth {
    EventsAuth {
        ca_file: Some(PathBuf::from(write(dir, "ca.crt", &pki.ca))),
        token_file: token.map(|t| PathBuf::from(write(dir, "token", t))),
    }
}

#[tokio::test]
async fn events_go_over_verified_tls_with_the_token_read_at_each_send() {
    let (pki, dir) = (Pki::new(), tempfile::tempdir().unwrap());
    let payload = serde_json::json!({"message": "m"});
    let server = enforcing(&pki, "first").await;
    let address = format!("https://{}/", server.host());
    let secured = auth(dir.path(), &pki, Some("first\n"));
    let sender = notifier(address.clone(), &secured).unwrap();
    sender.send(&payload).await.unwrap();
    // Rotated by the kubelet: the next event carries the new token.
    write(dir.path(), "token", "second");
    let err = sender.send(&payload).await.unwrap_err();
    assert!(
        matches!(err, NotifyError::Answered(_, s) if s == 401),
        "{err}"
    );
    let said: Vec<Option<String>> = server
        .seen()
        .iter()
        .map(|s| s.header("authorization").map(str::to_string))
        .collect();
    assert_eq!(
        said,
        [Some("Bearer first".into()), Some("Bearer second".into())]
    );
    // No token: refused once, not retried.
    let bare = EventsAuth {
        token_file: None,
        ..secured.clone()
    };
    let err = notifier(address.clone(), &bare)
        .unwrap()
        .send(&payload)
        .await
        .unwrap_err();
    assert!(
        matches!(err, NotifyError::Answered(_, s) if s == 401),
        "{err}"
    );
    assert_eq!(server.seen().len(), 3, "a 401 is final");
    // Without the bundle, the test CA is not trusted: nothing is sent, the token least of all.
    let untrusted = EventsAuth {
        ca_file: None,
        ..secured
    };
    let err = notifier(address, &untrusted)
        .unwrap()
        .send(&payload)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("certificate"), "{err}");
    assert_eq!(server.seen().len(), 3);
}

#[tokio::test]
async fn an_http_address_is_tried_over_tls_first_and_plain_http_gets_no_token() {
    let (pki, dir) = (Pki::new(), tempfile::tempdir().unwrap());
    let payload = serde_json::json!({"message": "m"});
    let secured = auth(dir.path(), &pki, Some("first"));
    // A server on TLS already, named by an http:// address (Flux's default --events-addr).
    let tls = enforcing(&pki, "first").await;
    let on_tls = notifier(format!("http://{}/", tls.host()), &secured).unwrap();
    on_tls.send(&payload).await.unwrap();
    assert_eq!(tls.seen()[0].header("authorization"), Some("Bearer first"));
    // A server that speaks plain HTTP only (disabled or audit): delivered, without the token.
    let plain = FaultServer::start(|_| Reply::status(202)).await;
    let on_plain = notifier(format!("http://{}/", plain.host()), &secured).unwrap();
    on_plain.send(&payload).await.unwrap();
    let seen = plain.seen();
    assert_eq!(seen.len(), 1, "{:?}", seen.len());
    assert_eq!(seen[0].header("authorization"), None);
}

#[tokio::test]
async fn a_bundle_or_token_that_does_not_read_is_said_and_not_retried() {
    let (pki, dir) = (Pki::new(), tempfile::tempdir().unwrap());
    let not_pem = EventsAuth {
        ca_file: Some(PathBuf::from(write(
            dir.path(),
            "bad.crt",
            "not a certificate",
        ))),
        token_file: None,
    };
    let err = notifier("https://127.0.0.1:1/".into(), &not_pem).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("--events-ca-file or --events-token-file: "),
        "{err}"
    );
    let server = enforcing(&pki, "t").await;
    let missing = EventsAuth {
        token_file: Some(dir.path().join("absent")),
        ..auth(dir.path(), &pki, None)
    };
    let sender = notifier(format!("https://{}/", server.host()), &missing).unwrap();
    let err = sender.send(&serde_json::json!({})).await.unwrap_err();
    assert!(matches!(err, NotifyError::Auth(_)), "{err}");
    assert!(
        server.seen().is_empty(),
        "nothing sent without the token it was told to send"
    );
}

/// A bundle not there yet (Flux's ConfigMap mounted optional, before the CLI creates it) is
/// none: plain HTTP without a TLS attempt; once it appears, TLS is tried first.
#[tokio::test]
async fn a_bundle_that_appears_later_is_taken_up() {
    let (pki, dir) = (Pki::new(), tempfile::tempdir().unwrap());
    let payload = serde_json::json!({"message": "m"});
    let later = EventsAuth {
        ca_file: Some(dir.path().join("ca.crt")),
        token_file: Some(PathBuf::from(write(dir.path(), "token", "t"))),
    };
    let plain = FaultServer::start(|_| Reply::status(202)).await;
    let sender = notifier(format!("http://{}/", plain.host()), &later).unwrap();
    sender.send(&payload).await.unwrap();
    assert_eq!(plain.connections(), 1, "no TLS attempt without a bundle");
    write(dir.path(), "ca.crt", &pki.ca);
    sender.send(&payload).await.unwrap();
    assert_eq!(plain.connections(), 3, "a TLS attempt, then plain HTTP");
    assert!(plain
        .seen()
        .iter()
        .all(|s| s.header("authorization").is_none()));
}

/// A server that refuses every event (an enforcing one, before the token is set up) is said
/// once in the log, not once an event, and each event is posted once (a 401 is final).
#[tokio::test]
async fn a_refusing_server_is_logged_once_while_it_refuses() {
    let (lines, _guard) = crate::support::LogLines::capture();
    let server = FaultServer::start(|_| Reply::status(401)).await;
    let metrics = std::sync::Arc::new(Metrics::default());
    let sender = notifier(format!("http://{}/", server.host()), &EventsAuth::default())
        .unwrap()
        .counted(metrics.clone());
    let payload = serde_json::json!({"involvedObject": {"namespace": "n"}, "message": "m"});
    for _ in 0..5 {
        sender.spawn_send(payload.clone());
        sender.flush(Duration::from_secs(5)).await;
    }
    assert_eq!(server.seen().len(), 5);
    let said = lines.text().matches("could not forward the event").count();
    assert_eq!(said, 1, "{}", lines.text());
    // Each one counted, as a refusal an alert can be written on.
    let text = metrics.encode();
    assert!(
        text.contains("image_reflector_event_notifications_total{result=\"refused\"} 5"),
        "{text}"
    );
    assert!(!text.contains("result=\"delivered\""), "{text}");
}
