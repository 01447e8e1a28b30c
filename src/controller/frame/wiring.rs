//! What each kind's running controller is given besides its API and watch feed.

use super::context::Context;
use crate::runtime::http::ReadyPart;
use kube::runtime::watcher;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How a controller runs.
pub struct Wiring {
    /// The watch's label selector (`--watch-label-selector`).
    pub watch: watcher::Config,
    /// Also `--concurrent`, the reconciles at once (`ctx.settings.concurrent`).
    pub ctx: Arc<Context>,
    /// Stops the controller after its in-flight reconciles.
    pub shutdown: CancellationToken,
    /// Marked once the controller's cache has the initial list (`/readyz`).
    pub synced: ReadyPart,
}
