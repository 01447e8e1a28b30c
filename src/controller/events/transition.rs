//! Kubernetes Events (docs/imagepolicy.md, docs/compatibility.md): which event a reconcile
//! produces is decided from the Ready condition before and after; the recorder writes it as an
//! core/v1 Event from `image-reflector-controller`.
//!
//! Unlike Flux, only transitions produce events: no Trace event on a reconcile that changed
//! nothing, and an identical Warning is written at most once per repeat interval.

use crate::api::{Condition, ConditionStatus};
use k8s_openapi::jiff::Timestamp;
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
