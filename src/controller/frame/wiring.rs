//! What each kind's running controller is given besides its API and watch feed.

use super::context::Context;
use crate::runtime::http::ReadyPart;
use kube::runtime::watcher;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Objects per page of a watch's LIST (at start and whenever the watch must list again).
/// kube asks 500: the watcher decodes a whole page into typed objects (each with its
/// `managedFields` as JSON maps) and holds the page's text meanwhile, which was the peak of a
/// restarted process's heap (5.1 MB of maps and 1.9 MB of text at 1,000 repositories,
/// heaptrack). A hundred costs five times the requests, once per start.
pub const LIST_PAGE_SIZE: u32 = 100;

/// A watch of the controllers' own objects: `selector` (`--watch-label-selector`), in pages
/// of [`LIST_PAGE_SIZE`].
pub fn watch_config(selector: &str) -> watcher::Config {
    let config = watcher::Config::default().page_size(LIST_PAGE_SIZE);
    match selector {
        "" => config,
        selector => config.labels(selector),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Both kinds' watches list in pages of a hundred, with or without a shard's selector.
    #[test]
    fn watches_list_a_hundred_objects_a_page() {
        let all = watch_config("");
        assert_eq!((all.page_size, all.label_selector), (Some(100), None));
        let shard = watch_config("shard=a");
        assert_eq!(shard.page_size, Some(LIST_PAGE_SIZE));
        assert_eq!(shard.label_selector.as_deref(), Some("shard=a"));
    }
}
