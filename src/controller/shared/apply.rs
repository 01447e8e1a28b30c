//! The body of a reconcile of either kind: what [`Reconciled`] asks of the kind (prepare,
//! decide, metrics, event metadata), then what it comes to: the log line, the status patch
//! (only when changed), the metrics and the event of a transition.

use super::context::Context;
use super::error::{log_result, Error};
use super::events::EventSpec;
use super::next::Next;
use super::queue::WorkQueue;
use super::status::{is_stalled, patch_status, FluxStatus, Patched};
use crate::telemetry::metrics::Metrics;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;

/// What a kind's decision comes to: the status to write, when to run next, and what happened.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision<S> {
    pub status: S,
    pub next: Next,
    /// What happened, for the log (Flux's trace message when nothing failed).
    pub summary: String,
    /// Nothing was done this time (no scan slot, or deleted while scanning): not a reconcile
    /// of the object, for the start-up order and the warm start.
    pub held: bool,
}

/// What [`Reconciled::prepare`] found: go on with the object (perhaps rewritten), or stop
/// here and run again then.
pub enum Prepared<'a, K: Clone> {
    Go(Cow<'a, K>),
    Stop(Next),
}

/// What differs between ImageRepository and ImagePolicy.
pub trait Reconciled:
    Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Serialize
    + Debug
    + Send
    + Sync
    + 'static
{
    /// The status subresource.
    type Status: FluxStatus + Serialize + Debug + Send + Sync;
    /// What the kind's reconciles share: the common [`Context`] and the kind's own state.
    type Ctx: AsRef<Context> + Send + Sync + 'static;
    /// The controller's name in logs and metrics (`imagerepository`, `imagepolicy`).
    const CONTROLLER: &'static str;

    fn queue(ctx: &Context) -> &WorkQueue;
    fn status(&self) -> Option<&Self::Status>;
    fn suspended(&self) -> bool;

    /// Before anything else, suspend included: the kind may rewrite the object (an
    /// ImagePolicy migrates deprecated status fields) or stop until later (its cache is still
    /// loading, the start-up order holds it back).
    fn prepare<'a>(
        &'a self,
        api: &Api<Self>,
        ctx: &Self::Ctx,
    ) -> impl Future<Output = Result<Prepared<'a, Self>, Error>> + Send;

    /// The reconcile proper: what the status should be and when to run again.
    fn decide(
        &self,
        ctx: &Self::Ctx,
        now: Timestamp,
    ) -> impl Future<Output = Decision<Self::Status>> + Send;

    /// Bookkeeping once decided, before the status is written.
    fn decided(&self, _ctx: &Self::Ctx, _decision: &Decision<Self::Status>) {}

    /// The object's metric series after this reconcile.
    fn record_metrics(&self, status: &Self::Status, metrics: &Metrics);

    /// Metadata an event of this reconcile carries besides the object's annotations.
    fn event_metadata(_status: &Self::Status) -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    /// Events of this reconcile besides the condition transition's (Normal; an ImagePolicy
    /// says when a gate holds a tag back, and when a held tag is elected).
    fn notes(_old: &Self::Status, _new: &Self::Status) -> Vec<EventSpec> {
        Vec::new()
    }

    /// The object is being deleted: what goes with it.
    fn cleanup(&self, ctx: &Self::Ctx) -> impl Future<Output = Result<Next, Error>> + Send;
}

/// Prepare, suspend, decide, log, write the status, record metrics, publish the event of a
/// transition. Returns when to run next, and the summary of what happened.
pub(super) async fn apply<K: Reconciled>(
    obj: &K,
    api: &Api<K>,
    ctx: &K::Ctx,
) -> Result<(Next, String), Error> {
    let obj = match obj.prepare(api, ctx).await? {
        Prepared::Go(obj) => obj,
        Prepared::Stop(next) => return Ok((next, String::new())),
    };
    if obj.suspended() {
        tracing::info!("reconciliation is suspended for this object");
        return Ok((Next::AwaitChange, String::new()));
    }
    let shared: &Context = ctx.as_ref();
    let old = obj.status().cloned().unwrap_or_default();
    let now = (shared.clock)();
    let decision = obj.decide(ctx, now).await;
    log_result(
        &decision.next,
        is_stalled(decision.status.conditions()),
        &decision.summary,
    );
    obj.decided(ctx, &decision);
    patch_status(api, obj.as_ref(), &old, &decision.status, Patched::Whole).await?;
    obj.record_metrics(&decision.status, &shared.metrics);
    let metadata = K::event_metadata(&decision.status);
    for note in K::notes(&old, &decision.status) {
        let published = shared
            .recorder
            .publish(obj.as_ref(), &note, None, now, metadata.clone())
            .await;
        if let Err(err) = published {
            let error = super::error::describe_api_error(&err);
            tracing::warn!(%error, "could not record the event");
        }
    }
    shared
        .recorder
        .publish_transition(
            obj.as_ref(),
            old.conditions(),
            decision.status.conditions(),
            now,
            metadata,
        )
        .await;
    Ok((decision.next, decision.summary))
}
