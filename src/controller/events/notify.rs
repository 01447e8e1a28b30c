//! Forwarding events to Flux's notification-controller (`--events-addr`, docs/imagepolicy.md):
//! Flux's event JSON, POSTed in the background so a reconcile never waits on it. Connection
//! errors and 5xx are retried (1s, 2s, 4s, 8s, as go-retryablehttp); a 429 means the
//! notification-controller already has the event and is not retried. Failures are logged.
//! The posts in flight and the notifications waiting are bounded and shared by namespace
//! (queue.rs).

mod auth;
mod queue;

use super::transition::{EventSpec, EventType, REPORTING_CONTROLLER};
use crate::telemetry::metrics::Metrics;
use k8s_openapi::jiff::Timestamp;
use queue::{Dropped, SendQueue};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

pub use auth::EventsAuth;
pub use queue::{MAX_QUEUED, MAX_QUEUED_PER_NAMESPACE, MAX_SENDING};

/// The annotation prefix whose keys are copied into the event's metadata.
pub const METADATA_ANNOTATION_PREFIX: &str = "event.toolkit.fluxcd.io/";

/// The involved object of a notification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Involved {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
}

/// Sends events to the notification-controller's webhook.
/// Why a notification could not be set up or sent.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error("--events-addr '{address}' is not a URL: {source}")]
    Address {
        address: String,
        source: url::ParseError,
    },
    #[error("building the events client: {0}")]
    Client(reqwest::Error),
    #[error("encoding the event: {0}")]
    Encode(serde_json::Error),
    #[error("{0} answered {1}")]
    Answered(String, reqwest::StatusCode),
    /// The request failed, with its causes.
    #[error("posting to {0}: {1}")]
    Post(String, String),
    /// The CA bundle or the token could not be read.
    #[error("--events-ca-file or --events-token-file: {0}")]
    Auth(String),
}

#[derive(Clone, Debug)]
pub struct Notifier {
    http: reqwest::Client,
    url: reqwest::Url,
    instance: String,
    retry_base: Duration,
    /// Notifications waiting or being sent, and the slots they post in (queue.rs).
    queue: Arc<SendQueue>,
    /// Verified TLS against the Flux CA bundle, when one is given (auth.rs).
    verified: Option<Arc<auth::Verified>>,
    /// The projected ServiceAccount token's file, sent only over verified TLS.
    token_file: Option<std::path::PathBuf>,
    /// The kind of the last failure logged, until a delivery.
    failing: Arc<std::sync::Mutex<Option<String>>>,
    /// Where each notification's end is counted, when `run` exports metrics.
    metrics: Option<Arc<Metrics>>,
}

impl Notifier {
    /// A notifier for `address` (`http://notification-controller.flux-system.svc.cluster.local./`).
    pub fn new(address: &str, instance: String) -> Result<Self, NotifyError> {
        crate::registry::install_crypto_provider();
        let url = reqwest::Url::parse(address).map_err(|source| NotifyError::Address {
            address: address.into(),
            source,
        })?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(NotifyError::Client)?;
        Ok(Notifier {
            http,
            url,
            instance,
            retry_base: Duration::from_secs(1),
            queue: SendQueue::new(MAX_SENDING, MAX_QUEUED),
            verified: None,
            token_file: None,
            failing: Arc::default(),
            metrics: None,
        })
    }

    /// The same notifier counting how each notification ends
    /// (`image_reflector_event_notifications_total`).
    pub fn counted(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    fn count(&self, result: &str) {
        if let Some(metrics) = &self.metrics {
            metrics.notification(result);
        }
    }

    /// The same notifier delivering as `auth` says (auth.rs); the CA bundle must read.
    pub fn secured(mut self, auth: &EventsAuth) -> Result<Self, NotifyError> {
        if let Some(path) = &auth.ca_file {
            self.verified = Some(Arc::new(auth::Verified::new(path)?));
        }
        self.token_file = auth.token_file.clone();
        Ok(self)
    }

    /// One attempt at posting `body`: over verified TLS with the token where that is the
    /// way, and for an `http://` address given a CA bundle, TLS first, then plain HTTP
    /// without the token when the server does not speak TLS.
    async fn post(&self, body: &[u8]) -> Result<reqwest::Response, NotifyError> {
        let post = |client: &reqwest::Client, url: reqwest::Url, token: Option<String>| {
            let mut request = client
                .post(url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_vec());
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            request.send()
        };
        let failed = |url: &reqwest::Url, err: reqwest::Error| {
            NotifyError::Post(url.to_string(), crate::registry::error_chain(&err))
        };
        let plain = self.url.scheme() == "http";
        let verified = match &self.verified {
            Some(verified) => verified.client()?,
            None => None,
        };
        let tls = match (verified, plain) {
            (Some(verified), _) => Some(verified),
            (None, false) => Some(self.http.clone()),
            (None, true) => None,
        };
        let Some(tls) = tls else {
            return post(&self.http, self.url.clone(), None)
                .await
                .map_err(|e| failed(&self.url, e));
        };
        let mut url = self.url.clone();
        let _ = url.set_scheme("https");
        let token = self.token_file.as_deref().map(auth::token).transpose()?;
        match post(&tls, url.clone(), token).await {
            // A server that does not speak TLS yet: plain HTTP, and no token on it.
            Err(err) if plain && err.is_connect() => post(&self.http, self.url.clone(), None)
                .await
                .map_err(|e| failed(&self.url, e)),
            answer => answer.map_err(|e| failed(&url, e)),
        }
    }

    /// The same notifier with a shorter first retry delay (tests).
    pub fn with_retry_base(mut self, base: Duration) -> Self {
        self.retry_base = base;
        self
    }

    /// Flux's event JSON for `event` about `involved`.
    pub fn payload(
        &self,
        involved: &Involved,
        event: &EventSpec,
        metadata: &BTreeMap<String, String>,
        now: Timestamp,
    ) -> Value {
        let mut payload = json!({
            "involvedObject": {
                "kind": involved.kind,
                "namespace": involved.namespace,
                "name": involved.name,
                "uid": involved.uid,
                "apiVersion": "image.toolkit.fluxcd.io/v1",
                "resourceVersion": involved.resource_version,
            },
            "severity": match event.type_ { EventType::Normal => "info", EventType::Warning => "error" },
            "timestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "message": event.message,
            "reason": event.reason,
            "reportingController": REPORTING_CONTROLLER,
            "reportingInstance": self.instance,
        });
        if !metadata.is_empty() {
            payload["metadata"] = json!(metadata);
        }
        payload
    }

    /// POSTs `payload`, retrying connection errors and 5xx; returns the final outcome. Each
    /// attempt waits for a slot shared by the involved object's namespace (queue.rs), and
    /// holds it for that attempt only.
    pub async fn send(&self, payload: &Value) -> Result<(), NotifyError> {
        let namespace = namespace_of(payload);
        let body = serde_json::to_vec(payload).map_err(NotifyError::Encode)?;
        let mut delay = self.retry_base;
        let mut last_error = None;
        for attempt in 0..5 {
            if attempt > 0 {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(30));
            }
            let slot = self.queue.slots.acquire(Some(&namespace)).await;
            let answer = self.post(&body).await;
            drop(slot);
            match answer {
                Ok(response) if response.status().is_success() => return Ok(()),
                // Already recorded by the notification-controller (its duplicate check).
                Ok(response) if response.status().as_u16() == 429 => return Ok(()),
                Ok(response) if response.status().is_server_error() => {
                    let url = self.url.to_string();
                    last_error = Some(NotifyError::Answered(url, response.status()));
                }
                Ok(response) => {
                    let url = self.url.to_string();
                    return Err(NotifyError::Answered(url, response.status()));
                }
                // A bundle or token that cannot be read is not retried.
                Err(err @ NotifyError::Auth(_)) => return Err(err),
                Err(err) => last_error = Some(err),
            }
        }
        Err(last_error.expect("five attempts were made"))
    }

    /// Sends in the background, within the queue's bounds (queue.rs); a failure, or a
    /// notification dropped for the bounds, is logged.
    pub fn spawn_send(&self, payload: Value) {
        let namespace = namespace_of(&payload);
        let (ticket, evicted) = match self.queue.admit(&namespace) {
            Ok(admitted) => admitted,
            Err(dropped) => {
                let why = match dropped {
                    Dropped::ThisOne { queued } => format!(
                        "{queued} notifications of this namespace already wait (at most \
                         {MAX_QUEUED_PER_NAMESPACE})"
                    ),
                    Dropped::OverShare { queued, fair } => format!(
                        "{MAX_QUEUED} notifications wait, {queued} of this namespace, its \
                         fair share being {fair}"
                    ),
                };
                tracing::warn!(namespace, "the notification-controller is slow to answer: a notification was dropped (its Event is recorded): {why}");
                self.count("dropped");
                return;
            }
        };
        if let Some(evicted) = evicted {
            self.count("dropped");
            tracing::warn!(namespace = evicted, "the notification-controller is slow to answer: this namespace's oldest waiting notification was dropped (its Event is recorded) to give another namespace its fair share of the {MAX_QUEUED} that may wait");
        }
        let notifier = self.clone();
        let id = ticket.id();
        let task = tokio::spawn(async move {
            let _place = ticket;
            let sent = notifier.send(&payload).await;
            notifier.count(
                sent.as_ref()
                    .map_or_else(NotifyError::result, |()| "delivered"),
            );
            // One line per kind of failure while it lasts (a server that refuses every event
            // says so once), and again after a delivery.
            let kind = sent.as_ref().err().map(NotifyError::kind);
            let mut last = notifier.failing.lock().unwrap_or_else(|e| e.into_inner());
            if let (Err(err), true) = (&sent, *last != kind) {
                tracing::warn!(error = %err, "could not forward the event to the notification-controller; further failures of this kind are not logged until one is delivered");
            }
            *last = kind;
        });
        self.queue.started(id, &namespace, task.abort_handle());
    }

    /// Waits until every notification sent so far is delivered or given up, at most `limit`
    /// (shutdown: pending notifications are in-flight work).
    pub async fn flush(&self, limit: Duration) {
        let drained = async {
            loop {
                let left = self.queue.left.notified();
                if self.queue.len() == 0 {
                    return;
                }
                left.await;
            }
        };
        if tokio::time::timeout(limit, drained).await.is_err() {
            tracing::warn!("shutting down with notifications still unsent");
        }
    }
}

impl NotifyError {
    /// How a notification that failed so ended, for `image_reflector_event_notifications_total`.
    fn result(&self) -> &'static str {
        match self {
            NotifyError::Answered(_, status) if matches!(status.as_u16(), 401 | 403) => "refused",
            NotifyError::Answered(..) => "rejected",
            NotifyError::Auth(_) => "unreadable",
            _ => "unreachable",
        }
    }

    /// What kind of failure it is, for the log: the answer's status, else the variant.
    fn kind(&self) -> String {
        match self {
            NotifyError::Answered(_, status) => status.as_str().to_string(),
            NotifyError::Post(..) => "post".into(),
            NotifyError::Auth(_) => "auth".into(),
            other => format!("{:?}", std::mem::discriminant(other)),
        }
    }
}

/// The involved object's namespace, by which sends are shared.
fn namespace_of(payload: &Value) -> String {
    payload["involvedObject"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The `event.toolkit.fluxcd.io/*` annotations of an object, then `extra` (ours win).
pub fn event_metadata(
    annotations: &BTreeMap<String, String>,
    extra: impl IntoIterator<Item = (String, String)>,
) -> BTreeMap<String, String> {
    let mut metadata: BTreeMap<String, String> = annotations
        .iter()
        .filter(|(k, _)| k.starts_with(METADATA_ANNOTATION_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    metadata.extend(extra);
    metadata
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 401 or 403 is a refusal (an enforcing notification-controller without our token);
    /// another answer a rejection; a bundle or token that does not read, unreadable.
    #[test]
    fn each_failure_ends_as_its_result() {
        let answered = |code| NotifyError::Answered("u".into(), code);
        assert_eq!(
            answered(reqwest::StatusCode::UNAUTHORIZED).result(),
            "refused"
        );
        assert_eq!(answered(reqwest::StatusCode::FORBIDDEN).result(), "refused");
        assert_eq!(
            answered(reqwest::StatusCode::BAD_REQUEST).result(),
            "rejected"
        );
        assert_eq!(NotifyError::Auth("x".into()).result(), "unreadable");
        let post = NotifyError::Post("u".into(), "refused".into());
        assert_eq!(post.result(), "unreachable");
        for result in [
            "refused",
            "rejected",
            "unreadable",
            "unreachable",
            "delivered",
        ] {
            assert!(crate::telemetry::metrics::NOTIFICATION_RESULTS.contains(&result));
        }
    }
}
