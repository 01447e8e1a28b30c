//! What a reconcile asks of each kind ([`Reconciled`]), and what its decision comes to
//! ([`Decision`]): the contract between the shared frame (reconcile.rs) and the
//! ImageRepository and ImagePolicy reconcilers.

use super::context::Context;
use super::handoff::Handoffs;
use super::queue::WorkQueue;
use crate::controller::events::transition::EventSpec;
use crate::controller::outcome::error::Error;
use crate::controller::outcome::next::Next;
use crate::controller::outcome::status::FluxStatus;
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

/// How the API server serves an object ([`Reconciled::serving`]).
#[derive(Debug, PartialEq)]
pub enum Serving {
    Whole,
    /// Without fields it held at this generation: nothing of it is written, the event says
    /// why, and it is reconciled again when it arrives otherwise.
    Hidden(EventSpec),
    /// Without fields its own gates annotation says it held, which the served schema has: the
    /// annotation, not the cluster's CRDs, is wrong (written by hand). Held as [`Hidden`]
    /// (nothing written), the event naming the annotation; no schema metric counts it.
    ///
    /// [`Hidden`]: Serving::Hidden
    Inconsistent(EventSpec),
    /// Whole, but the served schema lacks fields: the event says so (once), and it goes on.
    Told(EventSpec),
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
    + kube::core::object::HasSpec<Spec: Serialize>
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

    fn queue(ctx: &Context) -> &Arc<WorkQueue>;
    /// The kind's decisions that went on in the background ([`Handoffs`]).
    fn handoffs(ctx: &Self::Ctx) -> &KindHandoffs<Self>;
    fn status(&self) -> Option<&Self::Status>;
    fn suspended(&self) -> bool;

    /// Before anything else, suspend included: the kind may rewrite the object (an
    /// ImagePolicy migrates deprecated status fields) or stop until later (its cache is still
    /// loading, the start-up order holds it back).
    fn prepare<'a>(
        &'a self,
        key: &str,
        api: &Api<Self>,
        ctx: &Self::Ctx,
    ) -> impl Future<Output = Result<Prepared<'a, Self>, Error>> + Send;

    /// The reconcile proper: what the status should be and when to run again. (`key`, here
    /// and in the other steps, is the object's `Kind/namespace/name`, made once a reconcile.)
    fn decide(
        &self,
        key: &str,
        ctx: &Self::Ctx,
        now: Timestamp,
    ) -> impl Future<Output = Decision<Self::Status>> + Send;

    /// Whether each status write is confirmed first, once per spec, by a fresh read, and
    /// carries [`Reconciled::write_guards`] (confirm.rs): what downstream tooling acts on, and
    /// gates a served schema may prune.
    const CONFIRMS_SPEC: bool = false;

    /// JSON patch tests every status write of this object carries; none: a merge patch.
    fn write_guards(&self) -> Vec<serde_json::Value> {
        Vec::new()
    }

    /// A fresh read of the object, which its kind's cache takes (confirm.rs).
    fn refreshed(_ctx: &Self::Ctx, _fresh: Self) {}

    /// How the API server serves this object (controller/schema/): before anything is
    /// written, even the finalizer.
    fn serving(&self, _ctx: &Self::Ctx) -> Serving {
        Serving::Whole
    }

    /// Bookkeeping once decided, before the status is written.
    fn decided(&self, _ctx: &Self::Ctx, _decision: &Decision<Self::Status>) {}

    /// The object's metric series after this reconcile, which moved its status from `old`.
    fn record_metrics(&self, old: &Self::Status, status: &Self::Status, metrics: &Metrics);

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
    fn cleanup(
        &self,
        key: &str,
        ctx: &Self::Ctx,
    ) -> impl Future<Output = Result<Next, Error>> + Send;
}
