//! `--gc-interval`: removes the stored tags of ImageRepositories that no longer exist (their
//! deletion was missed, e.g. while the controller was down). Runs on the leader only, over the
//! repositories this instance watches (its namespace scope and label selector), so a shard
//! never removes another's tags. The live repositories come from the controller's own cache
//! once it holds the first list (no request at all), else from a paged LIST.

use crate::api::ImageRepository;
use crate::store::{RepoKey, TagStore};
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The keys to remove: stored before the list was read, and not listed. A repository created
/// after the list keeps its tags, since they were stored after the first snapshot.
pub fn dead_keys(stored_before: &[RepoKey], live: &HashSet<RepoKey>) -> Vec<RepoKey> {
    stored_before
        .iter()
        .filter(|k| !live.contains(k))
        .cloned()
        .collect()
}

/// Objects per LIST page: client-go's pager default. The list is read a page at a time and
/// only each object's key is kept: an unpaged list of 10,000 repositories is one response of
/// tens of megabytes (metadata carries `managedFields`), held twice while it is parsed, every
/// `--gc-interval` (docs/benchmarks-history.md).
pub const PAGE: u32 = 500;

/// One collection against a paged LIST of the repositories in scope; returns how many keys
/// were removed.
pub async fn collect(
    api: &Api<ImageRepository>,
    selector: &str,
    store: &Arc<dyn TagStore>,
) -> Result<usize, String> {
    collect_from(store, live_keys(api, selector)).await
}

/// The keys of every ImageRepository in scope, listed [`PAGE`] at a time.
async fn live_keys(api: &Api<ImageRepository>, selector: &str) -> Result<HashSet<RepoKey>, String> {
    let mut params = ListParams::default().limit(PAGE);
    if !selector.is_empty() {
        params = params.labels(selector);
    }
    let mut live = HashSet::new();
    loop {
        let page = api
            .list_metadata(&params)
            .await
            .map_err(|e| format!("listing ImageRepositories: {e}"))?;
        live.extend(
            page.items
                .iter()
                .filter_map(|m| RepoKey::new(m.namespace().unwrap_or_default(), m.name_any()).ok()),
        );
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(live),
        }
    }
}

/// One collection against `cached`, the keys of the repositories the controller's watch holds
/// (what it has scope for).
pub async fn collect_cached(
    cached: impl FnOnce() -> HashSet<RepoKey>,
    store: &Arc<dyn TagStore>,
) -> Result<usize, String> {
    collect_from(store, async move { Ok(cached()) }).await
}

/// The stored keys are read first, then the live ones: a repository stored after that read
/// keeps its tags, and one stored before it is live already (a LIST lists it; the watch
/// updates the cache before anything reconciles, and so stores, the object).
async fn collect_from(
    store: &Arc<dyn TagStore>,
    live: impl std::future::Future<Output = Result<HashSet<RepoKey>, String>>,
) -> Result<usize, String> {
    let before = {
        let store = store.clone();
        tokio::task::spawn_blocking(move || store.keys())
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?
    };
    let dead = dead_keys(&before, &live.await?);
    let removed = dead.len();
    let store = store.clone();
    tokio::task::spawn_blocking(move || dead.iter().try_for_each(|k| store.delete(k)))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    Ok(removed)
}

/// The live repositories as the controller's cache holds them; `None` until it holds the
/// first list.
pub type Cache = Box<dyn Fn() -> Option<HashSet<RepoKey>> + Send + Sync>;

/// Collects every `interval` (zero: never) until cancelled: from the cache when it is loaded
/// (at 10,000 repositories a paged LIST is tens of megabytes of metadata to parse, the bulk of
/// what an idle controller spends), else from the API with the watch's selector.
pub async fn run(
    (api, selector): (Api<ImageRepository>, String),
    cache: Cache,
    store: Arc<dyn TagStore>,
    interval: Duration,
    cancel: CancellationToken,
) {
    if interval.is_zero() {
        return;
    }
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
        let collected = match cache() {
            Some(live) => collect_cached(move || live, &store).await,
            None => collect(&api, &selector, &store).await,
        };
        match collected {
            Ok(0) => tracing::debug!("storage garbage collection: nothing to remove"),
            Ok(n) => tracing::info!(
                removed = n,
                "storage garbage collection removed the tags of deleted ImageRepositories"
            ),
            Err(err) => tracing::warn!(error = %err, "storage garbage collection failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_cached_collection_keeps_what_the_cache_holds() {
        use crate::store::{MemoryStore, TagList};
        let key = |n: &str| RepoKey::new("apps", n).unwrap();
        let store: Arc<dyn TagStore> = Arc::new(MemoryStore::new());
        for name in ["kept", "gone"] {
            store
                .set(&key(name), &TagList::new(["1.0.0"]).unwrap())
                .unwrap();
        }
        let live = || [key("kept"), key("new")].into_iter().collect();
        assert_eq!(collect_cached(live, &store).await, Ok(1));
        assert_eq!(store.keys().unwrap(), vec![key("kept")]);
    }

    #[test]
    fn only_keys_stored_before_the_list_and_not_listed_go() {
        let key = |n: &str| RepoKey::new("apps", n).unwrap();
        let before = vec![key("gone"), key("kept")];
        let live: HashSet<RepoKey> = [key("kept"), key("new")].into_iter().collect();
        assert_eq!(dead_keys(&before, &live), vec![key("gone")]);
    }
}
