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
use kube::Api;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// What the leader works on.
pub(super) struct Work<'a> {
    pub(super) ctx: &'a Arc<Context>,
    pub(super) repositories: Api<ImageRepository>,
    pub(super) policies: Api<ImagePolicy>,
    pub(super) readiness: &'a Readiness,
}

/// Runs both controllers and the storage GC until `holding` ends (shutdown, or the Lease
/// lost), then gives in-flight reconciles up to `--graceful-shutdown-timeout` to finish.
pub(super) async fn run_as_leader(
    args: &RunArgs,
    Work {
        ctx,
        repositories,
        policies,
        readiness,
    }: Work<'_>,
    shutdown: &CancellationToken,
    holding: impl std::future::Future<Output = Ended>,
) -> Ended {
    let work = shutdown.child_token();
    // Both kinds' watches: filtered by `--watch-label-selector` (sharding).
    let watch = watch_config(&args.watch_label_selector);
    // One ImageRepository watch and cache for both controllers.
    let (repository_source, repository_feed) = repository_feed();
    let wiring = |watch| Wiring {
        watch,
        ctx: ctx.clone(),
        shutdown: work.clone(),
        synced: readiness.part(),
    };
    let work_token = work.clone();
    let gc = gc::run(
        (repositories.clone(), args.watch_label_selector.clone()),
        Box::new(repository_feed.cached_keys()),
        ctx.store.clone(),
        Duration::from_secs(u64::from(args.gc_interval) * 60),
        work.clone(),
    );
    let policy_controller =
        image_policy::controller(policies, repository_feed, wiring(watch.clone()));
    let repository_controller =
        image_repository::controller(repositories, repository_source, wiring(watch));
    // Each on a task of its own: a controller whose loop ends before shutdown (or a panic
    // that escaped every reconcile's own containment) ends the process at once, non-zero, so
    // that kubelet restarts it, instead of a process that answers /healthz and reconciles
    // nothing. The GC may end by itself (`--gc-interval=0`).
    let mut workers = tokio::task::JoinSet::new();
    let ends = |name: &'static str, fatal: bool| move |_| (name, fatal);
    use futures::FutureExt;
    workers.spawn(repository_controller.map(ends("the ImageRepository controller", true)));
    workers.spawn(policy_controller.map(ends("the ImagePolicy controller", true)));
    workers.spawn(gc.map(ends("the storage GC", false)));
    // The schema the API server serves for our kinds, followed (controller/schema/).
    let schema = ctx.schema.clone();
    readiness.set_detail(Arc::new(move || schema.detail()));
    let (schema, client, metrics) = (ctx.schema.clone(), ctx.client.clone(), ctx.metrics.clone());
    let every = args.served_schema_interval;
    let following = async move { follow(&schema, client, &metrics, every, work_token).await };
    workers.spawn(following.map(ends("the served schema's monitor", false)));
    tracing::info!(storage = %args.storage_path, selector = %args.watch_label_selector, "image-reflector controller started");
    // Once settled, the start-up code's pages go back to the kernel (runtime/resident.rs).
    let giving_back = tokio::spawn(crate::runtime::resident::give_back_when_settled(
        readiness.clone(),
    ));
    tokio::pin!(holding);
    let ended = loop {
        tokio::select! {
            ended = &mut holding => break ended,
            Some(joined) = workers.join_next() => match joined {
                // Shutdown cancels `work` as it ends `holding`: the loops end first then.
                Ok((name, fatal)) => {
                    if fatal && !work.is_cancelled() {
                        break Ended::Failed(format!("{name} stopped"));
                    }
                }
                Err(err) if err.is_panic() => {
                    let panic = crate::controller::frame::panic::describe(err.into_panic().as_ref());
                    break Ended::Failed(format!("a controller task panicked: {panic}"));
                }
                Err(err) => break Ended::Failed(format!("a controller task ended: {err}")),
            },
        }
    };
    match &ended {
        Ended::Lost => tracing::error!("leader election lost: stopping reconciles"),
        Ended::Failed(why) => tracing::error!("{why}: exiting so that the Pod is restarted"),
        Ended::Cancelled => tracing::info!("shutting down: finishing in-flight reconciles"),
    }
    work.cancel();
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
