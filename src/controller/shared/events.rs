//! Kubernetes Events (docs/imagepolicy.md, docs/compatibility.md): which event a reconcile
//! produces is decided from the Ready condition before and after; the recorder writes it as an
//! `events.k8s.io/v1` Event from `image-reflector-controller`.
//!
//! Unlike Flux, only transitions produce events: no Trace event on a reconcile that changed
//! nothing, and an identical Warning is written at most once per repeat interval.

use crate::api::{Condition, ConditionStatus};
use crate::controller::shared::notify::{event_metadata, Involved, Notifier};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::{Api, Client, Resource, ResourceExt};
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The reporting controller of every event, as Flux names it.
pub const REPORTING_CONTROLLER: &str = "image-reflector-controller";

/// Normal or Warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// One event to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    pub type_: EventType,
    pub reason: String,
    pub message: String,
}

/// The event for a reconcile that moved the conditions from `old` to `new`:
/// - now ready, and before not ready or with another message: Normal `Succeeded`;
/// - now not ready: Warning with Ready's reason and message (repeats are thinned by the
///   recorder);
/// - otherwise none.
pub fn transition_event(old: &[Condition], new: &[Condition]) -> Option<EventSpec> {
    let ready = |list: &[Condition]| -> Option<Condition> {
        list.iter().find(|c| c.type_ == "Ready").cloned()
    };
    let is_ready = |list: &[Condition]| {
        ready(list).is_some_and(|c| c.status == ConditionStatus::True)
            && !list
                .iter()
                .any(|c| c.type_ != "Ready" && c.status == ConditionStatus::True)
    };
    let new_ready = ready(new)?;
    if is_ready(new) {
        let changed =
            !is_ready(old) || ready(old).map(|c| c.message) != Some(new_ready.message.clone());
        return changed.then_some(EventSpec {
            type_: EventType::Normal,
            reason: new_ready.reason,
            message: new_ready.message,
        });
    }
    (new_ready.status == ConditionStatus::False).then_some(EventSpec {
        type_: EventType::Warning,
        reason: new_ready.reason,
        message: new_ready.message,
    })
}

/// How long `old` has already shown the failure `event` reports (its Ready's age), if it does.
pub fn unchanged_for(old: &[Condition], event: &EventSpec, now: Timestamp) -> Option<Duration> {
    let ready = old.iter().find(|c| c.type_ == "Ready")?;
    let same = ready.status == ConditionStatus::False
        && ready.reason == event.reason
        && ready.message == event.message;
    same.then(|| {
        now.duration_since(ready.last_transition_time.0)
            .unsigned_abs()
    })
}

/// Remembers each object's last Warning, so an identical one is sent at most once per
/// interval (docs/compatibility.md, `--event-repeat-interval`).
pub struct RepeatFilter {
    interval: Duration,
    last_warning: Mutex<HashMap<String, (String, String, Instant)>>,
}

impl RepeatFilter {
    pub fn new(interval: Duration) -> Self {
        RepeatFilter {
            interval,
            last_warning: Mutex::default(),
        }
    }

    /// Whether `event` for the object `key` should be sent now; remembers it if so.
    /// `unchanged_for` is how long the status has already shown this failure: after a restart,
    /// when nothing is remembered, it stands in for the last send.
    pub fn should_send(
        &self,
        key: &str,
        event: &EventSpec,
        unchanged_for: Option<Duration>,
    ) -> bool {
        let mut memory = self.last_warning.lock().expect("event memory lock");
        if event.type_ == EventType::Warning && !memory.contains_key(key) {
            if let Some(age) = unchanged_for.filter(|age| *age < self.interval) {
                let sent = Instant::now().checked_sub(age).unwrap_or_else(Instant::now);
                memory.insert(
                    key.to_string(),
                    (event.reason.clone(), event.message.clone(), sent),
                );
            }
        }
        match event.type_ {
            EventType::Normal => {
                memory.remove(key);
                true
            }
            EventType::Warning => {
                let repeat = memory.get(key).is_some_and(|(reason, message, at)| {
                    *reason == event.reason
                        && *message == event.message
                        && at.elapsed() < self.interval
                });
                if !repeat {
                    memory.insert(
                        key.to_string(),
                        (event.reason.clone(), event.message.clone(), Instant::now()),
                    );
                }
                !repeat
            }
        }
    }

    /// Forgets a deleted object.
    pub fn forget(&self, key: &str) {
        self.last_warning
            .lock()
            .expect("event memory lock")
            .remove(key);
    }
}

/// Writes events as `image-reflector-controller`, thinning repeated Warnings, and forwards
/// them to the notification-controller when `--events-addr` is set.
pub struct EventRecorder {
    client: Client,
    instance: String,
    pub repeats: RepeatFilter,
    notifier: Option<Notifier>,
}

impl EventRecorder {
    pub fn new(
        client: Client,
        instance: String,
        repeat_interval: Duration,
        notifier: Option<Notifier>,
    ) -> Self {
        EventRecorder {
            client,
            instance,
            repeats: RepeatFilter::new(repeat_interval),
            notifier,
        }
    }

    /// Publishes the event (if any) of a reconcile that moved the conditions from `old` to
    /// `new`; a failure to record it is logged, never fails the reconcile.
    pub async fn publish_transition<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        old: &[Condition],
        new: &[Condition],
        now: Timestamp,
        extra: BTreeMap<String, String>,
    ) {
        let Some(event) = transition_event(old, new) else {
            return;
        };
        let age = unchanged_for(old, &event, now);
        if let Err(err) = self.publish(obj, &event, age, now, extra).await {
            let error = crate::controller::shared::error::describe_api_error(&err);
            tracing::warn!(%error, "could not record the event");
        }
    }

    /// Waits (at most `limit`) for the notifications still being forwarded.
    pub async fn flush(&self, limit: Duration) {
        if let Some(notifier) = &self.notifier {
            notifier.flush(limit).await;
        }
    }

    /// Logs `event`, writes it to the API server and forwards it, unless it repeats a recent
    /// Warning (`unchanged_for`: see [`RepeatFilter::should_send`]). `extra` metadata (tag,
    /// digest, ...) goes with the object's `event.toolkit.fluxcd.io/*` annotations.
    pub async fn publish<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        event: &EventSpec,
        unchanged_for: Option<Duration>,
        now: Timestamp,
        extra: BTreeMap<String, String>,
    ) -> Result<(), kube::Error> {
        let regarding = obj.object_ref(&());
        let key = format!(
            "{}/{}/{}",
            regarding.kind.as_deref().unwrap_or_default(),
            regarding.namespace.as_deref().unwrap_or_default(),
            regarding.name.as_deref().unwrap_or_default()
        );
        if !self.repeats.should_send(&key, event, unchanged_for) {
            return Ok(());
        }
        // The reconcile's own line already says it (error.rs, log_result): debug only here.
        tracing::debug!(reason = %event.reason, type_ = ?event.type_, "event: {}", event.message);
        let metadata = event_metadata(obj.annotations(), extra);
        if let Some(notifier) = &self.notifier {
            let involved = Involved {
                kind: K::kind(&()).to_string(),
                namespace: obj.namespace().unwrap_or_default(),
                name: obj.name_any(),
                uid: obj.uid().unwrap_or_default(),
                resource_version: obj.resource_version().unwrap_or_default(),
            };
            notifier.spawn_send(notifier.payload(&involved, event, &metadata, now));
        }
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let body = Event {
            metadata: ObjectMeta {
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_deref().unwrap_or("object"),
                    now.as_nanosecond()
                )),
                namespace: Some(namespace.clone()),
                annotations: (!metadata.is_empty()).then_some(metadata),
                ..Default::default()
            },
            event_time: Some(MicroTime(now)),
            type_: Some(event.type_.as_str().into()),
            reason: Some(event.reason.clone()),
            // The Events API caps a note at 1 kB.
            note: Some(cut(&event.message, 1024)),
            action: Some("Reconcile".into()),
            regarding: Some(regarding),
            reporting_controller: Some(REPORTING_CONTROLLER.into()),
            reporting_instance: Some(self.instance.clone()),
            ..Default::default()
        };
        Api::<Event>::namespaced(self.client.clone(), &namespace)
            .create(&PostParams::default(), &body)
            .await
            .map(|_| ())
    }
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max - 3;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn cond(type_: &str, status: ConditionStatus, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status,
            observed_generation: Some(1),
            last_transition_time: Time(Timestamp::UNIX_EPOCH),
            reason: reason.into(),
            message: message.into(),
        }
    }

    fn ready(message: &str) -> Vec<Condition> {
        vec![cond("Ready", ConditionStatus::True, "Succeeded", message)]
    }

    fn failing(reason: &str, message: &str) -> Vec<Condition> {
        vec![
            cond(
                "Reconciling",
                ConditionStatus::True,
                "ProgressingWithRetry",
                "p",
            ),
            cond("Ready", ConditionStatus::False, reason, message),
        ]
    }

    #[test]
    fn events_follow_transitions() {
        let normal = |m: &str| {
            Some(EventSpec {
                type_: EventType::Normal,
                reason: "Succeeded".into(),
                message: m.into(),
            })
        };
        let warning = |r: &str, m: &str| {
            Some(EventSpec {
                type_: EventType::Warning,
                reason: r.into(),
                message: m.into(),
            })
        };
        let cases = [
            ("first success", vec![], ready("a"), normal("a")),
            ("recovery", failing("Failed", "x"), ready("a"), normal("a")),
            ("message change", ready("a"), ready("b"), normal("b")),
            ("no change", ready("a"), ready("a"), None),
            (
                "failure",
                ready("a"),
                failing("ReadOperationFailed", "x"),
                warning("ReadOperationFailed", "x"),
            ),
            (
                "repeat failure",
                failing("Failed", "x"),
                failing("Failed", "x"),
                warning("Failed", "x"),
            ),
            ("no ready yet", vec![], vec![], None),
        ];
        for (name, old, new, expected) in cases {
            assert_eq!(transition_event(&old, &new), expected, "{name}");
        }
    }

    #[test]
    fn identical_warnings_are_thinned_until_the_interval_passes() {
        let warning = |m: &str| EventSpec {
            type_: EventType::Warning,
            reason: "Failed".into(),
            message: m.into(),
        };
        let filter = RepeatFilter::new(Duration::from_secs(600));
        assert!(filter.should_send("a", &warning("x"), None));
        assert!(
            !filter.should_send("a", &warning("x"), None),
            "identical repeat"
        );
        assert!(
            filter.should_send("b", &warning("x"), None),
            "another object"
        );
        assert!(
            filter.should_send("a", &warning("y"), None),
            "another message"
        );
        let normal = EventSpec {
            type_: EventType::Normal,
            reason: "Succeeded".into(),
            message: "ok".into(),
        };
        assert!(filter.should_send("a", &normal, None));
        assert!(
            filter.should_send("a", &warning("y"), None),
            "a recovery resets"
        );
        let expired = RepeatFilter::new(Duration::ZERO);
        assert!(expired.should_send("a", &warning("x"), None));
        assert!(
            expired.should_send("a", &warning("x"), None),
            "after the interval"
        );
        // After a restart: a failure the status has shown for a minute was sent then.
        let restarted = RepeatFilter::new(Duration::from_secs(600));
        let minute = Some(Duration::from_secs(60));
        assert!(!restarted.should_send("a", &warning("x"), minute));
        let long_ago = Some(Duration::from_secs(3600));
        assert!(RepeatFilter::new(Duration::from_secs(600)).should_send(
            "a",
            &warning("x"),
            long_ago
        ));
    }
}
