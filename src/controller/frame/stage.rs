//! The store kube-runtime's controller reads its objects from: only those the work queue
//! released and whose reconcile has not ended, a few per worker. Every object is kept once, in
//! the compact cache ([`ObjectCache`]); it is decoded into this store when released, follows
//! the watch while it is here (as kube's own store did), and leaves when its reconcile ends,
//! unless it was released again meanwhile.

use crate::controller::object::cache::ObjectCache;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::{Arc, Mutex, PoisonError};

/// What kube's controller reads, fed from the cache.
pub struct Stage<K: Resource<DynamicType = ()> + Clone + 'static> {
    pub cache: Arc<ObjectCache<K>>,
    reader: Store<K>,
    writer: Mutex<reflector::store::Writer<K>>,
}

impl<K> Stage<K>
where
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + 'static,
{
    /// An empty stage over `cache`, ready at once: what is not released is not there.
    pub fn new(cache: Arc<ObjectCache<K>>) -> Arc<Self> {
        let (reader, mut writer) = reflector::store();
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitDone);
        Arc::new(Stage {
            cache,
            reader,
            writer: Mutex::new(writer),
        })
    }

    /// The store for `Controller::for_stream`.
    pub fn reader(&self) -> Store<K> {
        self.reader.clone()
    }

    /// Stages the object `namespace/name` as the cache has it now, and returns kube's
    /// reference to it; `None` if the cache does not have it (it is gone).
    pub fn put(&self, namespace: &str, name: &str) -> Option<ObjectRef<K>> {
        let obj = self.cache.get(namespace, name)?;
        let event = watcher::Event::Apply(obj);
        self.writer().apply_watcher_event(&event);
        Some(reference(namespace, name))
    }

    /// Unstages the object `namespace/name`, if it is staged.
    pub fn remove(&self, namespace: &str, name: &str) {
        let reference = reference(namespace, name);
        let mut writer = self.writer();
        if let Some(staged) = self.reader.get(&reference) {
            writer.apply_watcher_event(&watcher::Event::Delete(staged.as_ref().clone()));
        }
    }

    /// Applies an event of the kind's watch: to the cache first, then to what is staged.
    pub fn apply(&self, event: &watcher::Event<K>) {
        self.cache.apply(event);
        self.follow(event);
    }

    /// Follows the kind's watch, after the cache applied `event`: a staged object is replaced
    /// by its new version, or goes with its deletion (kube's controller then finds it gone,
    /// as it did when it read the watch's own store), and after a relist each staged object
    /// is taken again from the cache.
    fn follow(&self, event: &watcher::Event<K>) {
        let mut writer = self.writer();
        match event {
            watcher::Event::Apply(obj) | watcher::Event::Delete(obj) => {
                let Some(name) = obj.meta().name.as_deref() else {
                    return;
                };
                let namespace = obj.meta().namespace.as_deref().unwrap_or_default();
                if self.reader.get(&reference(namespace, name)).is_some() {
                    writer.apply_watcher_event(event);
                }
            }
            watcher::Event::InitDone => {
                for staged in self.reader.state() {
                    let name = staged.meta().name.as_deref().unwrap_or_default();
                    let namespace = staged.meta().namespace.as_deref().unwrap_or_default();
                    let event = match self.cache.get(namespace, name) {
                        Some(now) => watcher::Event::Apply(now),
                        None => watcher::Event::Delete(staged.as_ref().clone()),
                    };
                    writer.apply_watcher_event(&event);
                }
            }
            watcher::Event::Init | watcher::Event::InitApply(_) => {}
        }
    }

    /// How many objects are staged.
    pub fn len(&self) -> usize {
        self.reader.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, reflector::store::Writer<K>> {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// kube's reference to `namespace/name`, by name alone: the UID and resource version it can
/// carry take no part in finding the object, and kube's scheduler would keep copies of them.
fn reference<K: Resource<DynamicType = ()>>(namespace: &str, name: &str) -> ObjectRef<K> {
    let reference = ObjectRef::new(name);
    match namespace {
        "" => reference,
        namespace => reference.within(namespace),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ImageRepository;

    pub(crate) fn repository(name: &str) -> ImageRepository {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
            "metadata": {"name": name, "namespace": "team", "uid": "u-1", "resourceVersion": "7"},
            "spec": {"image": format!("r/{name}"), "interval": "5m"},
        }))
        .unwrap()
    }

    /// A cache with `team/app`, and a stage where it is staged.
    fn app_staged() -> (
        Arc<ObjectCache<ImageRepository>>,
        Arc<Stage<ImageRepository>>,
        ObjectRef<ImageRepository>,
    ) {
        let cache = Arc::new(ObjectCache::default());
        cache.insert(&repository("app"));
        let stage = Stage::new(cache.clone());
        let reference = stage.put("team", "app").unwrap();
        (cache, stage, reference)
    }

    /// `name`, with its image changed.
    fn moved(name: &str) -> ImageRepository {
        let mut changed = repository(name);
        changed.spec.image = "r/moved".into();
        changed
    }

    #[test]
    fn holds_only_what_is_put_and_not_removed() {
        let cache = Arc::new(ObjectCache::default());
        cache.insert(&repository("app"));
        cache.insert(&repository("other"));
        let stage = Stage::new(cache.clone());
        assert!(stage.is_empty(), "nothing staged before a release");
        let staged = stage.put("team", "app").expect("in the cache");
        assert_eq!(
            (staged.name.as_str(), staged.namespace.as_deref()),
            ("app", Some("team"))
        );
        assert_eq!(staged.extra.uid, None, "a reference by name alone");
        assert_eq!(stage.len(), 1);
        let read = stage
            .reader()
            .get(&staged)
            .expect("kube's controller finds it");
        assert_eq!(read.spec.image, "r/app");
        assert!(
            stage.put("team", "missing").is_none(),
            "not in the cache: gone"
        );
        stage.remove("team", "app");
        assert!(stage.is_empty());
        stage.remove("team", "app");
        assert!(stage.is_empty(), "removing twice is harmless");
    }

    #[test]
    fn a_put_stages_the_cache_as_it_is_now() {
        let (cache, stage, reference) = app_staged();
        cache.insert(&moved("app"));
        stage.put("team", "app").unwrap();
        assert_eq!(
            stage.reader().get(&reference).unwrap().spec.image,
            "r/moved"
        );
    }

    #[test]
    fn a_staged_object_follows_the_watch_and_no_other_is_staged_by_it() {
        let (_, stage, reference) = app_staged();
        for event in [
            watcher::Event::Apply(moved("app")),
            watcher::Event::Apply(repository("other")),
        ] {
            stage.apply(&event);
        }
        let staged = stage.reader().get(&reference).unwrap();
        assert_eq!(staged.spec.image, "r/moved");
        assert_eq!(
            stage.len(),
            1,
            "an object not released is not staged by the watch"
        );
        // A relist without it: it goes.
        for event in [
            watcher::Event::Init,
            watcher::Event::InitApply(repository("other")),
            watcher::Event::InitDone,
        ] {
            stage.apply(&event);
        }
        assert!(
            stage.is_empty(),
            "gone from the relist, gone from the stage"
        );
        stage.put("team", "other").unwrap();
        let gone = watcher::Event::Delete(repository("other"));
        stage.apply(&gone);
        assert!(
            stage.is_empty(),
            "a deletion takes it out, as from kube's own store"
        );
    }
}
