//! Writing status the way Flux does (docs/imagerepository.md): a JSON merge patch on the status
//! subresource with field manager `image-reflector-controller`, sent only when the status
//! changed, so a reconcile that changed nothing writes nothing.

use crate::api::Condition;
use crate::controller::shared::conditions::{carry_transition_times, Conditions};
use crate::controller::shared::error::Error;
use crate::controller::shared::summary::{finalize, Outcome};
use crate::telemetry::metrics::ObjectLabels;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;
use tracing::Instrument;

/// The field manager of every write, as Flux names it.
pub const FIELD_MANAGER: &str = "image-reflector-controller";

/// The finalizer both kinds carry.
pub const FINALIZER: &str = "finalizers.fluxcd.io";

/// The reconcile-request annotation.
pub const REQUESTED_AT_ANNOTATION: &str = "reconcile.fluxcd.io/requestedAt";

/// The `reconcile.fluxcd.io/requestedAt` value, if any.
pub fn requested_at<K: Resource>(obj: &K) -> Option<&str> {
    obj.annotations()
        .get(REQUESTED_AT_ANNOTATION)
        .map(String::as_str)
}

/// Patches `desired` onto the object's status when it differs from `current`.
pub async fn patch_status<K, S>(
    api: &Api<K>,
    obj: &K,
    current: &S,
    desired: &S,
) -> Result<bool, Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
    S: Serialize + PartialEq,
{
    if current == desired {
        return Ok(false);
    }
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    let patch = serde_json::json!({ "status": desired });
    api.patch_status(&obj.name_any(), &params, &Patch::Merge(&patch))
        .instrument(tracing::info_span!("status patch"))
        .await?;
    Ok(true)
}

/// `Kind/namespace/name`: the key of per-object state (backoff, repeated events).
pub fn object_key<K: Resource<DynamicType = ()>>(obj: &K) -> String {
    key_of(
        &K::kind(&()),
        &obj.namespace().unwrap_or_default(),
        &obj.name_any(),
    )
}

/// [`object_key`] from its parts (for an object known only by reference).
pub fn key_of(kind: &str, namespace: &str, name: &str) -> String {
    format!("{kind}/{namespace}/{name}")
}

/// What triggers a reconcile of either kind (Flux §3.1, §4.1): a new generation, a changed
/// `reconcile.fluxcd.io/requestedAt`, plus our finalizer and deletion (kube's finalizer helper
/// waits for its own patch to come back). Status-only writes do not.
pub fn trigger_hash<K: Resource>(obj: &K) -> Option<u64> {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut h = DefaultHasher::new();
    obj.meta().generation.hash(&mut h);
    requested_at(obj).hash(&mut h);
    obj.finalizers().hash(&mut h);
    obj.meta().deletion_timestamp.is_some().hash(&mut h);
    Some(h.finish())
}

/// The fields both kinds' statuses share, which Flux's final step writes.
pub trait FluxStatus: Clone + Default + PartialEq {
    fn conditions(&self) -> &[Condition];
    fn set_conditions(&mut self, conditions: Vec<Condition>);
    fn observed_generation(&self) -> Option<i64>;
    fn set_observed_generation(&mut self, generation: Option<i64>);
    fn set_last_handled_reconcile_at(&mut self, token: String);
}

macro_rules! flux_status {
    ($status:ty) => {
        impl FluxStatus for $status {
            fn conditions(&self) -> &[Condition] {
                self.conditions.as_deref().unwrap_or_default()
            }
            fn set_conditions(&mut self, conditions: Vec<Condition>) {
                self.conditions = Some(conditions);
            }
            fn observed_generation(&self) -> Option<i64> {
                self.observed_generation
            }
            fn set_observed_generation(&mut self, generation: Option<i64>) {
                self.observed_generation = generation;
            }
            fn set_last_handled_reconcile_at(&mut self, token: String) {
                self.last_handled_reconcile_at = Some(token);
            }
        }
    };
}
flux_status!(crate::api::ImageRepositoryStatus);
flux_status!(crate::api::ImagePolicyStatus);

/// Flux's final step of a reconcile of `obj` (§2.3–2.4): the finalized conditions (edited in
/// `list` by the steps), transition times kept where nothing changed, observedGeneration, and
/// the handled reconcile request, written into `status`.
pub fn finish_status<K: Resource, S: FluxStatus>(
    obj: &K,
    old: &S,
    status: &mut S,
    mut list: Vec<Condition>,
    outcome: &Outcome,
    now: Timestamp,
) {
    let generation = obj.meta().generation.unwrap_or(0);
    let mut conditions = Conditions::new(&mut list, generation, now);
    let observed = finalize(
        &mut conditions,
        outcome,
        generation,
        old.observed_generation(),
    );
    carry_transition_times(old.conditions(), &mut list);
    status.set_conditions(list);
    status.set_observed_generation(observed);
    if let Some(token) = requested_at(obj) {
        status.set_last_handled_reconcile_at(token.to_string());
    }
}

/// Whether `conditions` say Ready=True.
pub fn is_ready(conditions: &[Condition]) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == crate::api::ConditionStatus::True)
}

/// Whether `conditions` say Stalled=True.
pub fn is_stalled(conditions: &[Condition]) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == "Stalled" && c.status == crate::api::ConditionStatus::True)
}

/// The labels of an object's metric series.
pub fn object_labels<K: Resource>(
    kind: impl Into<std::borrow::Cow<'static, str>>,
    obj: &K,
) -> ObjectLabels {
    ObjectLabels {
        kind: kind.into(),
        name: obj.name_any(),
        namespace: obj.namespace().unwrap_or_default(),
    }
}

/// `Latest image tag for <name> resolved to <tag>[ with digest <d>][ (previously
/// <name>:<tag>[@<digest>])]` (§4.8).
pub fn ready_message(status: &crate::api::ImagePolicyStatus) -> String {
    let Some(latest) = &status.latest_ref else {
        return String::new();
    };
    let mut message = format!(
        "Latest image tag for {} resolved to {}",
        latest.name, latest.tag
    );
    if let Some(digest) = latest.digest.as_deref().filter(|d| !d.is_empty()) {
        message.push_str(&format!(" with digest {digest}"));
    }
    if let Some(previous) = status
        .observed_previous_ref
        .as_ref()
        .filter(|p| *p != latest)
    {
        message.push_str(&format!(" (previously {}:{}", previous.name, previous.tag));
        if let Some(digest) = previous.digest.as_deref().filter(|d| !d.is_empty()) {
            message.push_str(&format!("@{digest}"));
        }
        message.push(')');
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ImagePolicyStatus, ImageRef};

    fn r(tag: &str, digest: Option<&str>) -> ImageRef {
        ImageRef {
            name: "foo/bar".into(),
            tag: tag.into(),
            digest: digest.map(String::from),
        }
    }

    #[test]
    fn ready_messages_are_fluxs() {
        let status = |latest, previous| ImagePolicyStatus {
            latest_ref: Some(latest),
            observed_previous_ref: previous,
            ..Default::default()
        };
        assert_eq!(
            ready_message(&status(r("1.1.0", None), Some(r("1.0.0", None)))),
            "Latest image tag for foo/bar resolved to 1.1.0 (previously foo/bar:1.0.0)"
        );
        assert_eq!(
            ready_message(&status(
                r("1.0.0", Some("sha256:1234567890abcdef")),
                Some(r("1.0.0", Some("sha256:abcdef1234567890")))
            )),
            "Latest image tag for foo/bar resolved to 1.0.0 with digest sha256:1234567890abcdef (previously foo/bar:1.0.0@sha256:abcdef1234567890)"
        );
        assert_eq!(
            ready_message(&status(r("1.0.0", None), None)),
            "Latest image tag for foo/bar resolved to 1.0.0"
        );
        assert_eq!(
            ready_message(&status(r("1.0.0", None), Some(r("1.0.0", None)))),
            "Latest image tag for foo/bar resolved to 1.0.0",
            "a previous ref equal to the latest is not shown"
        );
    }
}
