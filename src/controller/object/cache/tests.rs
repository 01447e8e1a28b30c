use super::*;
use crate::api::{ImagePolicy, ImageRepository};
use std::sync::Arc;

fn repository(namespace: &str, name: &str, image: &str) -> ImageRepository {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
        "metadata": {"name": name, "namespace": namespace, "uid": "u-1", "resourceVersion": "7"},
        "spec": {"image": image, "interval": "5m", "exclusionList": ["^x"]},
        "status": {"canonicalImageName": image, "lastScanResult": {"tagCount": 2, "latestTags": ["2", "1"]}},
    }))
    .unwrap()
}

#[test]
fn an_object_reads_back_as_it_went_in() {
    let cache = ObjectCache::default();
    let repo = repository("team", "app", "r/app");
    cache.insert(&repo);
    let read = cache.get("team", "app").expect("cached");
    assert_eq!(
        serde_json::to_value(&read).unwrap(),
        serde_json::to_value(&repo).unwrap()
    );
    assert!(cache.get("team", "other").is_none());
    assert!(
        cache.get("other", "app").is_none(),
        "the namespace is part of the key"
    );
    assert_eq!(cache.names(), [("team".to_string(), "app".to_string())]);
}

#[tokio::test]
async fn a_list_replaces_the_content_once_complete_and_makes_it_ready() {
    let cache = Arc::new(ObjectCache::<ImageRepository>::default());
    assert!(!cache.is_ready());
    let waiting = {
        let cache = cache.clone();
        tokio::spawn(async move { cache.ready().await })
    };
    cache.apply(&watcher::Event::Init);
    cache.apply(&watcher::Event::InitApply(repository("team", "a", "r/a")));
    cache.apply(&watcher::Event::InitApply(repository("team", "b", "r/b")));
    assert!(cache.is_empty(), "a list in progress is not read");
    assert!(!cache.is_ready());
    cache.apply(&watcher::Event::InitDone);
    tokio::time::timeout(std::time::Duration::from_secs(10), waiting)
        .await
        .expect("ready once the list is in")
        .unwrap();
    assert_eq!(cache.len(), 2);
    // A relist: what it does not name is gone, and until it is done the old content serves.
    cache.apply(&watcher::Event::Init);
    cache.apply(&watcher::Event::InitApply(repository("team", "b", "r/b2")));
    assert_eq!(cache.len(), 2);
    cache.apply(&watcher::Event::InitDone);
    assert!(cache.get("team", "a").is_none());
    assert_eq!(cache.get("team", "b").unwrap().spec.image, "r/b2");
    cache.apply(&watcher::Event::Apply(repository("team", "c", "r/c")));
    cache.apply(&watcher::Event::Delete(repository("team", "b", "r/b2")));
    let mut names = cache.names();
    names.sort();
    assert_eq!(names, [("team".to_string(), "c".to_string())]);
    let images = cache.filter_map(|r| Some(r.spec.image).filter(|i| i.ends_with('c')));
    assert_eq!(images, ["r/c"]);
    assert!(cache.filter_map(|r| r.spec.suspend).is_empty());
    assert!(cache.is_ready());
}

/// The point of the cache: an object as JSON takes less than half the heap that the decoded
/// object and kube's key for it took (the figures are in docs/benchmarks-history.md).
#[test]
fn an_object_is_kept_as_its_json() {
    let cache = ObjectCache::default();
    let policy: ImagePolicy = serde_json::from_value(serde_json::json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy",
        "metadata": {"name": "app", "namespace": "team"},
        "spec": {"imageRepositoryRef": {"name": "app"}, "policy": {"semver": {"range": "1.x"}}},
    }))
    .unwrap();
    cache.insert(&policy);
    let tables = cache.tables.read().unwrap();
    let entry = tables.live.get("team/app").expect("under namespace/name");
    assert_eq!(entry.key(), "team/app");
    assert_eq!(entry.json(), serde_json::to_vec(&policy).unwrap());
    let used = 6 + "team/app".len() + entry.json().len();
    assert!(
        entry.size() < used + 80,
        "one allocation, {} bytes for {used}",
        entry.size()
    );
}

fn policy(range: &str) -> ImagePolicy {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy",
        "metadata": {"name": "app", "namespace": "team", "resourceVersion": "100"},
        "spec": {"imageRepositoryRef": {"name": "app"}, "policy": {"semver": {"range": range}}},
    }))
    .unwrap()
}

fn cached_at(cache: &ObjectCache<ImagePolicy>) -> *const u8 {
    let tables = cache.tables.read().unwrap();
    tables.live.get("team/app").unwrap().json().as_ptr()
}

/// An update that changes no length, or grows a little (a new resource version, a time, an
/// annotation), is written over the version it replaces: no allocation, no hole in the heap.
#[test]
fn an_update_that_fits_is_written_in_place() {
    let cache = ObjectCache::<ImagePolicy>::default();
    cache.insert(&policy("1.x"));
    let first = cached_at(&cache);
    let mut next = policy("2.x");
    next.metadata.resource_version = Some("101".into());
    cache.apply(&watcher::Event::Apply(next.clone()));
    assert_eq!(cached_at(&cache), first, "in place");
    next.metadata.annotations =
        Some([("reconcile.fluxcd.io/requestedAt".into(), "c-1".into())].into());
    cache.apply(&watcher::Event::Apply(next.clone()));
    let read = cache.get("team", "app").unwrap();
    assert_eq!(read.metadata.annotations, next.metadata.annotations);
    assert_eq!(read.spec.policy, next.spec.policy);
    assert_eq!(cache.len(), 1);
}

/// An update larger than the entry's room is a new entry, the old one freed whole.
#[test]
fn an_update_that_does_not_fit_is_a_new_entry() {
    let cache = ObjectCache::<ImagePolicy>::default();
    cache.insert(&policy("1.x"));
    let first = cached_at(&cache);
    let grown = policy(&format!("1.x || {}", "=1.0.0 || ".repeat(20)));
    cache.apply(&watcher::Event::Apply(grown.clone()));
    assert_ne!(cached_at(&cache), first, "a new allocation");
    assert_eq!(
        cache.get("team", "app").unwrap().spec.policy,
        grown.spec.policy
    );
    assert_eq!(cache.len(), 1);
}
