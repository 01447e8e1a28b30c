//! The tag store: each ImageRepository's tags, kept between scans and across restarts.
//!
//! Keyed per object (namespace/name), never by image name, so two repositories for the same
//! image cannot overwrite each other (docs/compatibility.md). Knows nothing of Kubernetes or HTTP.
//! `FsStore` is the default, in Flux's filesystem layout; `MemoryStore` serves tests and the
//! offline commands. See docs/store.md for the guarantees.

mod digests;
mod error;
mod files;
mod first_seen;
mod front_coded;
mod fs;
mod fs_beside;
mod image_facts;
mod key;
mod memory;
mod tag_list;

pub use digests::{DigestFact, DigestFacts, MAX_FACTS};
pub use error::StoreError;
pub use first_seen::{FirstSeen, Seen, MAX_SEEN};
pub use front_coded::{decode_file as decode_tags_file, MAX_STORED_TEXT};
pub use fs::{FsStore, DEFAULT_COMPRESSION_THRESHOLD};
pub use image_facts::{ImageFacts, ImageFactsFile, PlatformFact, SignatureVerdict, MAX_IMAGES};
pub use key::RepoKey;
pub use memory::MemoryStore;
pub use tag_list::{Iter, Revision, TagList, MAX_TAG_LEN};

use std::collections::HashSet;

/// Where tags are kept. Implementations are safe to share between threads; the filesystem one
/// does blocking I/O, so async callers use `spawn_blocking`.
pub trait TagStore: Send + Sync {
    /// Replaces the tags of `key`; returns the new revision.
    fn set(&self, key: &RepoKey, tags: &TagList) -> Result<Revision, StoreError>;

    /// The tags of `key` and their revision; no entry means no tags (the repository is then
    /// scanned again). Only `key`'s data is read.
    fn get(&self, key: &RepoKey) -> Result<(TagList, Revision), StoreError>;

    /// Forgets `key`.
    fn delete(&self, key: &RepoKey) -> Result<(), StoreError>;

    /// When each of `key`'s tags had its digest fetched (`digests.rs`), in one read.
    fn digest_facts(&self, key: &RepoKey) -> Result<DigestFacts, StoreError>;

    /// When `tag`'s digest was last fetched; `None` when not known.
    fn digest_fact(&self, key: &RepoKey, tag: &str) -> Result<Option<DigestFact>, StoreError> {
        Ok(self.digest_facts(key)?.get(tag).cloned())
    }

    /// Remembers a fetched digest of `tag`, beside `key`'s tags (nothing when it has none).
    fn record_digest(&self, key: &RepoKey, tag: &str, fact: DigestFact) -> Result<(), StoreError>;

    /// What gated elections learnt about `key`'s images (`image_facts.rs`), in one read.
    fn all_image_facts(&self, key: &RepoKey) -> Result<ImageFactsFile, StoreError>;

    /// What a gated election learnt about the image `digest`.
    fn image_facts(&self, key: &RepoKey, digest: &str) -> Result<Option<ImageFacts>, StoreError> {
        Ok(self.all_image_facts(key)?.get(digest).cloned())
    }

    /// Remembers an image's facts beside `key`'s tags (nothing when it has none).
    fn record_image_facts(&self, key: &RepoKey, facts: ImageFacts) -> Result<(), StoreError>;

    /// When `key`'s tags were first seen (`first_seen.rs`). An error means the record cannot be
    /// trusted: callers count every tag as seen now.
    fn first_seen(&self, key: &RepoKey) -> Result<FirstSeen, StoreError>;

    /// Changes `key`'s first sightings under one lock; `change` says whether it changed
    /// anything (else nothing is written). Nothing when `key` has no tags.
    fn update_first_seen(
        &self,
        key: &RepoKey,
        change: &mut dyn FnMut(&mut FirstSeen) -> bool,
    ) -> Result<(), StoreError>;

    /// Whether `key`'s stored tags are known to be at `revision` without reading them.
    fn holds(&self, _key: &RepoKey, _revision: &Revision) -> bool {
        false
    }

    /// [`TagStore::set`], recording which tags a scan at `now` lists for the first time. At a
    /// first scan (nothing stored: a new repository, or a lost store) every tag counts as seen
    /// before; an unchanged list costs no read.
    fn set_seen(&self, key: &RepoKey, tags: &TagList, now: i64) -> Result<Revision, StoreError> {
        if self.holds(key, &tags.revision()) {
            return self.set(key, tags);
        }
        let arrived = self.arrivals(key, tags)?;
        let revision = self.set(key, tags)?;
        if let Some(arrived) = arrived {
            // Written (with fsync) only when a tag arrived or a recorded one left the list.
            self.update_first_seen(key, &mut |seen| {
                let dropped = seen.retain(|t| tags.contains(t));
                seen.arrived(arrived.iter().map(String::as_str), now);
                dropped || !arrived.is_empty()
            })?;
        }
        Ok(revision)
    }

    /// The tags of `tags` that `key`'s stored list does not hold; `None` when nothing is stored
    /// (a first scan).
    fn arrivals(&self, key: &RepoKey, tags: &TagList) -> Result<Option<Vec<String>>, StoreError> {
        let (before, _) = self.get(key)?;
        let arrived = tags.minus(&before).into_iter().map(String::from).collect();
        Ok((!before.is_empty()).then_some(arrived))
    }

    /// `tag` names `digest` now: a digest other than the one recorded restarts its clock.
    fn resolved(&self, key: &RepoKey, tag: &str, digest: &str, now: i64) -> Result<(), StoreError> {
        self.update_first_seen(key, &mut |seen| seen.resolved(tag, digest, now))
    }

    /// Every key with stored tags.
    fn keys(&self) -> Result<Vec<RepoKey>, StoreError>;

    /// Deletes every key not in `live` (the ImageRepositories that still exist); returns them.
    fn retain(&self, live: &HashSet<RepoKey>) -> Result<Vec<RepoKey>, StoreError> {
        delete_all_but(self, live)
    }
}

/// Deletes the keys of `store` that are not in `live`; returns them.
fn delete_all_but(
    store: &(impl TagStore + ?Sized),
    live: &HashSet<RepoKey>,
) -> Result<Vec<RepoKey>, StoreError> {
    let dead: Vec<RepoKey> = store
        .keys()?
        .into_iter()
        .filter(|k| !live.contains(k))
        .collect();
    for key in &dead {
        store.delete(key)?;
    }
    Ok(dead)
}
