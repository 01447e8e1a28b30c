//! The VerifiedDigests as they are, watched by their metadata: one deleted by someone else
//! (or with its namespace) is read back and written again within a pass, not at the next
//! [`RESYNC`](super::RESYNC); so is any deleted while the watch was away (its new listing).
//! The watch ends at its first error (config/admission removed, its RBAC first, or the API
//! server gone): the keeper looks for the kind again, and watches again if it is served.

use crate::api::VerifiedDigests;
use futures::StreamExt;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher;
use kube::Api;
use tokio_util::sync::CancellationToken;

/// What the watch tells the keeper.
pub(super) enum Seen {
    /// One may be gone (deleted, or the objects listed again): read back what is there.
    MayBeGone,
    /// The watch failed and ended.
    Lost,
}

/// Tells `told` what it sees of the VerifiedDigests of `scope` (a namespace, else all), until
/// `shutdown` or its first error.
pub(super) fn watch_deletions(
    told: impl Fn(Seen) + Send + 'static,
    client: &kube::Client,
    scope: Option<&str>,
    shutdown: CancellationToken,
) {
    let objects: Api<PartialObjectMeta<VerifiedDigests>> = match scope {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    };
    tokio::spawn(async move {
        let events = watcher(objects, watcher::Config::default());
        let mut events = std::pin::pin!(events);
        loop {
            let event = tokio::select! {
                event = events.next() => event,
                () = shutdown.cancelled() => return,
            };
            match event {
                Some(Ok(event)) if rereads(&event) => told(Seen::MayBeGone),
                Some(Ok(_)) => {}
                Some(Err(error)) => {
                    tracing::debug!(%error, "the door's watch of VerifiedDigests ended");
                    return told(Seen::Lost);
                }
                None => return told(Seen::Lost),
            }
        }
    });
}

/// Whether `event` may mean an object is gone.
fn rereads(event: &watcher::Event<PartialObjectMeta<VerifiedDigests>>) -> bool {
    matches!(event, watcher::Event::Delete(_) | watcher::Event::InitDone)
}
