//! What the leader runs: both controllers, the storage GC and the served schema's monitor,
//! each on a task of its own, until shutdown or the Lease is lost, or until one of them cannot
//! go on (the process then exits non-zero so that kubelet restarts it).

use super::flags::RunArgs;
use crate::api::{ImagePolicy, ImageRepository};
use crate::controller::feed::repository_feed::repository_feed;
use crate::controller::frame::wiring::{watch_config, Wiring};
use crate::controller::schema::monitor::follow;
use crate::controller::{image_policy, image_repository, Context};
use crate::runtime::gc;
use crate::runtime::http::Readiness;
use crate::runtime::leader::Ended;
use k8s_openapi::api::core::v1::Secret;
use kube::core::PartialObjectMeta;
use kube::Api;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// What the leader works on.
pub(super) struct Work<'a> {
    pub(super) ctx: &'a Arc<Context>,
    pub(super) repositories: Api<ImageRepository>,
    pub(super) policies: Api<ImagePolicy>,
    /// The Secrets policies trust, watched (metadata only) in the policies' scope.
    pub(super) secrets: Api<PartialObjectMeta<Secret>>,
    pub(super) readiness: &'a Readiness,
}

/// Runs both controllers and the storage GC until `holding` ends (shutdown, or the Lease
/// lost), then gives in-flight reconciles up to `--graceful-shutdown-timeout` to finish.
pub(super) async fn run_as_leader(
    args: &RunArgs,
    work: Work<'_>,
    shutdown: &CancellationToken,
    holding: impl std::future::Future<Output = Ended>,
) -> Ended {
    let token = shutdown.child_token();
    let readiness = work.readiness;
    let mut workers = spawn_workers(args, work, &token);
    tracing::info!(storage = %args.storage_path, selector = %args.watch_label_selector, "image-reflector controller started");
    // Once settled, the heap's free pages go back to the kernel (runtime/heap.rs).
    let giving_back = tokio::spawn(crate::runtime::heap::trim_when_settled(readiness.clone()));
    let ended = until_ended(holding, &mut workers, &token).await;
    match &ended {
        Ended::Lost => tracing::error!("leader election lost: stopping reconciles"),
        Ended::Failed(why) => tracing::error!("{why}: exiting so that the Pod is restarted"),
        Ended::Cancelled => tracing::info!("shutting down: finishing in-flight reconciles"),
    }
    token.cancel();
    giving_back.abort();
    let started = Instant::now();
    let finished = async { while workers.join_next().await.is_some() {} };
    if tokio::time::timeout(args.graceful_shutdown_timeout, finished)
        .await
        .is_err()
    {
        tracing::warn!(
            waited_seconds = started.elapsed().as_secs(),
            "in-flight reconciles did not finish within --graceful-shutdown-timeout; exiting"
        );
    }
    ended
}

/// A worker's name, and whether its end before shutdown is fatal.
type Worker = (&'static str, bool);

/// Both controllers, the storage GC and the served schema's monitor, each on a task of its
/// own: a controller whose loop ends before shutdown (or a panic that escaped every
/// reconcile's own containment) ends the process at once, non-zero, so that kubelet restarts
/// it, instead of a process that answers /healthz and reconciles nothing. The GC may end by
/// itself (`--gc-interval=0`).
fn spawn_workers(
    args: &RunArgs,
    Work {
        ctx,
        repositories,
        policies,
        secrets,
        readiness,
    }: Work<'_>,
    token: &CancellationToken,
) -> tokio::task::JoinSet<Worker> {
    use futures::FutureExt;
    // Both kinds' watches: filtered by `--watch-label-selector` (sharding).
    let watch = watch_config(&args.watch_label_selector);
    // One ImageRepository watch and cache for both controllers.
    let (repository_source, repository_feed) = repository_feed();
    let wiring = |watch| Wiring {
        watch,
        ctx: ctx.clone(),
        shutdown: token.clone(),
        synced: readiness.part(),
    };
    let gc = gc::run(
        (repositories.clone(), args.watch_label_selector.clone()),
        Box::new(repository_feed.cached_keys()),
        ctx.store.clone(),
        Duration::from_secs(u64::from(args.gc_interval) * 60),
        token.clone(),
    );
    let policy_controller =
        image_policy::controller(policies, secrets, repository_feed, wiring(watch.clone()));
    let repository_controller =
        image_repository::controller(repositories, repository_source, wiring(watch));
    let mut workers = tokio::task::JoinSet::new();
    let ends = |name: &'static str, fatal: bool| move |_| (name, fatal);
    workers.spawn(repository_controller.map(ends("the ImageRepository controller", true)));
    workers.spawn(policy_controller.map(ends("the ImagePolicy controller", true)));
    workers.spawn(gc.map(ends("the storage GC", false)));
    // The schema the API server serves for our kinds, followed (controller/schema/).
    let schema = ctx.schema.clone();
    readiness.set_detail(Arc::new(move || schema.detail()));
    let (schema, client, metrics) = (ctx.schema.clone(), ctx.client.clone(), ctx.metrics.clone());
    let (every, token) = (args.served_schema_interval, token.clone());
    let following = async move { follow(&schema, client, &metrics, every, token).await };
    workers.spawn(following.map(ends("the served schema's monitor", false)));
    workers
}

/// Leads until `holding` ends (shutdown, or the Lease lost) or a fatal worker ends first.
async fn until_ended(
    holding: impl std::future::Future<Output = Ended>,
    workers: &mut tokio::task::JoinSet<Worker>,
    token: &CancellationToken,
) -> Ended {
    tokio::pin!(holding);
    loop {
        tokio::select! {
            ended = &mut holding => return ended,
            Some(joined) = workers.join_next() => match joined {
                // Shutdown cancels the token as it ends `holding`: the loops end first then.
                Ok((name, fatal)) => {
                    if fatal && !token.is_cancelled() {
                        return Ended::Failed(format!("{name} stopped"));
                    }
                }
                Err(err) if err.is_panic() => {
                    let panic = crate::controller::frame::panic::describe(err.into_panic().as_ref());
                    return Ended::Failed(format!("a controller task panicked: {panic}"));
                }
                Err(err) => return Ended::Failed(format!("a controller task ended: {err}")),
            },
        }
    }
}
