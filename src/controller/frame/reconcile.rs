//! One reconcile of either kind, from the object the watch delivered to its next run. The
//! kinds differ only in what [`Reconciled`] asks of them; the rest is shared, in this order:
//!
//! 1. [`reconcile`]: a span with the object key and a reconcile id, the work queue's
//!    bookkeeping, kube's finalizer helper (add it, or clean up on deletion), a deadline, and
//!    the metrics of how it ended;
//! 2. [`apply`](super::apply::apply): what the kind does ([`Reconciled`]) and what it comes to:
//!    the status patch, the metrics, the event;
//! 3. [`Next`](crate::controller::outcome::next::Next) becomes kube's `Action`, or an error
//!    for [`error_policy`].

use super::apply::{apply, Reconciled, Serving};
use super::context::Context;
use crate::controller::object::keys::{object_key, object_labels, FINALIZER};
use crate::controller::outcome::error::{requeue_after, retry_delay, Error};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{finalizer, Event as Finalizer};
use kube::{Api, Resource, ResourceExt};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

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

pub use super::handoff::RECONCILE_DEADLINE;

/// One reconcile of `obj`, as kube's controller calls it.
pub async fn reconcile<K: Reconciled>(obj: Arc<K>, ctx: Arc<K::Ctx>) -> Result<Action, Error> {
    let span = reconcile_span(K::CONTROLLER, obj.as_ref());
    in_frame(obj, &ctx).instrument(span).await
}

/// The frame around [`apply`]: queue bookkeeping, kube's finalizer, the deadline, metrics.
async fn in_frame<K: Reconciled>(obj: Arc<K>, ctx: &Arc<K::Ctx>) -> Result<Action, Error> {
    let shared: &Context = (**ctx).as_ref();
    let api = Api::<K>::namespaced(shared.client.clone(), &obj.namespace().unwrap_or_default());
    let queue = K::queue(shared);
    let started = Instant::now();
    let key = object_key(obj.as_ref());
    queue.start(&key, started);
    let deleting = obj.meta().deletion_timestamp.is_some();
    let labels = object_labels(K::kind(&()), obj.as_ref());
    let mut requeue = None;
    if !deleting && held_as_served(obj.as_ref(), ctx).await {
        queue.finish(&key, None, Instant::now());
        return Ok(Action::await_change());
    }
    if deleting {
        // Before the finalizer goes: once the object is gone, so are its series, and its
        // background work stops.
        shared.metrics.forget(&labels);
        if K::handoffs(ctx).cancel(&key) {
            tracing::info!("deleted while deciding in the background: that work is cancelled");
        }
    }
    let run = finalizer(&api, FINALIZER, obj, |event| async {
        let (next, summary) = match event {
            Finalizer::Apply(obj) => match apply(obj, &api, ctx).await? {
                Some(applied) => applied,
                // Decided in the background: the object is woken when that ends; the
                // deadline's requeue only in case the wake is lost. No backoff is reset.
                None => {
                    requeue = Some(RECONCILE_DEADLINE);
                    return Ok(Action::requeue(RECONCILE_DEADLINE));
                }
            },
            Finalizer::Cleanup(obj) => (obj.cleanup(ctx).await?, String::new()),
        };
        requeue = requeue_after(next, &summary, &key, &shared.backoff)?;
        Ok(requeue.map_or_else(Action::await_change, Action::requeue))
    });
    // No reconcile keeps a worker longer than this, whatever the registry or the API server
    // do (a scan is cut at MAX_SCAN_TIMEOUT, each API read at 30 s).
    // A panic anywhere in the frame fails this reconcile alone (panic.rs): kube's controller
    // polls every reconcile in one stream, which a panic would end for every object.
    let run = super::panic::contained(run);
    let result = match tokio::time::timeout(RECONCILE_DEADLINE, run).await {
        Ok(Ok(result)) => result.map_err(|e| Error::Finalizer(Box::new(e))),
        Ok(Err(panic)) => {
            tracing::error!(panic = %panic, "the reconcile panicked: this object fails, no other");
            Err(Error::Panicked(panic))
        }
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

/// Whether the API server serves `obj` without fields it held (controller/schema/): then
/// nothing is written, not even the finalizer, which would store it pruned for good; its
/// Event says why, and it is reconciled again when it arrives whole (its spec is part of its
/// trigger). An object served whole is told, once, when the schema lacks fields.
async fn held_as_served<K: Reconciled>(obj: &K, ctx: &Arc<K::Ctx>) -> bool {
    let shared: &Context = (**ctx).as_ref();
    let (event, held) = match obj.serving(ctx) {
        Serving::Whole => return false,
        Serving::Told(event) => (event, false),
        Serving::Hidden(event) => {
            shared.metrics.gates_hidden();
            (event, true)
        }
        Serving::Inconsistent(event) => (event, true),
    };
    if held {
        tracing::warn!("{}", event.message);
    }
    let now = (shared.clock)();
    let published = shared
        .recorder
        .publish(obj, &event, None, now, Default::default())
        .await;
    if let Err(err) = published {
        crate::controller::events::recorder::unrecorded(&err);
    }
    held
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

/// [`reconcile`] as kube's controller runs it: the next run already waits in the work queue
/// (`queue.finish`), which releases it when due, so kube is told only to await changes; its
/// scheduler would keep the object in tables that never shrink (frame/queue.rs).
pub async fn reconcile_queued<K: Reconciled>(
    obj: Arc<K>,
    ctx: Arc<K::Ctx>,
) -> Result<Action, Error> {
    reconcile(obj, ctx).await.map(|_| Action::await_change())
}

/// [`error_policy`] as kube's controller runs it: the retry waits in the work queue.
pub fn error_policy_queued<K: Reconciled>(obj: Arc<K>, err: &Error, ctx: Arc<K::Ctx>) -> Action {
    error_policy(obj, err, ctx);
    Action::await_change()
}
