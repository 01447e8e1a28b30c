//! The ImageRepository controller: kube plumbing around [`reconcile_repository`]. It reads as
//! Flux's outer flow (docs/imagerepository.md): finalizer, deletion, suspend, then the reconcile;
//! the status is written only when it changed, an event only on a transition.

pub mod decide;
pub mod feed;
pub mod should_scan;

use crate::api::ImageRepository;
use crate::controller::image_repository::decide::{reconcile_repository, Next, RepositoryEnv};
use crate::controller::image_repository::feed::FeedSource;
use crate::controller::shared::context::{ApiReader, Context};
use crate::controller::shared::error::{log_result, next_requeue, Error};
use crate::controller::shared::reconcile::{reconcile_in_frame, retry, Requeue};
use crate::controller::shared::scan_order::STEP_BACK;
use crate::controller::shared::slim::slim;
use crate::controller::shared::status::{
    is_ready, is_stalled, object_key, object_labels, patch_status, trigger_hash,
};
use crate::runtime::http::ReadyPart;
use crate::store::RepoKey;
use futures::TryStreamExt;
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::finalizer::Event as Finalizer;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

const CONTROLLER: &str = "imagerepository";

/// One reconcile: finalizer first, then apply or clean up.
pub async fn reconcile(repo: Arc<ImageRepository>, ctx: Arc<Context>) -> Result<Action, Error> {
    let api = Api::<ImageRepository>::namespaced(
        ctx.client.clone(),
        &repo.namespace().unwrap_or_default(),
    );
    reconcile_in_frame(
        CONTROLLER,
        repo,
        &api,
        &ctx,
        &ctx.repository_queue,
        |event| async {
            match event {
                Finalizer::Apply(repo) => apply(&repo, &api, &ctx).await,
                Finalizer::Cleanup(repo) => cleanup(&repo, &ctx).await,
            }
        },
    )
    .await
}

/// Suspend, reconcile, write the status, send the event, decide the next run.
async fn apply(
    repo: &ImageRepository,
    api: &Api<ImageRepository>,
    ctx: &Context,
) -> Result<Requeue, Error> {
    let old = repo.status.clone().unwrap_or_default();
    let store_key = RepoKey::new(repo.namespace().unwrap_or_default(), repo.name_any()).ok();
    // Suspend returns before anything else, as Flux does: not even a reconcile request is
    // recorded.
    if repo.spec.suspend == Some(true) {
        tracing::info!("reconciliation is suspended for this object");
        if let Some(k) = &store_key {
            ctx.scan_order.reconciled(k);
        }
        return Ok(None);
    }
    if store_key
        .as_ref()
        .is_some_and(|k| ctx.scan_order.should_wait(k))
    {
        // Start-up: repositories that policies wait for go first.
        return Ok(Some(STEP_BACK));
    }
    let now = (ctx.clock)();
    let env = RepositoryEnv {
        reader: &ApiReader(ctx.client.clone()),
        registries: &ctx.registries,
        store: &ctx.store,
        now,
        workload_identity: ctx.settings.workload_identity(),
        running: Some(&ctx.running),
    };
    let result = reconcile_repository(repo, &env).await;
    let stalled = is_stalled(result.status.conditions.as_deref().unwrap_or_default());
    log_result(&result.next, stalled, &result.summary);
    if let Some(k) = store_key.as_ref().filter(|_| !result.held) {
        ctx.scan_order.reconciled(k);
    }
    patch_status(api, repo, &old, &result.status).await?;
    record_metrics(repo, &result.status, ctx);
    ctx.recorder
        .publish_transition(
            repo,
            old.conditions.as_deref().unwrap_or_default(),
            result.status.conditions.as_deref().unwrap_or_default(),
            now,
            Default::default(),
        )
        .await;
    if let (Next::After(_), Some(scanned), false) = (&result.next, store_key, result.held) {
        ctx.mark_scanned(scanned);
    }
    next_requeue(result.next, result.summary, &object_key(repo), &ctx.backoff)
}

/// Ready, and the tags and time of the last successful scan.
fn record_metrics(
    repo: &ImageRepository,
    status: &crate::api::ImageRepositoryStatus,
    ctx: &Context,
) {
    let labels = object_labels("ImageRepository", repo);
    ctx.metrics.set_ready(
        &labels,
        is_ready(status.conditions.as_deref().unwrap_or_default()),
    );
    if let Some(scan) = &status.last_scan_result {
        let at = scan
            .scan_time
            .as_ref()
            .map_or(0.0, |t| t.0.as_second() as f64);
        ctx.metrics
            .set_scan(&labels.namespace, &labels.name, scan.tag_count as u64, at);
    }
}

/// Deletion: the stored tags go with the object (§3.10).
async fn cleanup(repo: &ImageRepository, ctx: &Context) -> Result<Requeue, Error> {
    let key = object_key(repo);
    ctx.backoff.reset(&key);
    ctx.recorder.repeats.forget(&key);
    if let Ok(store_key) = RepoKey::new(repo.namespace().unwrap_or_default(), repo.name_any()) {
        ctx.scan_order.reconciled(&store_key);
        let store = ctx.store.clone();
        tokio::task::spawn_blocking(move || store.delete(&store_key))
            .await
            .map_err(|e| Error::Store(e.to_string()))?
            .map_err(|e| Error::Store(e.to_string()))?;
    }
    Ok(None)
}

/// When to try again after an error: decided by its kind.
pub fn error_policy(repo: Arc<ImageRepository>, err: &Error, ctx: Arc<Context>) -> Action {
    retry(CONTROLLER, repo.as_ref(), err, &ctx, &ctx.repository_queue)
}

/// The running controller. `synced` is marked once the initial list is in the cache.
// (Not `Store::wait_until_ready`: its one-shot keeps only the last waiter's waker, and the
// controller's runner waits on it too.)
pub fn controller(
    api: Api<ImageRepository>,
    feed: FeedSource,
    watch: watcher::Config,
    ctx: Arc<Context>,
    concurrency: u16,
    shutdown: CancellationToken,
    synced: ReadyPart,
) -> impl std::future::Future<Output = ()> {
    let (reader, writer, forward) = feed.split();
    let queue = ctx.repository_queue.clone();
    let enqueued = queue.clone();
    let running = ctx.running.clone();
    let (order, cache) = (ctx.clone(), reader.clone());
    let triggers = watcher(api, watch)
        .default_backoff()
        .modify(slim)
        .reflect(writer)
        .inspect_ok(move |event| {
            forward.event(event);
            if matches!(event, watcher::Event::InitDone) {
                // The start-up order waits only for repositories that exist and will scan.
                order.scan_order.existing(
                    cache
                        .state()
                        .iter()
                        .filter(|r| r.spec.suspend != Some(true))
                        .filter_map(|r| {
                            RepoKey::new(r.namespace().unwrap_or_default(), r.name_any()).ok()
                        }),
                );
                synced.set_ready();
            }
        })
        .applied_objects()
        // Deleting an object cancels its running scan: the finalizer need not wait for it.
        .inspect_ok(move |repo| {
            let key = RepoKey::new(repo.namespace().unwrap_or_default(), repo.name_any());
            let deleting = repo.metadata.deletion_timestamp.is_some();
            if deleting && key.is_ok_and(|k| running.cancel(&k)) {
                tracing::info!(object = %object_key(repo), "deleted while scanning: scan cancelled");
            }
        })
        .predicate_filter(trigger_hash, Default::default())
        .inspect_ok(move |repo| enqueued.add(object_key(repo), Instant::now()));
    let run = Controller::for_stream(triggers, reader)
        .with_config(Config::default().concurrency(concurrency))
        .graceful_shutdown_on(shutdown.cancelled_owned())
        .run(reconcile, error_policy, ctx);
    queue.run_loop(run)
}
