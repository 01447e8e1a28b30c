//! The VerifiedDigests as they are, watched by their metadata from the version the keeper read
//! back: one deleted by someone else (or with its namespace) is read back and written again
//! within a pass, not at the next [`RESYNC`](super::RESYNC). The watch ends with its stream (the
//! API server closes one after a few minutes), at an error, or when the kind goes
//! (config/admission removed): the keeper then looks for the kind again and reads back, which
//! also finds what was deleted meanwhile. A plain watch, not kube's `watcher`, which would list
//! and retry by itself, logging each refusal while config/admission is being removed.

use crate::api::VerifiedDigests;
use futures::StreamExt;
use kube::api::{WatchEvent, WatchParams};
use kube::Api;
use tokio_util::sync::CancellationToken;

/// What the watch tells the keeper.
pub(super) enum Seen {
    /// One was deleted: read back what is there.
    Deleted,
    /// The watch ended: look for the kind again.
    Ended,
}

/// Tells `told` what it sees of the VerifiedDigests of `scope` (a namespace, else all) from
/// `version` on, until `shutdown` or the watch's end.
pub(super) fn watch_deletions(
    told: impl Fn(Seen) + Send + 'static,
    client: &kube::Client,
    scope: Option<&str>,
    version: String,
    shutdown: CancellationToken,
) {
    let objects: Api<VerifiedDigests> = match scope {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    };
    tokio::spawn(async move {
        let params = WatchParams::default();
        let watched = tokio::select! {
            watched = objects.watch_metadata(&params, &version) => watched,
            () = shutdown.cancelled() => return,
        };
        let Ok(events) = watched else {
            return told(Seen::Ended);
        };
        let mut events = std::pin::pin!(events);
        loop {
            let event = tokio::select! {
                event = events.next() => event,
                () = shutdown.cancelled() => return,
            };
            match event {
                Some(Ok(WatchEvent::Deleted(_))) => told(Seen::Deleted),
                Some(Ok(WatchEvent::Error(_)) | Err(_)) | None => return told(Seen::Ended),
                Some(Ok(_)) => {}
            }
        }
    });
}
