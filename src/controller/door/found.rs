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

/// Tells `told` what it sees of `objects` from `version` on, until `shutdown` or the watch's
/// end.
pub(super) fn watch_deletions(
    told: impl Fn(Seen) + Send + 'static,
    objects: Api<VerifiedDigests>,
    version: String,
    shutdown: CancellationToken,
) {
    tokio::spawn(async move {
        let params = WatchParams::default();
        let watched = tokio::select! {
            watched = objects.watch_metadata(&params, &version) => watched,
            () = shutdown.cancelled() => return,
        };
        if let Ok(events) = watched {
            let mut events = std::pin::pin!(events.take_until(shutdown.cancelled()));
            while let Some(Ok(event)) = events.next().await {
                match event {
                    WatchEvent::Deleted(_) => told(Seen::Deleted),
                    WatchEvent::Error(_) => break,
                    _ => {}
                }
            }
        }
        if !shutdown.is_cancelled() {
            told(Seen::Ended);
        }
    });
}
