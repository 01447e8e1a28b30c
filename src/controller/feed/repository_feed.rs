//! The one ImageRepository watch of the process. The ImageRepository controller owns it and its
//! cache; the ImagePolicy controller reads repositories from that same cache and learns of their
//! changes from it (which repository changed, and what the policy trigger compares), instead of watching and caching
//! every repository a second time: at 10,000 repositories that copy was tens of megabytes, and
//! a second LIST and WATCH on the API server (docs/benchmarks-history.md).

use crate::api::ImageRepository;
use crate::controller::object::cache::ObjectCache;
use crate::store::RepoKey;
use futures::Stream;
use kube::runtime::watcher;
use kube::ResourceExt;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The repository controller's side: the cache and where changes go.
pub struct FeedSource {
    cache: Arc<ObjectCache<ImageRepository>>,
    changes: mpsc::UnboundedSender<ImageRepository>,
    synced: Arc<AtomicBool>,
}

/// The policy controller's side: the cache, whether it has the initial list, and the changes.
pub struct Feed {
    pub cache: Arc<ObjectCache<ImageRepository>>,
    pub synced: Arc<AtomicBool>,
    changes: mpsc::UnboundedReceiver<ImageRepository>,
}

/// A new feed: its source for the repository controller, the feed for the policy controller.
pub fn repository_feed() -> (FeedSource, Feed) {
    let cache = Arc::new(ObjectCache::default());
    let (tx, rx) = mpsc::unbounded_channel();
    let synced = Arc::new(AtomicBool::new(false));
    let source = FeedSource {
        cache: cache.clone(),
        changes: tx,
        synced: synced.clone(),
    };
    let feed = Feed {
        cache,
        synced,
        changes: rx,
    };
    (source, feed)
}

impl Feed {
    /// The keys of the repositories the cache holds, once it holds the first list (the
    /// storage GC's live set: what this instance's watch has in scope).
    pub fn cached_keys(&self) -> impl Fn() -> Option<HashSet<RepoKey>> + Send + Sync + 'static {
        let (cache, synced) = (self.cache.clone(), self.synced.clone());
        move || {
            synced.load(Ordering::SeqCst).then(|| {
                let names = cache.names().into_iter();
                names
                    .filter_map(|(namespace, name)| RepoKey::new(namespace, name).ok())
                    .collect()
            })
        }
    }
}

/// Passes a watch event on, after the cache applied it.
#[derive(Clone)]
pub struct Forward {
    changes: mpsc::UnboundedSender<ImageRepository>,
    synced: Arc<AtomicBool>,
}

impl FeedSource {
    /// The cache the watch fills, and what forwards its events.
    pub fn split(self) -> (Arc<ObjectCache<ImageRepository>>, Forward) {
        let forward = Forward {
            changes: self.changes,
            synced: self.synced,
        };
        (self.cache, forward)
    }
}

impl Forward {
    pub fn event(&self, event: &watcher::Event<ImageRepository>) {
        match event {
            // The first list: no policy reconciles before it is complete (they wait for
            // `synced`), and then each reads its repository from the cache. Its objects are
            // passed on as a baseline only ([`is_baseline`]): the policy side's trigger learns
            // what each repository looks like, so the next event that changes nothing it
            // compares (the finalizer being added) triggers nothing either, and no policy is
            // reconciled for them. Reconciling every policy a second time at start-up made an
            // `Always` policy fetch its digest (docs/imagepolicy.md): a request that is not due.
            // A later relist is passed on as changes: it may carry what the watch missed.
            watcher::Event::InitApply(repo) if !self.synced.load(Ordering::SeqCst) => {
                let mut change = change_of(repo);
                change
                    .metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(BASELINE.into(), "true".into());
                let _ = self.changes.send(change);
            }
            watcher::Event::Apply(repo)
            | watcher::Event::InitApply(repo)
            | watcher::Event::Delete(repo) => {
                // The policy controller is gone only at shutdown.
                let _ = self.changes.send(change_of(repo));
            }
            watcher::Event::InitDone => self.synced.store(true, Ordering::SeqCst),
            watcher::Event::Init => {}
        }
    }
}

/// Marks a change that is only a baseline for the trigger (never written to the API server).
const BASELINE: &str = "image-reflector.internal/baseline";

/// Whether a change from the feed is the first list's baseline: no policy is reconciled for it.
pub fn is_baseline(change: &ImageRepository) -> bool {
    change.annotations().contains_key(BASELINE)
}

/// What the policy side needs of a changed repository: which one it is (to find its policies)
/// and what its trigger compares (`repository_change_hash`: the scan's revision, the canonical
/// name, the deletion). Reads go to the shared cache. A few hundred bytes, not the object: at a
/// restart every repository passes here at once.
fn change_of(repo: &ImageRepository) -> ImageRepository {
    // The spec is small but for the exclusions, which no policy reads.
    let mut spec = repo.spec.clone();
    spec.exclusion_list = None;
    let mut change = ImageRepository::new(&repo.name_any(), spec);
    change.metadata.namespace = repo.metadata.namespace.clone();
    change.metadata.uid = repo.metadata.uid.clone();
    change.metadata.deletion_timestamp = repo.metadata.deletion_timestamp.clone();
    let status = repo.status.as_ref();
    let scan = status.and_then(|s| s.last_scan_result.as_ref());
    change.status = status.map(|s| crate::api::ImageRepositoryStatus {
        canonical_image_name: s.canonical_image_name.clone(),
        last_scan_result: scan.map(|r| crate::api::ScanResult {
            revision: r.revision.clone(),
            ..Default::default()
        }),
        ..Default::default()
    });
    change
}

impl Feed {
    /// The cache, its synced flag, and the changed repositories as a watch stream.
    pub fn into_parts(
        self,
    ) -> (
        Arc<ObjectCache<ImageRepository>>,
        Arc<AtomicBool>,
        impl Stream<Item = Result<ImageRepository, watcher::Error>> + Send + 'static,
    ) {
        let changes = futures::stream::unfold(self.changes, |mut rx| async move {
            rx.recv().await.map(|repo| (Ok(repo), rx))
        });
        (self.cache, self.synced, changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[tokio::test]
    async fn the_policy_side_sees_the_cache_and_every_change_after_the_first_list() {
        let (source, feed) = repository_feed();
        let (writer, forward) = source.split();
        let (reader, synced, changes) = feed.into_parts();
        let repo: ImageRepository = serde_json::from_value(serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
            "metadata": {"name": "app", "namespace": "team"},
            "spec": {"image": "r/app", "interval": "5m", "exclusionList": ["^x"]},
        }))
        .unwrap();
        let mut relisted = repo.clone();
        relisted.spec.interval = "6m".into();
        for event in [
            watcher::Event::Init,
            watcher::Event::InitApply(repo.clone()),
            watcher::Event::InitDone,
            // A relist (the watch fell too far behind): passed on.
            watcher::Event::Init,
            watcher::Event::InitApply(relisted.clone()),
            watcher::Event::InitDone,
            watcher::Event::Delete(relisted.clone()),
        ] {
            writer.apply(&event);
            forward.event(&event);
            if matches!(event, watcher::Event::InitDone) && reader.len() == 1 {
                assert!(synced.load(Ordering::SeqCst));
                assert_eq!(reader.len(), 1, "one cache, shared");
                assert_eq!(
                    reader.filter_map(Some)[0]
                        .spec
                        .exclusion_list
                        .as_ref()
                        .unwrap()
                        .len(),
                    1
                );
            }
        }
        drop(forward);
        let seen: Vec<_> = changes.collect().await;
        // The first list's object is a baseline only: policies read it from the cache.
        let intervals: Vec<_> = seen
            .iter()
            .map(|r| {
                let r = r.as_ref().unwrap();
                (r.spec.interval.clone(), is_baseline(r))
            })
            .collect();
        assert_eq!(
            intervals,
            [
                ("5m".to_string(), true),
                ("6m".to_string(), false),
                ("6m".to_string(), false)
            ],
            "the first list as a baseline, then the relisted object and its deletion"
        );
        assert!(seen
            .iter()
            .all(|r| r.as_ref().unwrap().spec.exclusion_list.is_none()));
        assert!(reader.is_empty());
    }
}
