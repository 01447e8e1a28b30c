//! One scan: the tags listed (excluded as they arrive), sorted and stored under one deadline,
//! with the result the status records.

use crate::api::{format_go_duration, ScanResult};
use crate::controller::outcome::conditions::whole_seconds;
use crate::policy::Exclusions;
use crate::reference::ImageReference;
use crate::registry::{RegistryClient, RegistryError};
use crate::store::{RepoKey, TagList, TagStore};
use k8s_openapi::jiff::Timestamp;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub(super) enum ScanError {
    #[error(transparent)]
    Registry(RegistryError),
    #[error("{0}")]
    Store(String),
    #[error("the scan did not finish within {0} (spec.timeout)")]
    Timeout(String),
}

/// Lists, excludes, sorts and stores the tags under one deadline (§3.8).
pub(super) async fn scan(
    client: &RegistryClient,
    image: &ImageReference,
    filters: Exclusions,
    store: &Arc<dyn TagStore>,
    key: &RepoKey,
    timeout: Duration,
    now: Timestamp,
) -> Result<ScanResult, ScanError> {
    let listing = tokio::time::timeout(
        timeout,
        client.list_tags_with(image, move |tag| !filters.excludes(tag)),
    )
    .await
    .map_err(|_| ScanError::Timeout(format_go_duration(timeout)))?
    .map_err(ScanError::Registry)?;
    let (store, key) = (store.clone(), key.clone());
    // Sorting up to a million tags, fsync and rename: off the async workers.
    let span = tracing::info_span!("store write", tags = listing.tags.len());
    let write = move || {
        span.in_scope(|| {
            let tags = TagList::new(listing.tags.iter())?;
            let revision = store.set_seen(&key, &tags, now.as_second())?;
            Ok::<_, crate::store::StoreError>((tags.first(10), tags.len(), revision))
        })
    };
    let (latest_tags, count, revision) = tokio::task::spawn_blocking(write)
        .await
        .map_err(|e| ScanError::Store(e.to_string()))?
        .map_err(|e| ScanError::Store(e.to_string()))?;
    Ok(ScanResult {
        revision: Some(revision.as_str().to_string()),
        tag_count: count as i64,
        scan_time: Some(whole_seconds(now)),
        latest_tags: (!latest_tags.is_empty()).then_some(latest_tags),
    })
}
