//! The event recorder: writes the events [`super::transition`] decides as core/v1 Events from
//! `image-reflector-controller`, as Flux's controllers write theirs (client-go's recorder), thins
//! repeated Warnings, and forwards them to the notification-controller ([`super::notify`]).
//! Core/v1, not `events.k8s.io/v1`: the RBAC Flux installs for its controllers grants `create`
//! on core Events only, and a drop-in replacement runs with Flux's RBAC.

use super::limits::{EventLimits, Verdict};
use super::notify::{event_metadata, Involved, Notifier};
use super::transition::{
    transition_event, unchanged_for, EventSpec, RepeatFilter, REPORTING_CONTROLLER,
};
use crate::api::Condition;
use crate::controller::outcome::conditions::{cut, whole_seconds, MAX_MESSAGE_LEN};
use crate::controller::outcome::error::describe_api_error;
use k8s_openapi::api::core::v1::{Event, EventSource};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource, ResourceExt};
use std::collections::BTreeMap;
use std::time::Duration;

/// Writes events as `image-reflector-controller`, thinning repeated Warnings, and forwards
/// them to the notification-controller when `--events-addr` is set.
pub struct EventRecorder {
    client: Client,
    instance: String,
    pub repeats: RepeatFilter,
    /// How many Event objects each object may cause (event_limits.rs).
    pub limits: EventLimits,
    notifier: Option<Notifier>,
    /// Added to the name's timestamp: one reconcile may publish several events at one instant
    /// (a gated election's `HeldBack` beside its transition), and names must differ.
    sequence: std::sync::atomic::AtomicU64,
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
            limits: EventLimits::default(),
            notifier,
            sequence: Default::default(),
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
            unrecorded(&err);
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
        self.notify(obj, event, &metadata, now);
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let api = Api::<Event>::namespaced(self.client.clone(), &namespace);
        let Some((message, count)) = self.to_write(&api, &key, event, now).await? else {
            return Ok(());
        };
        let name = format!(
            "{}.{:x}",
            regarding.name.as_deref().unwrap_or("object"),
            now.as_nanosecond().wrapping_add(i128::from(
                self.sequence
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ))
        );
        let meta = ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace),
            annotations: (!metadata.is_empty()).then_some(metadata),
            ..Default::default()
        };
        let body = self.event(meta, regarding, event, &message, count, now);
        api.create(&PostParams::default(), &body).await?;
        if count.is_some() {
            let type_ = event.type_.as_str();
            self.limits.merged_as(&key, type_, &event.reason, name);
        }
        Ok(())
    }

    /// Forwards `event` to notification-controller, when one is configured.
    fn notify<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        event: &EventSpec,
        metadata: &BTreeMap<String, String>,
        now: Timestamp,
    ) {
        let Some(notifier) = &self.notifier else {
            return;
        };
        let involved = Involved {
            kind: K::kind(&()).to_string(),
            namespace: obj.namespace().unwrap_or_default(),
            name: obj.name_any(),
            uid: obj.uid().unwrap_or_default(),
            resource_version: obj.resource_version().unwrap_or_default(),
        };
        notifier.spawn_send(notifier.payload(&involved, event, metadata, now));
    }

    /// What the object's rate leaves to write: a new Event's message and, for a merged one,
    /// its count; `None` when nothing is (over the rate, or the merged Event updated in place).
    async fn to_write(
        &self,
        api: &Api<Event>,
        key: &str,
        event: &EventSpec,
        now: Timestamp,
    ) -> Result<Option<(String, Option<i32>)>, kube::Error> {
        let type_ = event.type_.as_str();
        let instant = std::time::Instant::now();
        match self
            .limits
            .note(key, type_, &event.reason, &event.message, instant)
        {
            Verdict::Drop => {
                tracing::debug!(reason = %event.reason, "event over the object's rate: not written");
                Ok(None)
            }
            Verdict::Create(message) => Ok(Some((message, None))),
            Verdict::Combine {
                name: Some(name),
                count,
                message,
            } => {
                // The merged Event: its count, last time and latest message.
                let patch = serde_json::json!({
                    "count": count,
                    "lastTimestamp": whole_seconds(now),
                    "message": cut(&message, MAX_MESSAGE_LEN),
                });
                let params = PatchParams::default();
                match api.patch(&name, &params, &Patch::Merge(&patch)).await {
                    Ok(_) => Ok(None),
                    // Gone (expired, deleted): a new merged Event.
                    Err(kube::Error::Api(status)) if status.code == 404 => {
                        Ok(Some((message, Some(count))))
                    }
                    Err(err) => Err(err),
                }
            }
            Verdict::Combine {
                name: None,
                count,
                message,
            } => Ok(Some((message, Some(count)))),
        }
    }

    /// The Event written: Flux's shape, its message cut to a few KiB (limits.rs) and escaped
    /// as a condition's message is.
    fn event(
        &self,
        metadata: ObjectMeta,
        regarding: k8s_openapi::api::core::v1::ObjectReference,
        event: &EventSpec,
        message: &str,
        count: Option<i32>,
        now: Timestamp,
    ) -> Event {
        Event {
            metadata,
            involved_object: regarding,
            type_: Some(event.type_.as_str().into()),
            reason: Some(event.reason.clone()),
            message: Some(cut(message, MAX_MESSAGE_LEN)),
            first_timestamp: Some(whole_seconds(now)),
            last_timestamp: Some(whole_seconds(now)),
            count: Some(count.unwrap_or(1)),
            source: Some(EventSource {
                component: Some(REPORTING_CONTROLLER.into()),
                host: None,
            }),
            reporting_component: Some(REPORTING_CONTROLLER.into()),
            reporting_instance: Some(self.instance.clone()),
            ..Default::default()
        }
    }
}

/// Logs an Event that could not be recorded: a warning, unless its namespace is being deleted
/// (the API server takes nothing new there; an object deleted with its namespace is judged one
/// last time, and nobody can read an Event about it).
pub fn unrecorded(err: &kube::Error) {
    let error = describe_api_error(err);
    match namespace_terminating(err) {
        true => {
            tracing::debug!(%error, "the event was not recorded: its namespace is being deleted")
        }
        false => tracing::warn!(%error, "could not record the event"),
    }
}

/// The API server's refusal of new content in a namespace being deleted (NamespaceLifecycle).
fn namespace_terminating(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status)
        if status.code == 403 && status.message.ends_with("because it is being terminated"))
}

#[cfg(test)]
mod tests {
    use super::namespace_terminating;

    #[test]
    fn a_namespace_being_deleted_is_told_from_a_refusal() {
        let api = |message: &str| {
            let status: kube::core::Status = serde_json::from_value(serde_json::json!({
                "status": "Failure", "code": 403, "reason": "Forbidden", "message": message,
            }))
            .unwrap();
            kube::Error::Api(Box::new(status))
        };
        let terminating = "events \"app.1\" is forbidden: unable to create new content in \
                           namespace door because it is being terminated";
        assert!(namespace_terminating(&api(terminating)));
        let rbac = "events is forbidden: User \"x\" cannot create resource \"events\"";
        assert!(!namespace_terminating(&api(rbac)));
    }
}
