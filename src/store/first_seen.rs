//! When each tag was first seen by a scan, at which digest (`seen.txt`, docs/store.md): the
//! time `minAge` needs that a publisher does not write (an image's `created` is the
//! publisher's to set, and a re-pushed digest inherits its tag's age).
//!
//! - Tags listed at a repository's first scan were there before the controller: they count as
//!   seen long ago (time 0), so installing the controller does not freeze elections. So do
//!   the tags of a store that was lost (docs/imagepolicy.md says what that means).
//! - A tag a later scan lists for the first time is seen then.
//! - A tag whose digest, once resolved, differs from the one recorded was re-pushed: its clock
//!   restarts then.
//! - Bounded: at most [`MAX_SEEN`] entries. When more arrive, the oldest go, and the newest time
//!   that went becomes the floor: a tag without an entry counts as seen at the floor, never
//!   earlier, so forgetting can only make a tag look younger, never older.
//! - A file over [`MAX_SEEN_BYTES`], or unreadable, is read as "everything seen now": a tag is
//!   held for its minimum age rather than passed on a time the controller no longer knows.

use super::MAX_TAG_LEN;
use std::collections::HashMap;

/// Entries kept per repository.
pub const MAX_SEEN: usize = 4096;
/// The most a file of [`MAX_SEEN`] entries can take.
pub const MAX_SEEN_BYTES: u64 = (MAX_SEEN * (MAX_TAG_LEN + 240)) as u64;
const MAX_DIGEST_LEN: usize = 200;

/// One tag's first sighting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// Unix seconds.
    pub at: i64,
    /// The digest it named then, once resolved.
    pub digest: Option<String>,
}

/// The first sightings of one repository's tags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FirstSeen {
    entries: HashMap<String, Seen>,
    /// A tag without an entry was seen at this time (0: before the controller).
    floor: i64,
}

impl FirstSeen {
    /// Everything counts as seen at `at`: what an unreadable file means.
    pub fn all_at(at: i64) -> FirstSeen {
        FirstSeen {
            entries: HashMap::new(),
            floor: at,
        }
    }

    /// When `tag` was first seen (at its current digest, if that was recorded).
    pub fn at(&self, tag: &str) -> i64 {
        self.entries
            .get(tag)
            .map_or(self.floor, |s| s.at.max(self.floor))
    }

    /// Each recorded tag with when it was first seen (before the floor is applied).
    pub fn entries(&self) -> impl Iterator<Item = (&str, i64)> {
        self.entries.iter().map(|(tag, s)| (tag.as_str(), s.at))
    }

    /// When a tag without an entry was seen (0: before the controller).
    pub fn floor(&self) -> i64 {
        self.floor
    }

    /// `tags` were listed for the first time at `now`.
    pub fn arrived<'a>(&mut self, tags: impl IntoIterator<Item = &'a str>, now: i64) {
        for tag in tags {
            self.entries.insert(
                tag.to_string(),
                Seen {
                    at: now,
                    digest: None,
                },
            );
        }
        self.bound();
    }

    /// `tag` names `digest` now (resolved at `now`): a digest other than the recorded one
    /// restarts its clock. Returns whether anything changed.
    pub fn resolved(&mut self, tag: &str, digest: &str, now: i64) -> bool {
        let floor = self.floor;
        let seen = self.entries.entry(tag.to_string()).or_insert(Seen {
            at: floor,
            digest: None,
        });
        let changed = match &seen.digest {
            Some(recorded) if recorded == digest => return false,
            // A moved tag: a new image under an old name.
            Some(_) => {
                seen.at = now;
                true
            }
            None => true,
        };
        seen.digest = Some(digest.to_string());
        self.bound();
        changed
    }

    /// Drops the tags no longer listed (`listed` says which are); returns whether any went.
    pub fn retain(&mut self, listed: impl Fn(&str) -> bool) -> bool {
        let before = self.entries.len();
        self.entries.retain(|tag, _| listed(tag));
        self.entries.len() != before
    }

    fn bound(&mut self) {
        if self.entries.len() <= MAX_SEEN {
            return;
        }
        let mut times: Vec<i64> = self.entries.values().map(|s| s.at).collect();
        times.sort_unstable();
        let cut = times[self.entries.len() - MAX_SEEN - 1];
        self.entries.retain(|_, s| s.at > cut);
        self.floor = self.floor.max(cut);
    }

    /// `floor <t>` and one `<t> <tag> [<digest>]` line per entry; anything else is skipped.
    pub fn parse(text: &str) -> FirstSeen {
        let mut seen = FirstSeen::default();
        for line in text.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            match fields.as_slice() {
                ["floor", at] => {
                    if let Ok(at) = at.parse() {
                        seen.floor = at;
                    }
                }
                [at, tag, rest @ ..] if rest.len() <= 1 && valid(tag, rest.first()) => {
                    let Ok(at) = at.parse() else { continue };
                    let digest = rest.first().map(|d| d.to_string());
                    seen.entries.insert(tag.to_string(), Seen { at, digest });
                }
                _ => {}
            }
        }
        seen.bound();
        seen
    }

    pub fn render(&self) -> String {
        let mut lines: Vec<(&String, &Seen)> = self.entries.iter().collect();
        lines.sort_by(|a, b| a.1.at.cmp(&b.1.at).then(a.0.cmp(b.0)));
        let mut out = format!("floor {}\n", self.floor);
        for (tag, seen) in lines {
            match &seen.digest {
                Some(digest) => out.push_str(&format!("{} {tag} {digest}\n", seen.at)),
                None => out.push_str(&format!("{} {tag}\n", seen.at)),
            }
        }
        out
    }
}

fn valid(tag: &str, digest: Option<&&str>) -> bool {
    !tag.is_empty()
        && tag.len() <= MAX_TAG_LEN
        && digest.is_none_or(|d| !d.is_empty() && d.len() <= MAX_DIGEST_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_and_moved_digests_set_the_clock() {
        let mut seen = FirstSeen::default();
        assert_eq!(seen.at("1.0.0"), 0, "listed at the first scan: seen before");
        seen.arrived(["1.1.0"], 500);
        assert_eq!(seen.at("1.1.0"), 500);
        assert!(seen.resolved("1.1.0", "sha256:a", 600));
        assert_eq!(
            seen.at("1.1.0"),
            500,
            "the first digest keeps the arrival time"
        );
        assert!(!seen.resolved("1.1.0", "sha256:a", 700));
        assert!(seen.resolved("1.1.0", "sha256:b", 800));
        assert_eq!(seen.at("1.1.0"), 800, "a re-push restarts the clock");
        assert!(seen.resolved("1.0.0", "sha256:c", 900));
        assert_eq!(
            seen.at("1.0.0"),
            0,
            "an old tag's first digest keeps it old"
        );
        assert!(seen.resolved("1.0.0", "sha256:d", 1000));
        assert_eq!(seen.at("1.0.0"), 1000);
        let back = FirstSeen::parse(&seen.render());
        assert_eq!(back, seen);
        assert!(seen.retain(|t| t != "1.1.0"));
        assert!(!seen.retain(|t| t != "1.1.0"), "nothing left to drop");
        assert_eq!(seen.at("1.1.0"), 0);
    }

    #[test]
    fn forgetting_only_makes_tags_younger() {
        let mut seen = FirstSeen::default();
        // The documented bound (docs/security.md), written out: 4,096 first sightings.
        let tags: Vec<String> = (0..4106).map(|i| format!("t{i}")).collect();
        for (i, tag) in tags.iter().enumerate() {
            seen.arrived([tag.as_str()], i as i64 + 1);
        }
        assert_eq!(seen.entries.len(), 4096);
        assert_eq!(seen.at("t0"), 10, "forgotten: the newest time that went");
        assert_eq!(seen.at("never-listed"), 10);
        assert_eq!(seen.at("t4105"), 4106);
        assert!(seen.render().len() as u64 <= MAX_SEEN_BYTES);
    }

    #[test]
    fn malformed_lines_are_skipped() {
        let seen = FirstSeen::parse("floor 7\nx tag\n5 ok\n6 a b c\n\n9 d sha256:e\n");
        assert_eq!(seen.at("ok"), 7, "never before the floor");
        assert_eq!(seen.at("d"), 9);
        assert_eq!(seen.at("a"), 7);
        assert_eq!(FirstSeen::all_at(42).at("any"), 42);
    }
}
