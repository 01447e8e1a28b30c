//! The ImageRepository controller: its watch (the one ImageRepository watch of the process,
//! shared with the policies through [`crate::controller::feed`]) and the reconcile it runs:
//! the shared one ([`crate::controller::frame::reconcile`]) with what
//! [`reconcile`](mod@reconcile) adds, deciding in [`decide`] (Flux's flow,
//! docs/imagerepository.md).

pub mod decide;
pub mod reconcile;
pub mod running_scans;
pub mod scan;
pub mod should_scan;

use crate::api::ImageRepository;
use crate::controller::feed::repository_feed::FeedSource;
use crate::controller::frame::reconcile as shared_reconcile;
use crate::controller::frame::stage::Stage;
use crate::controller::frame::wiring::Wiring;
use crate::controller::object::changed::changed;
use crate::controller::object::keys::{object_key, trigger_hash};
use crate::controller::object::slim::slim;
use crate::controller::outcome::error::Error;
use crate::controller::schema::restart::restarting_watch;
use crate::store::RepoKey;
use futures::TryStreamExt;
use kube::runtime::controller::Action;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};
pub use reconcile::RepositoryContext;
use std::sync::Arc;

/// One reconcile (kube's signature): the shared reconcile of
/// [`Reconciled`](crate::controller::frame::reconciled::Reconciled).
pub async fn reconcile(
    repo: Arc<ImageRepository>,
    ctx: Arc<RepositoryContext>,
) -> Result<Action, Error> {
    shared_reconcile::reconcile(repo, ctx).await
}

/// When to try again after an error: decided by its kind.
pub fn error_policy(
    repo: Arc<ImageRepository>,
    err: &Error,
    ctx: Arc<RepositoryContext>,
) -> Action {
    shared_reconcile::error_policy(repo, err, ctx)
}

/// The running controller. `synced` is marked once the initial list is in the cache.
// (Not `Store::wait_until_ready`: its one-shot keeps only the last waiter's waker, and the
// controller's runner waits on it too.)
pub fn controller(
    api: Api<ImageRepository>,
    feed: FeedSource,
    wiring: Wiring,
) -> impl std::future::Future<Output = ()> {
    let Wiring {
        watch,
        ctx,
        shutdown,
        synced,
    } = wiring;
    let (cache, forward) = feed.split();
    let stage = Stage::new(cache);
    let staged = stage.clone();
    let ctx = RepositoryContext::new(ctx);
    let running = ctx.running.clone();
    let order = ctx.shared.clone();
    let restarts = ctx.shared.schema.repository_restarts();
    let triggers = restarting_watch(api, watch, restarts)
        .modify(slim)
    .inspect_ok(move |event| {
        staged.apply(event);
        forward.event(event);
        if matches!(event, watcher::Event::InitDone) {
            // The start-up order waits only for repositories that exist and will scan.
            // Decoded one at a time: the whole cache decoded at once was a burst of
            // 2 KB a repository at every start.
            let existing = staged.cache.filter_map(|r| {
                let scans = r.spec.suspend != Some(true);
                let key = RepoKey::new(r.namespace().unwrap_or_default(), r.name_any());
                key.ok().filter(|_| scans)
            });
            order.scan_order.existing(existing);
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
    });
    let triggers = changed(triggers, trigger_hash);
    shared_reconcile::run_queued(stage, triggers, |c| c, ctx, shutdown)
}
