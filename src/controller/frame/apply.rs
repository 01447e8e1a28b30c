//! The body of a reconcile of either kind: what [`Reconciled`] asks of the kind (prepare,
//! decide, metrics, event metadata), then what it comes to: the log line, the status patch
//! (only when changed), the metrics and the event of a transition.

use super::confirm::{after_refusal, confirm, Confirmation};
use super::context::Context;
use super::handoff::{Handed, BUSY_RETRY, RECONCILE_DEADLINE};
use crate::controller::outcome::conditions::Reason;
use crate::controller::outcome::error::{log_result, Error};
use crate::controller::outcome::next::Next;
use crate::controller::outcome::status::{is_stalled, patch_status, FluxStatus, Patched};
use crate::controller::outcome::stop::Stop;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use std::borrow::Cow;
use std::sync::Arc;

pub use super::reconciled::{Decision, KindHandoffs, Prepared, Reconciled, Serving};

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
    let old = obj.status().cloned().unwrap_or_default();
    let now = ((**ctx).as_ref().clock)();
    let Some(decision) = decided(&obj, ctx, &old, now).await? else {
        return Ok(None);
    };
    let changes = old != decision.status;
    if confirm(obj.as_ref(), changes, api, &**ctx).await? == Confirmation::ReadAgain {
        return Ok(Some(read_again()));
    }
    let stalled = is_stalled(decision.status.conditions());
    let key = crate::controller::object::keys::object_key(obj.as_ref());
    log_result(&decision.next, stalled, &decision.summary, &key);
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
        after_refusal(obj.as_ref(), refused, api, &**ctx).await?;
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
    ctx: &Arc<K::Ctx>,
    old: &K::Status,
    now: Timestamp,
) -> Result<Option<Decision<K::Status>>, Error> {
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
