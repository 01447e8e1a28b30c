//! How an object is named to the rest of the process: its key for per-object state, its metric
//! labels, the names Flux gives our writes (field manager, finalizer, request annotation), and
//! what of it triggers a reconcile.

use crate::telemetry::metrics::ObjectLabels;
use kube::core::object::HasSpec;
use kube::{Resource, ResourceExt};
use serde::Serialize;

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

/// What triggers a reconcile of either kind (Flux §3.1, §4.1): a new generation or spec, a
/// changed `reconcile.fluxcd.io/requestedAt`, plus our finalizer and deletion (kube's
/// finalizer helper waits for its own patch to come back). Status-only writes do not. The
/// spec changes without a new generation when a served schema prunes it, or stops pruning
/// it (controller/schema/): a policy held for that is reconciled when it arrives whole, and a
/// decision parked in the background is never taken for another spec (frame/handoff.rs).
pub fn trigger_hash<K: Resource + HasSpec<Spec: Serialize>>(obj: &K) -> Option<u64> {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut h = DefaultHasher::new();
    spec_version(obj).hash(&mut h);
    requested_at(obj).hash(&mut h);
    obj.finalizers().hash(&mut h);
    obj.meta().deletion_timestamp.is_some().hash(&mut h);
    Some(h.finish())
}

/// The generation and the `spec` of `obj`: its spec alone is serialised (a watch event of a
/// repository carries its status too, which no trigger reads).
pub fn spec_version<K: Resource + HasSpec<Spec: Serialize>>(obj: &K) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    obj.meta().generation.hash(&mut hasher);
    serde_json::to_vec(obj.spec())
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
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
