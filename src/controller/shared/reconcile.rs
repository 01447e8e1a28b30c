//! The frame every reconcile of either kind runs in: a span with the object key and a
//! reconcile id, the work queue's bookkeeping, kube's finalizer helper, and the metrics of
//! how it ended. The kinds supply only what happens inside (`apply` or `cleanup`), as a
//! delay until the next run.

use crate::controller::shared::context::Context;
use crate::controller::shared::error::{retry_delay, Error};
use crate::controller::shared::queue::WorkQueue;
use crate::controller::shared::status::{object_key, object_labels, FINALIZER};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{finalizer, Event as Finalizer};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

/// When the object runs again: after a delay, or when it changes.
pub type Requeue = Option<Duration>;

fn to_action(requeue: Requeue) -> Action {
    requeue.map_or_else(Action::await_change, Action::requeue)
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

/// Runs one reconcile of `obj` in the frame: `handle` gets the finalizer's event.
pub async fn reconcile_in_frame<K, F, Fut>(
    controller: &'static str,
    obj: Arc<K>,
    api: &Api<K>,
    ctx: &Context,
    queue: &WorkQueue,
    handle: F,
) -> Result<Action, Error>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + Debug
        + Send
        + Sync
        + 'static,
    F: FnOnce(Finalizer<K>) -> Fut,
    Fut: Future<Output = Result<Requeue, Error>>,
{
    let span = reconcile_span(controller, obj.as_ref());
    async move {
        let started = Instant::now();
        let key = object_key(obj.as_ref());
        queue.start(&key, started);
        let deleting = obj.meta().deletion_timestamp.is_some();
        let labels = object_labels(K::kind(&()), obj.as_ref());
        let mut requeue = None;
        if deleting {
            // Before the finalizer goes: once the object is gone, so are its series.
            ctx.metrics.forget(&labels);
        }
        let run = finalizer(api, FINALIZER, obj, |event| async {
            requeue = handle(event).await?;
            Ok(to_action(requeue))
        });
        // No reconcile keeps a worker longer than this, whatever the registry or the API
        // server do (a scan is cut at MAX_SCAN_TIMEOUT, each API read at 30 s).
        let result = match tokio::time::timeout(RECONCILE_DEADLINE, run).await {
            Ok(result) => result.map_err(|e| Error::Finalizer(Box::new(e))),
            Err(_) => Err(Error::Reconcile(format!(
                "the reconcile did not finish within {}s; it is retried",
                RECONCILE_DEADLINE.as_secs()
            ))),
        };
        match &result {
            Ok(_) if deleting => queue.forget(&key),
            Ok(_) => {
                ctx.metrics.observe(labels, controller, "success", started);
                queue.finish(&key, requeue, Instant::now());
            }
            // The error policy decides the next run, and finishes the queue entry.
            Err(_) if deleting => {}
            Err(err) => ctx
                .metrics
                .observe(labels, controller, err.metric_label(), started),
        }
        result
    }
    .instrument(span)
    .await
}

/// The longest one reconcile may hold a worker: a scan's cap, plus room for the API calls
/// around it.
pub const RECONCILE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(
    crate::controller::shared::intervals::MAX_SCAN_TIMEOUT.as_secs() + 60,
);

/// The error policy of either kind: when to try again, decided by the error's kind.
pub fn retry<K: Resource<DynamicType = ()>>(
    controller: &'static str,
    obj: &K,
    err: &Error,
    ctx: &Context,
    queue: &WorkQueue,
) -> Action {
    let _span = reconcile_span(controller, obj).entered();
    let key = object_key(obj);
    let delay = retry_delay(err, &key, &ctx.backoff);
    queue.retried();
    queue.finish(&key, Some(delay), Instant::now());
    Action::requeue(delay)
}
