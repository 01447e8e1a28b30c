//! The body of a reconcile of either kind: what [`Reconciled`] asks of the kind (prepare,
//! decide, metrics, event metadata), then what it comes to: the log line, the status patch
//! (only when changed), the metrics and the event of a transition.

use super::conditions::{Conditions, Reason};
use super::context::Context;
use super::error::{log_result, Error};
use super::events::EventSpec;
use super::handoff::{Handed, Handoffs, BUSY_RETRY, RECONCILE_DEADLINE};
use super::next::Next;
use super::queue::WorkQueue;
use super::status::{finish_status, is_stalled, patch_status, FluxStatus, Patched};
use super::summary::Outcome;
use crate::telemetry::metrics::Metrics;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

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

/// A kind's decisions that went on in the background, each with its deadline's outcome.
pub type KindHandoffs<K> = Handoffs<K, Result<Decision<<K as Reconciled>::Status>, Error>>;

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
    /// The kind's decisions that went on in the background ([`Handoffs`]).
    fn handoffs(ctx: &Self::Ctx) -> &KindHandoffs<Self>;
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
/// transition. Returns when to run next, and the summary of what happened; `None` while the
/// decision goes on in the background ([`super::handoff`]).
pub(super) async fn apply<K: Reconciled>(
    obj: Arc<K>,
    api: &Api<K>,
    ctx: &Arc<K::Ctx>,
) -> Result<Option<(Next, String)>, Error> {
    let obj = match obj.prepare(api, ctx).await? {
        Prepared::Go(Cow::Borrowed(_)) => obj.clone(),
        Prepared::Go(Cow::Owned(rewritten)) => Arc::new(rewritten),
        Prepared::Stop(next) => return Ok(Some((next, String::new()))),
    };
    if obj.suspended() {
        tracing::info!("reconciliation is suspended for this object");
        return Ok(Some((Next::AwaitChange, String::new())));
    }
    let shared: &Context = (**ctx).as_ref();
    let old = obj.status().cloned().unwrap_or_default();
    let now = (shared.clock)();
    let deciding = || {
        let (obj, ctx) = (obj.clone(), ctx.clone());
        async move {
            // A panic in the decision fails this object alone (panic.rs), in the background too.
            let deciding = super::panic::contained(obj.decide(&ctx, now));
            match tokio::time::timeout(RECONCILE_DEADLINE, deciding).await {
                Ok(Ok(decision)) => Ok(decision),
                Ok(Err(panic)) => Err(Error::Panicked(panic)),
                Err(_) => Err(Error::Deadline(RECONCILE_DEADLINE)),
            }
        }
    };
    let handed = K::handoffs(ctx).decide(obj.as_ref(), deciding).await;
    let decision = match handed {
        Handed::Decided {
            outcome: Err(Error::Panicked(panic)),
            ..
        } => {
            tracing::error!(panic = %panic, "the decision panicked: this object fails, no other");
            let (status, next, summary) = super::panic::failed(obj.as_ref(), &old, &panic, now);
            Decision {
                status,
                next,
                summary,
                held: false,
            }
        }
        Handed::Decided { outcome, rerun } => with_rerun(outcome?, rerun),
        Handed::Busy(message) => {
            tracing::warn!("{message}");
            busy(obj.as_ref(), &old, message, now)
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
    Ok(Some((decision.next, decision.summary)))
}

/// A decision taken from the background while something asked for another reconcile: that
/// one runs now, unless a retry with backoff comes anyway.
fn with_rerun<S>(mut decision: Decision<S>, rerun: bool) -> Decision<S> {
    if rerun && matches!(decision.next, Next::After(_) | Next::AwaitChange) {
        decision.next = Next::After(std::time::Duration::ZERO);
    }
    decision
}

/// What a reconcile whose decision found no room in the background writes: its last status
/// with Reconciling=True saying why it waits; tried again after [`BUSY_RETRY`], no backoff.
fn busy<K: Reconciled>(
    obj: &K,
    old: &K::Status,
    message: String,
    now: Timestamp,
) -> Decision<K::Status> {
    let generation = obj.meta().generation.unwrap_or(0);
    let mut list = old.conditions().to_vec();
    Conditions::new(&mut list, generation, now)
        .mark_reconciling(Reason::ProgressingWithRetry, &message);
    let mut status = old.clone();
    finish_status(obj, old, &mut status, list, &Outcome::Waiting, now);
    Decision {
        status,
        next: Next::After(BUSY_RETRY),
        summary: message,
        held: false,
    }
}
