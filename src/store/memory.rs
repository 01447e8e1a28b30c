//! An in-memory store: for tests and the offline commands.

use super::{
    DigestFact, DigestFacts, FirstSeen, ImageFacts, ImageFactsFile, RepoKey, Revision, StoreError,
    TagList, TagStore,
};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Tags kept in process memory only.
#[derive(Default)]
pub struct MemoryStore {
    entries: RwLock<HashMap<RepoKey, Arc<TagList>>>,
    digests: RwLock<HashMap<RepoKey, DigestFacts>>,
    images: RwLock<HashMap<RepoKey, ImageFactsFile>>,
    seen: RwLock<HashMap<RepoKey, FirstSeen>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Facts are kept beside tags only, as on disk.
    fn has_tags(&self, key: &RepoKey) -> bool {
        self.entries
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(key)
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
        self.digests
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
        self.images
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
        self.seen
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
        Ok(())
    }

    fn digest_facts(&self, key: &RepoKey) -> Result<DigestFacts, StoreError> {
        let digests = self.digests.read().unwrap_or_else(|p| p.into_inner());
        Ok(digests.get(key).cloned().unwrap_or_default())
    }

    fn record_digest(&self, key: &RepoKey, tag: &str, fact: DigestFact) -> Result<(), StoreError> {
        if self.has_tags(key) {
            let mut digests = self.digests.write().unwrap_or_else(|p| p.into_inner());
            digests.entry(key.clone()).or_default().record(tag, fact);
        }
        Ok(())
    }

    fn all_image_facts(&self, key: &RepoKey) -> Result<ImageFactsFile, StoreError> {
        let images = self.images.read().unwrap_or_else(|p| p.into_inner());
        Ok(images.get(key).cloned().unwrap_or_default())
    }

    fn record_image_facts(&self, key: &RepoKey, facts: ImageFacts) -> Result<(), StoreError> {
        if self.has_tags(key) {
            let mut images = self.images.write().unwrap_or_else(|p| p.into_inner());
            images.entry(key.clone()).or_default().record(facts);
        }
        Ok(())
    }

    fn first_seen(&self, key: &RepoKey) -> Result<FirstSeen, StoreError> {
        let seen = self.seen.read().unwrap_or_else(|p| p.into_inner());
        Ok(seen.get(key).cloned().unwrap_or_default())
    }

    fn update_first_seen(
        &self,
        key: &RepoKey,
        change: &mut dyn FnMut(&mut FirstSeen) -> bool,
    ) -> Result<(), StoreError> {
        if self.has_tags(key) {
            let mut seen = self.seen.write().unwrap_or_else(|p| p.into_inner());
            change(seen.entry(key.clone()).or_default());
        }
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
