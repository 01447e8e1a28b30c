//! `spec.policy.newest` (docs/imagepolicy.md, "The newest-pushed order"): the tag first seen
//! most recently elects, as the controller's own record of first sightings says (a time no
//! publisher writes, and no request to read); tags first listed at the same scan by their
//! image's creation time, where known; then by name, the byte-greatest first. Pure: the
//! sightings and creation times come in as data ([`Sightings`]).

use std::cmp::Ordering;
use std::collections::HashMap;

/// Tags of one sighting whose creation times are read to order them, at most: beyond, the
/// byte-greatest names are dated and the rest rank by name below them.
pub const MAX_DATED: usize = 64;

/// What orders tags by newest: when each was first seen, and the creation times known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sightings {
    seen: HashMap<String, i64>,
    /// When a tag without an entry was seen (0: before the controller).
    floor: i64,
    /// Creation times read (`None`: the image says nothing).
    created: HashMap<String, Option<i64>>,
    /// Whether the first sightings are the controller's record (offline tools may not have it).
    recorded: bool,
}

/// A tag's rank key: sighting, creation time (none lowest), name.
type Key<'t> = (i64, Option<i64>, &'t [u8]);

impl Sightings {
    /// The controller's record: `seen` (tag, Unix seconds) above `floor`.
    pub fn recorded(seen: impl IntoIterator<Item = (String, i64)>, floor: i64) -> Sightings {
        Sightings {
            seen: seen.into_iter().collect(),
            floor,
            created: HashMap::new(),
            recorded: true,
        }
    }

    /// No record: every tag counts as seen at once, so creation times and names decide.
    pub fn unknown() -> Sightings {
        Sightings::default()
    }

    /// Whether the first sightings are known (the controller's record was read).
    pub fn is_recorded(&self) -> bool {
        self.recorded
    }

    /// `tag`'s image was created at `at` (Unix seconds; `None`: it says nothing, and ranks
    /// below the dated).
    pub fn dated(mut self, tag: &str, at: Option<i64>) -> Sightings {
        self.created.insert(tag.to_string(), at);
        self
    }

    /// When `tag` was first seen.
    pub fn seen(&self, tag: &str) -> i64 {
        self.seen
            .get(tag)
            .map_or(self.floor, |at| (*at).max(self.floor))
    }

    /// When `tag`'s image was created: `None` when not read, `Some(None)` when it says
    /// nothing.
    pub fn created(&self, tag: &str) -> Option<Option<i64>> {
        self.created.get(tag).copied()
    }

    fn key<'t>(&self, tag: &'t str) -> Key<'t> {
        (self.seen(tag), self.created(tag).flatten(), tag.as_bytes())
    }

    /// Orders two tags, greater = newer.
    pub fn rank(&self, a: &str, b: &str) -> Ordering {
        self.key(a).cmp(&self.key(b))
    }

    /// The newest of `tags`.
    pub fn newest<'t>(&self, tags: impl IntoIterator<Item = &'t str>) -> Option<&'t str> {
        tags.into_iter().max_by(|a, b| self.rank(a, b))
    }

    /// The tags whose creation time decides the election and is not known: those sharing
    /// the newest sighting with another (the byte-greatest [`MAX_DATED`] of them), undated.
    pub fn to_date<'t>(&self, tags: impl IntoIterator<Item = &'t str>) -> Vec<&'t str> {
        let mut newest: Vec<&str> = Vec::new();
        let mut at = i64::MIN;
        for tag in tags {
            match self.seen(tag).cmp(&at) {
                Ordering::Greater => {
                    at = self.seen(tag);
                    newest.clear();
                    newest.push(tag);
                }
                Ordering::Equal => newest.push(tag),
                Ordering::Less => {}
            }
        }
        if newest.len() < 2 {
            return Vec::new();
        }
        newest.sort_unstable_by(|a, b| b.as_bytes().cmp(a.as_bytes()));
        newest.truncate(MAX_DATED);
        newest.retain(|t| self.created(t).is_none());
        newest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(entries: &[(&str, i64)], floor: i64) -> Sightings {
        Sightings::recorded(entries.iter().map(|(t, at)| (t.to_string(), *at)), floor)
    }

    #[test]
    fn the_tag_first_seen_last_is_the_newest_whatever_its_name_or_date() {
        let s = seen(&[("main-aaa", 300), ("main-zzz", 200)], 0).dated("main-zzz", Some(9_999));
        assert_eq!(s.newest(["main-zzz", "main-aaa", "old"]), Some("main-aaa"));
        assert_eq!(
            s.seen("old"),
            0,
            "listed at the first scan: before the controller"
        );
        assert!(s.is_recorded() && !Sightings::unknown().is_recorded());
        // A sighting below the floor (forgotten entries) counts at the floor, never earlier.
        let floored = seen(&[("a", 5)], 100);
        assert_eq!(floored.seen("a"), 100);
        assert_eq!(floored.seen("b"), 100);
    }

    #[test]
    fn one_sighting_is_ordered_by_creation_time_then_by_name() {
        let s = seen(&[], 0).dated("b", Some(50)).dated("a", Some(70));
        assert_eq!(s.newest(["a", "b", "c"]), Some("a"), "the latest created");
        assert_eq!(s.rank("c", "b"), Ordering::Less, "undated below dated");
        let undated = seen(&[], 0);
        assert_eq!(
            undated.newest(["a", "c", "b"]),
            Some("c"),
            "the byte-greatest name"
        );
        assert_eq!(undated.newest(std::iter::empty()), None);
    }

    #[test]
    fn only_a_tie_at_the_newest_sighting_needs_dating_and_it_is_bounded() {
        let s = seen(&[("new", 300)], 0);
        assert!(
            s.to_date(["new", "a", "b"]).is_empty(),
            "one newest: nothing to read"
        );
        let tied = seen(&[("x", 300), ("y", 300)], 0).dated("y", None);
        assert_eq!(
            tied.to_date(["x", "y", "old"]),
            ["x"],
            "y was read: it says nothing"
        );
        let many: Vec<String> = (0..100).map(|i| format!("t{i:03}")).collect();
        let first_scan = Sightings::unknown();
        let to_date = first_scan.to_date(many.iter().map(String::as_str));
        assert_eq!(to_date.len(), MAX_DATED);
        assert_eq!((to_date[0], to_date[MAX_DATED - 1]), ("t099", "t036"));
    }
}
