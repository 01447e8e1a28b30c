//! The watch cache of one kind, compact: each object as the JSON it would be sent as, under
//! its `namespace/name`. kube's reflector store kept each object decoded, with a string on the
//! heap for every name, time, tag and message (each at least 32 bytes to the allocator) and a
//! key holding four more: about 2 KB an object, the larger part of what the controller kept of
//! each repository and policy (docs/benchmarks-history.md). As JSON it is about half that. A reconcile
//! decodes the one object it reads, which costs what kube's clone of it cost before.
//!
//! The cache applies a watch's events as kube's store does: the first list, and any relist,
//! replaces the content at once when it is complete; until the first is, the cache is not
//! ready, and readers wait for it ([`ObjectCache::ready`]).

use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::{PoisonError, RwLock};
use tokio::sync::watch;

mod entry;
use entry::{Encoded, Entry};

/// One kind's objects, by `namespace/name`.
pub struct ObjectCache<K> {
    tables: RwLock<Tables>,
    /// `true` once the first list is in.
    ready: watch::Sender<bool>,
    kind: PhantomData<fn() -> K>,
}

#[derive(Default)]
struct Tables {
    live: HashSet<Entry>,
    /// A list being received (between `Init` and `InitDone`).
    listing: Option<HashSet<Entry>>,
}

impl<K> Default for ObjectCache<K> {
    fn default() -> Self {
        ObjectCache {
            tables: RwLock::default(),
            ready: watch::Sender::new(false),
            kind: PhantomData,
        }
    }
}

impl<K> std::fmt::Debug for ObjectCache<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectCache")
            .field("objects", &self.len())
            .finish()
    }
}

/// `namespace/name`, the cache's key (an empty namespace for a cluster-scoped object).
fn key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

impl<K> ObjectCache<K>
where
    K: Resource + Serialize + DeserializeOwned,
{
    /// Applies one event of the kind's watch.
    pub fn apply(&self, event: &watcher::Event<K>) {
        // Encoded before the lock is taken: readers wait only for the copy.
        let encoded = match event {
            watcher::Event::InitApply(obj) | watcher::Event::Apply(obj) => encoded(obj),
            _ => None,
        };
        let mut tables = self.tables.write().unwrap_or_else(PoisonError::into_inner);
        match event {
            watcher::Event::Init => tables.listing = Some(HashSet::new()),
            watcher::Event::InitApply(_) => {
                if let Some(encoded) = encoded {
                    put(tables.listing.get_or_insert_with(HashSet::new), &encoded);
                }
            }
            watcher::Event::InitDone => {
                let mut listed = tables.listing.take().unwrap_or_default();
                listed.shrink_to_fit();
                tables.live = listed;
                drop(tables);
                self.ready.send_replace(true);
            }
            watcher::Event::Apply(_) => {
                if let Some(encoded) = encoded {
                    put(&mut tables.live, &encoded);
                }
            }
            watcher::Event::Delete(obj) => {
                let namespace = obj.namespace().unwrap_or_default();
                tables.live.remove(&*key(&namespace, &obj.name_any()));
            }
        }
    }

    /// Puts `obj` in, as an update from the watch would.
    pub fn insert(&self, obj: &K) {
        if let Some(encoded) = encoded(obj) {
            let mut tables = self.tables.write().unwrap_or_else(PoisonError::into_inner);
            put(&mut tables.live, &encoded);
        }
    }

    /// The object `namespace/name`, if the cache has it.
    pub fn get(&self, namespace: &str, name: &str) -> Option<K> {
        let key = key(namespace, name);
        let tables = self.tables.read().unwrap_or_else(PoisonError::into_inner);
        let entry = tables.live.get(key.as_str())?;
        decoded(&key, entry.json())
    }

    /// What `f` makes of each object, decoded one at a time: the cache is never copied whole.
    pub fn filter_map<T>(&self, mut f: impl FnMut(K) -> Option<T>) -> Vec<T> {
        let tables = self.tables.read().unwrap_or_else(PoisonError::into_inner);
        tables
            .live
            .iter()
            .filter_map(|entry| decoded(entry.key(), entry.json()))
            .filter_map(&mut f)
            .collect()
    }

    /// Every object's `(namespace, name)`.
    pub fn names(&self) -> Vec<(String, String)> {
        let tables = self.tables.read().unwrap_or_else(PoisonError::into_inner);
        tables
            .live
            .iter()
            .filter_map(|entry| entry.key().split_once('/'))
            .map(|(namespace, name)| (namespace.to_string(), name.to_string()))
            .collect()
    }
}

impl<K> ObjectCache<K> {
    pub fn len(&self) -> usize {
        let tables = self.tables.read().unwrap_or_else(PoisonError::into_inner);
        tables.live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the first list is in.
    pub fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }

    /// Returns once the first list is in.
    pub async fn ready(&self) {
        let mut ready = self.ready.subscribe();
        // Err only if the sender is gone, which `self` is not.
        let _ = ready.wait_for(|ready| *ready).await;
    }
}

/// `obj` under its key, as JSON.
fn encoded<K: Resource + Serialize>(obj: &K) -> Option<Encoded> {
    let namespace = obj.namespace().unwrap_or_default();
    match Encoded::new(&key(&namespace, &obj.name_any()), obj) {
        Ok(encoded) => Some(encoded),
        Err(err) => {
            // An object that came from the API server as JSON goes back to JSON; if it ever
            // did not, it is left out of the cache (its reconcile sees it gone) and said.
            tracing::error!(object = %format!("{namespace}/{}", obj.name_any()), error = %err, "not cached: the object does not serialize");
            None
        }
    }
}

/// `encoded` into `set`: over the entry of its key when it fits there (most updates change no
/// length, or a little), else as a new entry.
fn put(set: &mut HashSet<Entry>, encoded: &Encoded) {
    let entry = match set.take(encoded.key()) {
        Some(old) => old.rewritten(encoded),
        None => Entry::new(encoded),
    };
    set.insert(entry);
}

fn decoded<K: DeserializeOwned>(key: &str, bytes: &[u8]) -> Option<K> {
    match serde_json::from_slice(bytes) {
        Ok(obj) => Some(obj),
        Err(err) => {
            tracing::error!(object = %key, error = %err, "a cached object does not read back");
            None
        }
    }
}

#[cfg(test)]
mod tests;
