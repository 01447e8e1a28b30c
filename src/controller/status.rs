//! Writing status the way Flux does (flux-compat.md §2.5): a JSON merge patch on the status
//! subresource with field manager `image-reflector-controller`, sent only when the status
//! changed, so a reconcile that changed nothing writes nothing.

use super::error::Error;
use crate::telemetry::metrics::ObjectLabels;
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;

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
        .await?;
    Ok(true)
}

/// `Kind/namespace/name`: the key of per-object state (backoff, repeated events).
pub fn object_key<K: Resource<DynamicType = ()>>(obj: &K) -> String {
    format!(
        "{}/{}/{}",
        K::kind(&()),
        obj.namespace().unwrap_or_default(),
        obj.name_any()
    )
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

/// The observedGeneration of a suspended object: the generation when its conditions still
/// say Ready, as Flux's final patch on the suspend path does (§2.4).
pub fn suspended_observed_generation(
    conditions: &[crate::api::Condition],
    generation: Option<i64>,
    observed: Option<i64>,
) -> Option<i64> {
    use crate::api::ConditionStatus::True;
    let ready = conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == True)
        && !conditions
            .iter()
            .any(|c| c.type_ != "Ready" && c.status == True);
    if ready {
        generation
    } else {
        observed
    }
}

/// The labels of an object's metric series.
pub fn object_labels<K: Resource>(kind: &str, obj: &K) -> ObjectLabels {
    ObjectLabels {
        kind: kind.into(),
        name: obj.name_any(),
        namespace: obj.namespace().unwrap_or_default(),
    }
}
