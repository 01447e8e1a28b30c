//! The ImageRepository controller: kube plumbing around [`reconcile_repository`]. It reads as
//! Flux's outer flow (flux-compat.md §3.2): finalizer, deletion, suspend, then the reconcile;
//! the status is written only when it changed, an event only on a transition.

use super::context::{ApiReader, Context};
use super::error::{next_action, retry_action, Error};
use super::repository::{reconcile_repository, Next, RepositoryEnv};
use super::scan_order::STEP_BACK;
use super::status::{
    object_key, object_labels, patch_status, suspended_status, trigger_hash, FINALIZER,
};
use crate::api::ImageRepository;
use crate::http::ReadyPart;
use crate::store::RepoKey;
use futures::StreamExt;
use futures::TryStreamExt;
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::finalizer::{finalizer, Event as Finalizer};
use kube::runtime::reflector;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Resource, ResourceExt};
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// One reconcile: finalizer first, then apply or clean up. Every log line of it carries the
/// object's kind, namespace and name.
pub async fn reconcile(repo: Arc<ImageRepository>, ctx: Arc<Context>) -> Result<Action, Error> {
    let span = reconcile_span(&repo);
    reconcile_object(repo, ctx).instrument(span).await
}

async fn reconcile_object(repo: Arc<ImageRepository>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let namespace = repo.namespace().unwrap_or_default();
    let api = Api::<ImageRepository>::namespaced(ctx.client.clone(), &namespace);
    let deleting = repo.meta().deletion_timestamp.is_some();
    let labels = object_labels("ImageRepository", repo.as_ref());
    let result = finalizer(&api, FINALIZER, repo, |event| async {
        match event {
            Finalizer::Apply(repo) => apply(&repo, &api, &ctx).await,
            Finalizer::Cleanup(repo) => cleanup(&repo, &ctx).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)));
    if deleting {
        ctx.metrics.forget(&labels);
    } else {
        let outcome = result
            .as_ref()
            .map_or_else(|e| e.metric_label(), |_| "success");
        ctx.metrics
            .observe(labels, "imagerepository", outcome, started);
    }
    result
}

/// Suspend, reconcile, write the status, send the event, decide the next run.
async fn apply(
    repo: &ImageRepository,
    api: &Api<ImageRepository>,
    ctx: &Context,
) -> Result<Action, Error> {
    let old = repo.status.clone().unwrap_or_default();
    if repo.spec.suspend == Some(true) {
        tracing::info!("reconciliation is suspended for this object");
        patch_status(api, repo, &old, &suspended_status(repo, &old)).await?;
        return Ok(Action::await_change());
    }
    let store_key = RepoKey::new(repo.namespace().unwrap_or_default(), repo.name_any()).ok();
    if store_key
        .as_ref()
        .is_some_and(|k| ctx.scan_order.should_wait(k))
    {
        // Start-up: repositories that policies wait for go first.
        return Ok(Action::requeue(STEP_BACK));
    }
    let now = (ctx.clock)();
    let env = RepositoryEnv {
        reader: &ApiReader(ctx.client.clone()),
        registries: &ctx.registries,
        store: &ctx.store,
        now,
        object_level_workload_identity: ctx.settings.object_level_workload_identity,
    };
    let result = reconcile_repository(repo, &env).await;
    tracing::info!("{}", result.summary);
    if let Some(k) = &store_key {
        ctx.scan_order.reconciled(k);
    }
    patch_status(api, repo, &old, &result.status).await?;
    ctx.recorder
        .publish_transition(
            repo,
            old.conditions.as_deref().unwrap_or_default(),
            result.status.conditions.as_deref().unwrap_or_default(),
            now,
            Default::default(),
        )
        .await;
    if let (Next::After(_), Some(scanned)) = (&result.next, store_key) {
        ctx.mark_scanned(scanned);
    }
    next_action(result.next, result.summary, &object_key(repo), &ctx.backoff)
}

/// Deletion: the stored tags go with the object (§3.10).
async fn cleanup(repo: &ImageRepository, ctx: &Context) -> Result<Action, Error> {
    let key = object_key(repo);
    ctx.backoff.reset(&key);
    ctx.recorder.repeats.forget(&key);
    if let Ok(store_key) = RepoKey::new(repo.namespace().unwrap_or_default(), repo.name_any()) {
        let store = ctx.store.clone();
        tokio::task::spawn_blocking(move || store.delete(&store_key))
            .await
            .map_err(|e| Error::Store(e.to_string()))?
            .map_err(|e| Error::Store(e.to_string()))?;
    }
    Ok(Action::await_change())
}

/// When to try again after an error: decided by its kind.
pub fn error_policy(repo: Arc<ImageRepository>, err: &Error, ctx: Arc<Context>) -> Action {
    let _span = reconcile_span(&repo).entered();
    retry_action(err, &object_key(repo.as_ref()), &ctx.backoff)
}

fn reconcile_span(repo: &ImageRepository) -> tracing::Span {
    tracing::info_span!(
        "reconcile",
        controller = "imagerepository",
        namespace = %repo.namespace().unwrap_or_default(),
        name = %repo.name_any(),
    )
}

/// The running controller. `synced` is marked once the initial list is in the cache.
// (Not `Store::wait_until_ready`: its one-shot keeps only the last waiter's waker, and the
// controller's runner waits on it too.)
pub fn controller(
    api: Api<ImageRepository>,
    watch: watcher::Config,
    ctx: Arc<Context>,
    concurrency: u16,
    shutdown: CancellationToken,
    synced: ReadyPart,
) -> impl std::future::Future<Output = ()> {
    let (reader, writer) = reflector::store();
    let triggers = watcher(api, watch)
        .default_backoff()
        .reflect(writer)
        .inspect_ok(move |event| {
            if matches!(event, watcher::Event::InitDone) {
                synced.set_ready();
            }
        })
        .applied_objects()
        .predicate_filter(trigger_hash, Default::default());
    Controller::for_stream(triggers, reader)
        .with_config(Config::default().concurrency(concurrency))
        .graceful_shutdown_on(shutdown.cancelled_owned())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "reconcile ended with an error");
            }
        })
}
