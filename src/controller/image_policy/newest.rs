//! The newest-pushed order's facts (`spec.policy.newest`, docs/imagepolicy.md): when each tag
//! was first seen, and the creation times of the images whose digest and inspection the store
//! keeps, read from the store alone. A steady state, where the tag seen last is alone at its
//! sighting, costs no request; the tags of one sighting are dated by the election's walk
//! (`election/dating.rs`).

use crate::policy::Sightings;
use crate::store::{ImageFacts, RepoKey, StoreError, TagStore};
use std::collections::HashMap;

/// `key`'s sightings as the store keeps them. A record that cannot be read counts every tag
/// as seen `now`: creation times and names then decide.
pub fn sightings(store: &dyn TagStore, key: &RepoKey, now: i64) -> Result<Sightings, StoreError> {
    let seen = store
        .first_seen(key)
        .unwrap_or_else(|_| crate::store::FirstSeen::all_at(now));
    let entries = seen.entries().map(|(tag, at)| (tag.to_string(), at));
    let mut sightings = Sightings::recorded(entries, seen.floor());
    let images = store.all_image_facts(key)?;
    let created: HashMap<&str, Option<i64>> = images
        .iter()
        .filter(|f| f.inspected)
        .map(|f| (f.digest.as_str(), created(f)))
        .collect();
    for (tag, fact) in store.digest_facts(key)?.iter() {
        if let Some(at) = created.get(fact.digest.as_str()) {
            sightings = sightings.dated(tag, *at);
        }
    }
    Ok(sightings)
}

/// An image's creation time: its own (a single manifest's config, an index's annotation),
/// else the newest of its platform images; `None` when it, or one of them, says nothing.
pub fn created(facts: &ImageFacts) -> Option<i64> {
    if facts.created.is_some() {
        return facts.created;
    }
    let mut newest: Option<i64> = None;
    for platform in &facts.platforms {
        let at = platform.created?;
        newest = Some(newest.map_or(at, |n| n.max(at)));
    }
    newest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{DigestFact, MemoryStore, PlatformFact, TagList};

    fn image(digest: &str, created: Option<i64>, platforms: &[Option<i64>]) -> ImageFacts {
        ImageFacts {
            digest: digest.into(),
            inspected: true,
            created,
            platforms: platforms
                .iter()
                .map(|c| PlatformFact {
                    platform: "linux/amd64".into(),
                    created: *c,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn an_image_is_as_new_as_its_own_time_or_its_newest_platform() {
        assert_eq!(created(&image("d", Some(5), &[Some(9)])), Some(5));
        assert_eq!(created(&image("d", None, &[Some(3), Some(9)])), Some(9));
        assert_eq!(created(&image("d", None, &[Some(3), None])), None);
        assert_eq!(created(&image("d", None, &[])), None);
    }

    #[test]
    fn the_store_gives_sightings_and_the_creation_times_it_keeps() {
        let store = MemoryStore::default();
        let key = RepoKey::new("team", "app").unwrap();
        store
            .set_seen(&key, &TagList::new(["a", "b"]).unwrap(), 10)
            .unwrap();
        store
            .set_seen(&key, &TagList::new(["a", "b", "c"]).unwrap(), 20)
            .unwrap();
        let digest = format!("sha256:{}", "1".repeat(64));
        let fact = DigestFact {
            digest: digest.clone(),
            checked_at: 20,
        };
        store.record_digest(&key, "a", fact).unwrap();
        store
            .record_image_facts(&key, image(&digest, Some(7), &[]))
            .unwrap();
        let s = sightings(&store, &key, 99).unwrap();
        assert!(s.is_recorded());
        assert_eq!((s.seen("a"), s.seen("b"), s.seen("c")), (0, 0, 20));
        assert_eq!((s.created("a"), s.created("b")), (Some(Some(7)), None));
        assert_eq!(s.newest(["a", "b", "c"]), Some("c"));
        assert_eq!(s.newest(["a", "b"]), Some("a"), "dated above undated");
    }
}
