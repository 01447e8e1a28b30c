//! A decision that changes what downstream tooling acts on (an ImagePolicy's `latestRef`, which
//! image-automation-controller commits) is written only when the spec it was decided from is
//! the one the API server holds (docs/imagepolicy.md, "Upgrades never skip a gate").
//!
//! Why: right after our CRDs replace Flux's, a watch opened under the old schema goes on
//! serving objects decoded by it, pruned of every field Flux's CRDs lack (`filterTags.minAge`,
//! `platforms`, `verify`, `downgrade`), while a GET (or a new watch) serves them whole. A
//! policy created in that window was elected without its gates. The kind says which writes need
//! the check ([`super::reconciled::Reconciled::confirm_before_writing`]); an ImagePolicy asks
//! for it only when the object lacks the defaults our CRDs give every object
//! (`spec.downgrade`), so objects served under our schema cost no request at all, and one that
//! was not costs one GET when its election would change. When the fresh object differs, the
//! decision is made again from it, on this worker, and that is what is written.

use super::handoff::RECONCILE_DEADLINE;
use super::reconciled::{Decision, Reconciled};
use crate::controller::access::api_read::{read_named, ReadError, API_READ_DEADLINE};
use crate::controller::outcome::error::Error;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, ResourceExt};
use std::sync::Arc;

/// The object, its status before, and the decision to write: the ones given, or, when a fresh
/// read shows another spec, the fresh object, its status and a decision made from it.
pub async fn confirmed<K: Reconciled>(
    obj: Arc<K>,
    old: K::Status,
    decision: Decision<K::Status>,
    api: &Api<K>,
    ctx: &Arc<K::Ctx>,
    now: Timestamp,
) -> Result<(Arc<K>, K::Status, Decision<K::Status>), Error> {
    if !obj.confirm_before_writing(&old, &decision.status) {
        return Ok((obj, old, decision));
    }
    let name = obj.name_any();
    // Nothing is written when the read fails: the reconcile's error retries it.
    let fresh = match read_named(&name, api.get(&name)).await {
        Ok(fresh) => fresh,
        Err(ReadError::Api(err)) => return Err(Error::Kube(err)),
        Err(_) => return Err(Error::Deadline(API_READ_DEADLINE)),
    };
    if spec(&fresh) == spec(obj.as_ref()) {
        return Ok((obj, old, decision));
    }
    tracing::warn!(
        "the watch served this object without fields the API server holds (a watch opened \
         before the CRDs changed): decided again from a fresh read"
    );
    let fresh = Arc::new(fresh);
    let old = fresh.status().cloned().unwrap_or_default();
    // Boxed: the reconcile future would otherwise hold two decisions inline.
    let deciding = super::panic::contained(Box::pin(fresh.decide(ctx, now)));
    let decision = match tokio::time::timeout(RECONCILE_DEADLINE, deciding).await {
        Ok(Ok(decision)) => decision,
        Ok(Err(panic)) => return Err(Error::Panicked(panic)),
        Err(_) => return Err(Error::Deadline(RECONCILE_DEADLINE)),
    };
    Ok((fresh, old, decision))
}

/// The object's `spec`, as the API server would serialise it.
fn spec<K: serde::Serialize>(obj: &K) -> serde_json::Value {
    serde_json::to_value(obj)
        .ok()
        .and_then(|mut v| v.get_mut("spec").map(serde_json::Value::take))
        .unwrap_or_default()
}
