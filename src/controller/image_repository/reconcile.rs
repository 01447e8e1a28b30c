//! What a reconcile of an ImageRepository adds to the shared one ([`Reconciled`]): the start-up
//! order before it, the scan decision ([`super::decide`]), its metrics, and the stored tags
//! removed on deletion.

use super::decide::{reconcile_repository, RepositoryEnv};
use super::running_scans::RunningScans;
use crate::api::{ImageRepository, ImageRepositoryStatus};
use crate::controller::feed::scan_order::STEP_BACK;
use crate::controller::frame::context::{ApiReader, Context};
use crate::controller::frame::queue::WorkQueue;
use crate::controller::frame::reconciled::{Decision, KindHandoffs, Prepared, Reconciled};
use crate::controller::object::keys::object_labels;
use crate::controller::outcome::error::Error;
use crate::controller::outcome::next::Next;
use crate::controller::outcome::status::is_ready;
use crate::store::RepoKey;
use crate::telemetry::metrics::Metrics;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, ResourceExt};
use std::borrow::Cow;
use std::sync::Arc;

/// What ImageRepository reconciles share: the common context and the scans in flight.
pub struct RepositoryContext {
    pub shared: Arc<Context>,
    /// Per-host and per-namespace limits, cancellation on deletion.
    pub running: RunningScans,
    /// Reconciles that went on off the workers.
    pub handoffs: KindHandoffs<ImageRepository>,
}

impl RepositoryContext {
    pub fn new(shared: Arc<Context>) -> Arc<Self> {
        let running = RunningScans::for_workers(shared.settings.concurrent);
        Arc::new(RepositoryContext {
            shared,
            running,
            handoffs: KindHandoffs::default(),
        })
    }
}

impl AsRef<Context> for RepositoryContext {
    fn as_ref(&self) -> &Context {
        &self.shared
    }
}

fn store_key(repo: &ImageRepository) -> Option<RepoKey> {
    RepoKey::new(repo.namespace().unwrap_or_default(), repo.name_any()).ok()
}

impl Reconciled for ImageRepository {
    type Status = ImageRepositoryStatus;
    type Ctx = RepositoryContext;
    const CONTROLLER: &'static str = "imagerepository";

    fn queue(ctx: &Context) -> &Arc<WorkQueue> {
        &ctx.repository_queue
    }

    fn handoffs(ctx: &RepositoryContext) -> &KindHandoffs<Self> {
        &ctx.handoffs
    }

    fn status(&self) -> Option<&ImageRepositoryStatus> {
        self.status.as_ref()
    }

    fn suspended(&self) -> bool {
        self.spec.suspend == Some(true)
    }

    async fn prepare<'a>(
        &'a self,
        _key: &str,
        _api: &Api<Self>,
        ctx: &RepositoryContext,
    ) -> Result<Prepared<'a, Self>, Error> {
        let Some(key) = store_key(self) else {
            return Ok(Prepared::Go(Cow::Borrowed(self)));
        };
        let order = &ctx.shared.scan_order;
        if self.suspended() {
            // Suspended: it will not scan, so it holds no one back.
            order.reconciled(&key);
        } else if order.should_wait(&key) {
            // Start-up: repositories that policies wait for go first.
            return Ok(Prepared::Stop(Next::After(STEP_BACK)));
        }
        Ok(Prepared::Go(Cow::Borrowed(self)))
    }

    async fn decide(
        &self,
        _key: &str,
        ctx: &RepositoryContext,
        now: Timestamp,
    ) -> Decision<ImageRepositoryStatus> {
        let shared = &ctx.shared;
        let env = RepositoryEnv {
            reader: &ApiReader(shared.client.clone()),
            registries: &shared.registries,
            store: &shared.store,
            now,
            workload_identity: shared.settings.workload_identity(),
            running: Some(&ctx.running),
        };
        reconcile_repository(self, &env).await
    }

    fn decided(&self, ctx: &RepositoryContext, decision: &Decision<ImageRepositoryStatus>) {
        let Some(key) = store_key(self).filter(|_| !decision.held) else {
            return;
        };
        ctx.shared.scan_order.reconciled(&key);
        if let Next::After(_) = decision.next {
            ctx.shared.mark_scanned(key);
        }
    }

    /// Ready, and the tags and time of the last successful scan.
    fn record_metrics(
        &self,
        _: &ImageRepositoryStatus,
        status: &ImageRepositoryStatus,
        metrics: &Metrics,
    ) {
        let labels = object_labels("ImageRepository", self);
        metrics.set_ready(
            &labels,
            is_ready(status.conditions.as_deref().unwrap_or_default()),
        );
        if let Some(scan) = &status.last_scan_result {
            let at = scan
                .scan_time
                .as_ref()
                .map_or(0.0, |t| t.0.as_second() as f64);
            metrics.set_scan(&labels.namespace, &labels.name, scan.tag_count as u64, at);
        }
    }

    /// The stored tags go with the object (docs/imagerepository.md).
    async fn cleanup(&self, key: &str, ctx: &RepositoryContext) -> Result<Next, Error> {
        let shared = &ctx.shared;
        shared.backoff.reset(key);
        shared.recorder.repeats.forget(key);
        shared.recorder.limits.forget(key);
        if let Some(store_key) = store_key(self) {
            shared.scan_order.reconciled(&store_key);
            let store = shared.store.clone();
            tokio::task::spawn_blocking(move || store.delete(&store_key)).await??;
        }
        Ok(Next::AwaitChange)
    }
}
