//! One reconcile of either kind, from the object the watch delivered to the status patch. The
//! kinds differ only in what [`Reconciled`] asks of them; the rest is here, in the order it runs:
//!
//! 1. [`reconcile`]: a span with the object key and a reconcile id, the work queue's
//!    bookkeeping, kube's finalizer helper (add it, or clean up on deletion), a deadline, and
//!    the metrics of how it ended;
//! 2. [`apply`]: the kind's preparation, suspend, the kind's decision (a pure function of the
//!    object, the cluster, the registry, the store and the clock), the log line, the status
//!    patch (only when changed), the metrics and the event of a transition;
//! 3. [`Next`] becomes kube's `Action`, or an error for [`error_policy`].

use super::context::Context;
use super::error::{log_result, requeue_after, retry_delay, Error};
use super::keys::{object_key, object_labels, FINALIZER};
use super::next::Next;
use super::queue::WorkQueue;
use super::status::{is_stalled, patch_status, FluxStatus};
use crate::telemetry::metrics::Metrics;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{finalizer, Event as Finalizer};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

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

    /// The object is being deleted: what goes with it.
    fn cleanup(&self, ctx: &Self::Ctx) -> impl Future<Output = Result<Next, Error>> + Send;
}

/// The span of one reconcile: controller, object key and a reconcile id unique in the
/// process, so every log line and trace span of one run can be told from the next. The
/// field names are Flux's (controller-runtime's) log keys.
pub fn reconcile_span<K: Resource<DynamicType = ()>>(
    controller: &'static str,
    obj: &K,
) -> tracing::Span {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    tracing::info_span!(
        "reconcile",
        controller,
        controllerKind = %K::kind(&()),
        namespace = %obj.namespace().unwrap_or_default(),
        name = %obj.name_any(),
        reconcileID = %format!("{:08x}-{id:x}", process_tag()),
    )
}

/// A per-process tag, so ids of two replicas differ.
fn process_tag() -> u32 {
    static TAG: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *TAG.get_or_init(|| {
        use std::hash::{BuildHasher, RandomState};
        RandomState::new().hash_one(std::process::id()) as u32
    })
}

/// The longest one reconcile may hold a worker: a scan's cap, plus room for the API calls
/// around it.
pub const RECONCILE_DEADLINE: std::time::Duration =
    std::time::Duration::from_secs(super::intervals::MAX_SCAN_TIMEOUT.as_secs() + 60);

/// One reconcile of `obj`, as kube's controller calls it.
pub async fn reconcile<K: Reconciled>(obj: Arc<K>, ctx: Arc<K::Ctx>) -> Result<Action, Error> {
    let span = reconcile_span(K::CONTROLLER, obj.as_ref());
    in_frame(obj, &ctx).instrument(span).await
}

/// The frame around [`apply`]: queue bookkeeping, kube's finalizer, the deadline, metrics.
async fn in_frame<K: Reconciled>(obj: Arc<K>, ctx: &K::Ctx) -> Result<Action, Error> {
    let shared: &Context = ctx.as_ref();
    let api = Api::<K>::namespaced(shared.client.clone(), &obj.namespace().unwrap_or_default());
    let queue = K::queue(shared);
    let started = Instant::now();
    let key = object_key(obj.as_ref());
    queue.start(&key, started);
    let deleting = obj.meta().deletion_timestamp.is_some();
    let labels = object_labels(K::kind(&()), obj.as_ref());
    let mut requeue = None;
    if deleting {
        // Before the finalizer goes: once the object is gone, so are its series.
        shared.metrics.forget(&labels);
    }
    let run = finalizer(&api, FINALIZER, obj, |event| async {
        let (next, summary) = match event {
            Finalizer::Apply(obj) => apply(obj.as_ref(), &api, ctx).await?,
            Finalizer::Cleanup(obj) => (obj.cleanup(ctx).await?, String::new()),
        };
        requeue = requeue_after(next, &summary, &key, &shared.backoff)?;
        Ok(requeue.map_or_else(Action::await_change, Action::requeue))
    });
    // No reconcile keeps a worker longer than this, whatever the registry or the API server
    // do (a scan is cut at MAX_SCAN_TIMEOUT, each API read at 30 s).
    let result = match tokio::time::timeout(RECONCILE_DEADLINE, run).await {
        Ok(result) => result.map_err(|e| Error::Finalizer(Box::new(e))),
        Err(_) => Err(Error::Deadline(RECONCILE_DEADLINE)),
    };
    match &result {
        Ok(_) if deleting => queue.forget(&key),
        Ok(_) => {
            let metrics = &shared.metrics;
            metrics.observe(labels, K::CONTROLLER, "success", started);
            queue.finish(&key, requeue, Instant::now());
        }
        // The error policy decides the next run, and finishes the queue entry.
        Err(_) if deleting => {}
        Err(err) => {
            let metrics = &shared.metrics;
            metrics.observe(labels, K::CONTROLLER, err.metric_label(), started);
        }
    }
    result
}

/// Prepare, suspend, decide, log, write the status, record metrics, publish the event of a
/// transition. Returns when to run next, and the summary of what happened.
async fn apply<K: Reconciled>(
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
    patch_status(api, obj.as_ref(), &old, &decision.status).await?;
    obj.record_metrics(&decision.status, &shared.metrics);
    let metadata = K::event_metadata(&decision.status);
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

/// The error policy of either kind: when to try again, decided by the error.
pub fn error_policy<K: Reconciled>(obj: Arc<K>, err: &Error, ctx: Arc<K::Ctx>) -> Action {
    let shared: &Context = (*ctx).as_ref();
    let queue = K::queue(shared);
    let _span = reconcile_span(K::CONTROLLER, obj.as_ref()).entered();
    let key = object_key(obj.as_ref());
    let delay = retry_delay(err, &key, &shared.backoff);
    queue.retried();
    queue.finish(&key, Some(delay), Instant::now());
    Action::requeue(delay)
}
