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

/// The labels of an object's metric series.
pub fn object_labels<K: Resource>(kind: &str, obj: &K) -> ObjectLabels {
    ObjectLabels {
        kind: kind.into(),
        name: obj.name_any(),
        namespace: obj.namespace().unwrap_or_default(),
    }
}
