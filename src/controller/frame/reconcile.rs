//! One reconcile of either kind, as named steps, from the object the watch delivered to its
//! next run. The kinds differ only in what [`Reconciled`] asks of them; the rest is shared:
//!
//! 1. [`reconcile`]: a span with the object key and a reconcile id; the work queue's
//!    bookkeeping; how the API server serves the object (held when it lacks fields its
//!    generation set); kube's finalizer helper (add it, or clean up on deletion); a deadline;
//!    the metrics of how it ended;
//! 2. [`apply`]: the kind prepares (a deprecated status migrated, a cache still loading), a
//!    suspended object stops, the kind decides (through the hand-off, handoff.rs), a changed
//!    status is confirmed by a fresh read (confirm.rs), then the log line, the status patch,
//!    the metrics and the events;
//! 3. [`Next`] becomes kube's `Action`, or an error for [`error_policy`].

use super::confirm::{after_refusal, confirm, Confirmation};
use super::context::Context;
pub use super::handoff::RECONCILE_DEADLINE;
use super::handoff::{Handed, BUSY_RETRY};
pub use super::reconciled::{Decision, KindHandoffs, Prepared, Reconciled, Serving};
use super::stage::Stage;
use crate::controller::object::keys::{object_key, object_labels, FINALIZER};
use crate::controller::outcome::conditions::Reason;
use crate::controller::outcome::error::{log_result, requeue_after, retry_delay, Error};
use crate::controller::outcome::next::Next;
use crate::controller::outcome::status::{is_stalled, patch_status, FluxStatus, Patched};
use crate::controller::outcome::stop::Stop;
use futures::Stream;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::finalizer::{finalizer, Event as Finalizer};
use kube::{Api, Resource, ResourceExt};
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;
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

/// One reconcile of `obj`, as kube's controller calls it.
pub async fn reconcile<K: Reconciled>(obj: Arc<K>, ctx: Arc<K::Ctx>) -> Result<Action, Error> {
    let span = reconcile_span(K::CONTROLLER, obj.as_ref());
    in_frame(obj, &ctx).instrument(span).await
}

/// The frame around [`apply`]: queue bookkeeping, how the object is served, kube's finalizer,
/// the deadline, metrics.
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
            Finalizer::Apply(obj) => match apply(obj, &key, &api, ctx).await? {
                Some(applied) => applied,
                // Decided in the background: the object is woken when that ends; the
                // deadline's requeue only in case the wake is lost. No backoff is reset.
                None => {
                    requeue = Some(RECONCILE_DEADLINE);
                    return Ok(Action::requeue(RECONCILE_DEADLINE));
                }
            },
            Finalizer::Cleanup(obj) => (obj.cleanup(&key, ctx).await?, String::new()),
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

/// Prepare, suspend, decide, log, write the status, record metrics, publish the event of a
/// transition. Returns when to run next, and the summary of what happened; `None` while the
/// decision goes on in the background ([`super::handoff`]).
async fn apply<K: Reconciled>(
    obj: Arc<K>,
    key: &str,
    api: &Api<K>,
    ctx: &Arc<K::Ctx>,
) -> Result<Option<(Next, String)>, Error> {
    let obj = match obj.prepare(key, api, ctx).await? {
        Prepared::Go(Cow::Borrowed(_)) => obj.clone(),
        Prepared::Go(Cow::Owned(rewritten)) => Arc::new(rewritten),
        Prepared::Stop(next) => return Ok(Some((next, String::new()))),
    };
    if obj.suspended() {
        tracing::info!("reconciliation is suspended for this object");
        return Ok(Some((Next::AwaitChange, String::new())));
    }
    let old = obj.status().cloned().unwrap_or_default();
    let now = ((**ctx).as_ref().clock)();
    let Some(decision) = decided(&obj, key, ctx, &old, now).await? else {
        return Ok(None);
    };
    let changes = old != decision.status;
    if confirm(obj.as_ref(), key, changes, api, &**ctx).await? == Confirmation::ReadAgain {
        return Ok(Some(read_again()));
    }
    let stalled = is_stalled(decision.status.conditions());
    log_result(&decision.next, stalled, &decision.summary, key);
    obj.decided(ctx, &decision);
    let guards = obj.write_guards();
    let written = patch_status(
        api,
        obj.as_ref(),
        &old,
        &decision.status,
        Patched::Whole,
        &guards,
    );
    if let Err(refused) = written.await {
        after_refusal(obj.as_ref(), key, refused, api, &**ctx).await?;
        return Ok(Some(read_again()));
    }
    obj.record_metrics(&old, &decision.status, &(**ctx).as_ref().metrics);
    publish(obj.as_ref(), (**ctx).as_ref(), &old, &decision.status, now).await;
    Ok(Some((decision.next, decision.summary)))
}

/// The decision, taken through the kind's hand-off within the reconcile's deadline (a panic
/// fails this object alone); `None` while it goes on in the background.
async fn decided<K: Reconciled>(
    obj: &Arc<K>,
    key: &str,
    ctx: &Arc<K::Ctx>,
    old: &K::Status,
    now: Timestamp,
) -> Result<Option<Decision<K::Status>>, Error> {
    let deciding = || {
        let (obj, key, ctx) = (obj.clone(), key.to_string(), ctx.clone());
        async move {
            // A panic in the decision fails this object alone (panic.rs), in the background too.
            let deciding = super::panic::contained(obj.decide(&key, &ctx, now));
            match tokio::time::timeout(RECONCILE_DEADLINE, deciding).await {
                Ok(Ok(decision)) => Ok(decision),
                Ok(Err(panic)) => Err(Error::Panicked(panic)),
                Err(_) => Err(Error::Deadline(RECONCILE_DEADLINE)),
            }
        }
    };
    let decision = match K::handoffs(ctx).decide(obj.as_ref(), deciding).await {
        Handed::Decided {
            outcome: Err(Error::Panicked(panic)),
            ..
        } => {
            tracing::error!(panic = %panic, "the decision panicked: this object fails, no other");
            // Ready=False `Failed`, retried with backoff, the last status kept.
            let stop = Stop::Failed(Reason::Failed, super::panic::message(&panic));
            stopped(obj.as_ref(), old, stop, now)
        }
        Handed::Decided { outcome, rerun } => with_rerun(outcome?, rerun),
        Handed::Busy(message) => {
            tracing::warn!("{message}");
            // Reconciling=True saying why it waits; tried again later, without backoff.
            let stop = Stop::Progressing {
                message,
                next: BUSY_RETRY,
                unknown: false,
            };
            stopped(obj.as_ref(), old, stop, now)
        }
        Handed::Working => {
            tracing::info!(
                "still deciding after {}s: it goes on in the background, and the object is \
                 reconciled again when it ends",
                super::handoff::HANDOFF_AFTER.as_secs()
            );
            return Ok(None);
        }
    };
    Ok(Some(decision))
}

/// The events of what changed between `old` and `new`: the kind's notes, then the transition.
/// An event that cannot be recorded is logged, not fatal.
async fn publish<K: Reconciled>(
    obj: &K,
    shared: &Context,
    old: &K::Status,
    new: &K::Status,
    now: Timestamp,
) {
    let metadata = K::event_metadata(new);
    for note in K::notes(old, new) {
        let published = shared
            .recorder
            .publish(obj, &note, None, now, metadata.clone())
            .await;
        if let Err(err) = published {
            crate::controller::events::recorder::unrecorded(&err);
        }
    }
    shared
        .recorder
        .publish_transition(obj, old.conditions(), new.conditions(), now, metadata)
        .await;
}

/// Nothing written: the object is reconciled again at once, from the fresh read its kind's
/// cache now holds (confirm.rs).
fn read_again() -> (Next, String) {
    let summary = "nothing written: decided again from the object the API server holds";
    (Next::After(std::time::Duration::ZERO), summary.into())
}

/// A decision taken from the background while something asked for another reconcile: that
/// one runs now, unless a retry with backoff comes anyway.
fn with_rerun<S>(mut decision: Decision<S>, rerun: bool) -> Decision<S> {
    if rerun && matches!(decision.next, Next::After(_) | Next::AwaitChange) {
        decision.next = Next::After(std::time::Duration::ZERO);
    }
    decision
}

/// The decision of a reconcile that stopped before its kind decided (`stop` is never held).
fn stopped<K: Reconciled>(
    obj: &K,
    old: &K::Status,
    stop: Stop,
    now: Timestamp,
) -> Decision<K::Status> {
    let (status, next, summary) = stop
        .over(obj, old, now)
        .unwrap_or_else(|| (old.clone(), Next::After(BUSY_RETRY), String::new()));
    Decision {
        status,
        next,
        summary,
        held: false,
    }
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

/// A kind's controller, driven by its work queue (frame/queue.rs): kube's controller reconciles
/// what the queue releases, `concurrency` at once, until `shutdown`; every trigger (the kind's
/// own `triggers`, what `watches` adds, a background decision's end) only queues the object.
pub fn run_queued<K, E>(
    stage: Arc<Stage<K>>,
    triggers: impl Stream<Item = Result<K, E>> + Send + 'static,
    watches: impl FnOnce(Controller<K>) -> Controller<K>,
    ctx: Arc<K::Ctx>,
    shutdown: CancellationToken,
) -> impl std::future::Future<Output = ()>
where
    K: Reconciled,
    E: std::fmt::Display + Send + 'static,
{
    let shared: &Context = (*ctx).as_ref();
    let (concurrency, queue) = (shared.settings.concurrent, K::queue(shared).clone());
    let wakes = K::handoffs(&ctx)
        .wakes()
        .expect("one controller per context");
    let controller = Controller::for_stream(futures::stream::pending(), stage.reader())
        .reconcile_on(queue.releases(concurrency, stage))
        .reconcile_on(queue.intake(triggers));
    let run = watches(controller)
        .reconcile_on(queue.intake_refs(wakes))
        .with_config(Config::default().concurrency(concurrency))
        .graceful_shutdown_on(shutdown.cancelled_owned())
        .run(reconcile_queued, error_policy_queued, ctx);
    queue.run_loop(run)
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
