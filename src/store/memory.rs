//! An in-memory store: for tests and the offline commands.

use super::{RepoKey, Revision, StoreError, TagList, TagStore};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Tags kept in process memory only.
#[derive(Default)]
pub struct MemoryStore {
    entries: RwLock<HashMap<RepoKey, Arc<TagList>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl TagStore for MemoryStore {
    fn set(&self, key: &RepoKey, tags: &TagList) -> Result<Revision, StoreError> {
        let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
        entries.insert(key.clone(), Arc::new(tags.clone()));
        Ok(tags.revision())
    }

    fn get(&self, key: &RepoKey) -> Result<(TagList, Revision), StoreError> {
        let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
        let tags = entries
            .get(key)
            .map(|t| TagList::clone(t))
            .unwrap_or_default();
        let revision = tags.revision();
        Ok((tags, revision))
    }

    fn delete(&self, key: &RepoKey) -> Result<(), StoreError> {
        self.entries
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
        Ok(())
    }

    fn keys(&self) -> Result<Vec<RepoKey>, StoreError> {
        let mut keys: Vec<RepoKey> = self
            .entries
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect();
        keys.sort();
        Ok(keys)
    }
}
