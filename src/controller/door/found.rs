//! The VerifiedDigests as they are, watched by their metadata: one deleted by someone else
//! (or with its namespace) is read back and written again within a pass, not at the next
//! [`RESYNC`](super::RESYNC); so is any deleted while the watch was away (its new listing).

use crate::api::VerifiedDigests;
use futures::StreamExt;
use kube::core::PartialObjectMeta;
use kube::runtime::{watcher, WatchStreamExt};
use kube::Api;
use tokio_util::sync::CancellationToken;

/// Calls `reread` (what is there is to be read back) whenever a VerifiedDigests of `scope` (a
/// namespace, else all) is deleted or they are listed again, until `shutdown`.
pub(super) fn watch_deletions(
    reread: impl Fn() + Send + 'static,
    client: &kube::Client,
    scope: Option<&str>,
    shutdown: CancellationToken,
) {
    let objects: Api<PartialObjectMeta<VerifiedDigests>> = match scope {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    };
    tokio::spawn(async move {
        let events = watcher(objects, watcher::Config::default()).default_backoff();
        let mut events = std::pin::pin!(events);
        loop {
            let event = tokio::select! {
                event = events.next() => event,
                () = shutdown.cancelled() => return,
            };
            match event {
                Some(Ok(event)) if rereads(&event) => reread(),
                Some(Ok(_)) => {}
                Some(Err(error)) => {
                    tracing::warn!(%error, "the door's watch of VerifiedDigests failed; retried with backoff");
                }
                None => return,
            }
        }
    });
}

/// Whether `event` may mean an object is gone.
fn rereads(event: &watcher::Event<PartialObjectMeta<VerifiedDigests>>) -> bool {
    matches!(event, watcher::Event::Delete(_) | watcher::Event::InitDone)
}
