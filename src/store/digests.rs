//! When each tag's digest was last fetched from the registry, kept beside the repository's tags
//! (`digests.txt`, docs/store.md): a restarted controller then knows which `Always` policies
//! are due for a manifest request and which checked theirs minutes ago (docs/imagepolicy.md).
//!
//! Advisory, never authoritative: a lost or unreadable file only means requests that were not
//! yet due, so it is written without fsync and anything malformed is skipped. Bounded: at most
//! `MAX_FACTS` tags, the oldest checks dropped first, and a file over `MAX_FILE_BYTES` is not
//! read.

use super::MAX_TAG_LEN;

/// Tags remembered per repository: policies elect one tag each, and a gated walk (docs/imagepolicy.md)
/// looks at the digests of up to 50 candidates.
pub const MAX_FACTS: usize = 128;
/// A file larger than the facts it may hold is not ours to read.
pub const MAX_FILE_BYTES: u64 = (MAX_FACTS * (MAX_TAG_LEN + 100)) as u64;
/// The longest digest kept (`sha512:` and 128 hex digits, with room to spare).
const MAX_DIGEST_LEN: usize = 200;

/// A tag's digest as fetched at `checked_at` (Unix seconds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DigestFact {
    pub digest: String,
    pub checked_at: i64,
}

/// The facts of one repository, newest check last.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DigestFacts(Vec<(String, DigestFact)>);

impl DigestFacts {
    /// Reads `<tag> <digest> <unix seconds>` lines; lines that are not that are skipped.
    pub fn parse(text: &str) -> DigestFacts {
        let mut facts = DigestFacts::default();
        for line in text.lines() {
            let mut fields = line.split(' ');
            let (Some(tag), Some(digest), Some(at), None) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            let Ok(checked_at) = at.parse::<i64>() else {
                continue;
            };
            if valid(tag, digest) {
                facts.record(
                    tag,
                    DigestFact {
                        digest: digest.into(),
                        checked_at,
                    },
                );
            }
        }
        facts
    }

    pub fn render(&self) -> String {
        self.0
            .iter()
            .map(|(tag, f)| format!("{tag} {} {}\n", f.digest, f.checked_at))
            .collect()
    }

    /// Each tag with its fact.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &DigestFact)> {
        self.0.iter().map(|(tag, f)| (tag.as_str(), f))
    }

    pub fn get(&self, tag: &str) -> Option<&DigestFact> {
        self.0.iter().find(|(t, _)| t == tag).map(|(_, f)| f)
    }

    /// Records `fact` for `tag`, replacing what was known; beyond `MAX_FACTS` the oldest
    /// check is forgotten.
    pub fn record(&mut self, tag: &str, fact: DigestFact) {
        if !valid(tag, &fact.digest) {
            return;
        }
        self.0.retain(|(t, _)| t != tag);
        self.0.push((tag.to_string(), fact));
        self.0.sort_by_key(|(_, f)| f.checked_at);
        if self.0.len() > MAX_FACTS {
            self.0.remove(0);
        }
    }
}

/// A tag and digest that can be written on one line and read back.
fn valid(tag: &str, digest: &str) -> bool {
    let printable = |s: &str| s.bytes().all(|b| b.is_ascii_graphic());
    !tag.is_empty()
        && tag.len() <= MAX_TAG_LEN
        && !digest.is_empty()
        && digest.len() <= MAX_DIGEST_LEN
        && printable(tag)
        && printable(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(digest: &str, checked_at: i64) -> DigestFact {
        DigestFact {
            digest: digest.into(),
            checked_at,
        }
    }

    #[test]
    fn round_trips_and_replaces() {
        let mut facts = DigestFacts::default();
        facts.record("1.0.0", fact("sha256:aa", 10));
        facts.record("1.1.0", fact("sha256:bb", 20));
        facts.record("1.0.0", fact("sha256:cc", 30));
        let read = DigestFacts::parse(&facts.render());
        assert_eq!(read, facts);
        assert_eq!(read.get("1.0.0"), Some(&fact("sha256:cc", 30)));
        assert_eq!(read.get("1.1.0"), Some(&fact("sha256:bb", 20)));
        assert_eq!(read.get("2.0.0"), None);
    }

    #[test]
    fn keeps_the_newest_checks_only() {
        let mut facts = DigestFacts::default();
        for i in 0..(MAX_FACTS as i64 + 10) {
            facts.record(&format!("t{i}"), fact("sha256:aa", i));
        }
        assert_eq!(facts.0.len(), MAX_FACTS);
        assert_eq!(facts.get("t0"), None, "the oldest check is forgotten");
        assert!(facts.get(&format!("t{}", MAX_FACTS + 9)).is_some());
        assert!(facts.render().len() as u64 <= MAX_FILE_BYTES);
    }

    #[test]
    fn skips_what_is_not_a_fact() {
        let text = "1.0.0 sha256:aa 5\nno-time sha256:bb\n1.1.0 sha256:cc soon\n\
                    a b c d\n1.2.0 sha256:dd 7\n";
        let facts = DigestFacts::parse(text);
        assert_eq!(facts.0.len(), 2);
        let long = "x".repeat(MAX_TAG_LEN + 1);
        let mut facts = DigestFacts::default();
        facts.record(&long, fact("sha256:aa", 1));
        facts.record("tag\nwith-newline", fact("sha256:aa", 1));
        facts.record("1.0.0", fact("sha256:a b", 1));
        assert_eq!(
            facts,
            DigestFacts::default(),
            "nothing unreadable is recorded"
        );
    }
}
