//! A repository's tags as the store holds them: one buffer of `tag\n` lines in descending byte
//! order, which is exactly the `tags.txt` content and what the revision is computed over.
//!
//! One contiguous buffer, walked front to back, is also the fastest shape for an election over
//! 100k tags (no pointer chasing).

use super::StoreError;
use sha2::{Digest, Sha256};
use std::fmt;

/// The longest tag line the store accepts (Flux's filesystem store limit).
pub const MAX_TAG_LEN: usize = 1024;

/// Tags in descending byte order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TagList {
    text: String,
    /// Where each tag's `\n` is; iterating by offsets costs a slice per tag, not a search.
    ends: Vec<u32>,
}

/// `sha256:<hex>` of the stored content; equal to Flux's filesystem-store revision.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Revision(String);

impl TagList {
    /// Sorts `tags` into the store's order. Duplicates are kept, as Flux keeps them.
    pub fn new<S: AsRef<str>>(tags: impl IntoIterator<Item = S>) -> Result<Self, StoreError> {
        let mut sorted: Vec<S> = tags.into_iter().collect();
        for t in &sorted {
            validate_tag(t.as_ref())?;
        }
        sorted.sort_unstable_by(|a, b| b.as_ref().as_bytes().cmp(a.as_ref().as_bytes()));
        let mut text = String::with_capacity(sorted.iter().map(|t| t.as_ref().len() + 1).sum());
        let mut ends = Vec::with_capacity(sorted.len());
        for t in &sorted {
            text.push_str(t.as_ref());
            ends.push(offset(text.len())?);
            text.push('\n');
        }
        Ok(TagList { text, ends })
    }

    /// Reads stored content; anything that is not whole, valid, sorted lines is corrupt.
    pub fn from_stored(text: String) -> Result<Self, StoreError> {
        if !text.is_empty() && !text.ends_with('\n') {
            return Err(StoreError::Corrupt("the last line is incomplete".into()));
        }
        let mut ends = Vec::new();
        let mut previous: Option<&str> = None;
        let mut start = 0;
        for line in text.split_terminator('\n') {
            validate_tag(line).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            if previous.is_some_and(|p| p.as_bytes() < line.as_bytes()) {
                return Err(StoreError::Corrupt(
                    "tags are not in descending order".into(),
                ));
            }
            previous = Some(line);
            start += line.len();
            ends.push(offset(start).map_err(|e| StoreError::Corrupt(e.to_string()))?);
            start += 1;
        }
        Ok(TagList { text, ends })
    }

    /// The tags, in descending byte order (from either end).
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            text: &self.text,
            ends: self.ends.iter(),
            start: 0,
        }
    }

    /// Number of tags.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are no tags.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The first `n` tags (Flux's `lastScanResult.latestTags` takes 10).
    pub fn first(&self, n: usize) -> Vec<String> {
        self.iter().take(n).map(str::to_string).collect()
    }

    /// The stored content: every tag followed by `\n`.
    pub fn as_text(&self) -> &str {
        &self.text
    }

    /// The revision of this content.
    pub fn revision(&self) -> Revision {
        Revision::of(self.text.as_bytes())
    }

    /// The `i`th tag in the store's order.
    fn at(&self, i: usize) -> &str {
        let start = match i {
            0 => 0,
            _ => self.ends[i - 1] as usize + 1,
        };
        &self.text[start..self.ends[i] as usize]
    }

    /// Whether `tag` is listed (a binary search over the descending order).
    pub fn contains(&self, tag: &str) -> bool {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let mid = low + (high - low) / 2;
            match self.at(mid).as_bytes().cmp(tag.as_bytes()) {
                std::cmp::Ordering::Equal => return true,
                // Descending: a greater tag comes earlier.
                std::cmp::Ordering::Greater => low = mid + 1,
                std::cmp::Ordering::Less => high = mid,
            }
        }
        false
    }

    /// The tags listed here and not in `before`, in the store's order (one walk of both).
    pub fn minus<'a>(&'a self, before: &TagList) -> Vec<&'a str> {
        let mut old = before.iter().peekable();
        let mut new = Vec::new();
        for tag in self.iter() {
            while old.next_if(|o| o.as_bytes() > tag.as_bytes()).is_some() {}
            if old.peek() != Some(&tag) {
                new.push(tag);
            }
        }
        new
    }
}

impl Revision {
    /// `sha256:<hex>` of `content`.
    pub fn of(content: &[u8]) -> Self {
        let digest = Sha256::digest(content);
        let mut text = String::with_capacity(7 + 64);
        text.push_str("sha256:");
        for byte in digest {
            text.push_str(&format!("{byte:02x}"));
        }
        Revision(text)
    }

    /// The revision as written in `status.lastScanResult.revision`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The digest's 32 bytes, when this is a `sha256:` revision: what a store keeps per
    /// repository to compare with (a third of the text's memory).
    pub fn digest(&self) -> Option<[u8; 32]> {
        let hex = self.0.strip_prefix("sha256:")?.as_bytes();
        if hex.len() != 64 {
            return None;
        }
        let mut digest = [0u8; 32];
        for (byte, pair) in digest.iter_mut().zip(hex.chunks(2)) {
            let pair = std::str::from_utf8(pair).ok()?;
            *byte = u8::from_str_radix(pair, 16).ok()?;
        }
        Some(digest)
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Iterator over a [`TagList`], greatest tag first.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    text: &'a str,
    /// The `\n` positions of the tags not yet returned.
    ends: std::slice::Iter<'a, u32>,
    /// Where the next tag from the front starts.
    start: usize,
}

impl<'a> Iter<'a> {
    #[inline(always)]
    fn tag(&self, start: usize, end: usize) -> &'a str {
        debug_assert!(start <= end && end < self.text.len() && self.text.as_bytes()[end] == b'\n');
        // SAFETY: `ends` holds the positions of the `\n` after each tag, established when the
        // list was built or read and never changed; an ASCII newline in a `String` is always a
        // char boundary, and so is the byte after it. This loop is the whole cost of some
        // elections, and the checked slice doubles it.
        unsafe { self.text.get_unchecked(start..end) }
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a str;

    #[inline(always)]
    fn next(&mut self) -> Option<&'a str> {
        let end = *self.ends.next()? as usize;
        let tag = self.tag(self.start, end);
        self.start = end + 1;
        Some(tag)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.ends.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let end = *self.ends.next_back()? as usize;
        let start = self
            .ends
            .as_slice()
            .last()
            .map_or(self.start, |&previous| previous as usize + 1);
        Some(self.tag(start, end))
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// Offsets are kept as u32: a 4 GiB tag list is far beyond any registry.
fn offset(n: usize) -> Result<u32, StoreError> {
    u32::try_from(n).map_err(|_| StoreError::InvalidTag("the tag list exceeds 4 GiB".into()))
}

fn validate_tag(tag: &str) -> Result<(), StoreError> {
    if tag.is_empty() || tag.len() > MAX_TAG_LEN || tag.contains(['\n', '\r']) {
        let shown: String = tag.chars().take(64).collect();
        return Err(StoreError::InvalidTag(shown));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_is_kept_as_its_digest_bytes() {
        let revision = TagList::new(["a"]).unwrap().revision();
        let digest = revision.digest().unwrap();
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(revision.as_str(), format!("sha256:{hex}"));
        // Not a sha256 revision of 32 bytes: nothing to keep or match.
        let not_hex = format!("sha256:{}", "zz".repeat(32));
        for text in [
            "",
            "sha256:",
            "sha512:00",
            &not_hex,
            &revision.as_str()[..70],
        ] {
            assert_eq!(Revision(text.into()).digest(), None, "{text}");
        }
        let long = format!("{}00", revision.as_str());
        assert_eq!(Revision(long).digest(), None);
    }

    #[test]
    fn sorts_descending_and_hashes_like_flux() {
        let list = TagList::new(["a", "d", "b", "c"]).unwrap();
        assert_eq!(list.iter().collect::<Vec<_>>(), ["d", "c", "b", "a"]);
        assert_eq!(list.iter().rev().collect::<Vec<_>>(), ["a", "b", "c", "d"]);
        let mut both = list.iter();
        assert_eq!(
            (both.next(), both.next_back(), both.next_back(), both.next()),
            (Some("d"), Some("a"), Some("b"), Some("c"))
        );
        assert_eq!((both.len(), both.next(), both.next_back()), (0, None, None));
        assert_eq!(list.as_text(), "d\nc\nb\na\n");
        assert_eq!(list.len(), 4);
        assert_eq!(
            TagList::default().revision().as_str(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn rejects_tags_that_would_break_the_format() {
        for bad in ["", "a\nb", "a\r", &"x".repeat(1025)] {
            assert!(
                matches!(TagList::new([bad]), Err(StoreError::InvalidTag(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn stored_content_must_be_whole_sorted_lines() {
        assert!(TagList::from_stored("b\na\n".into()).is_ok());
        assert!(TagList::from_stored(String::new()).unwrap().is_empty());
        for bad in ["b\na", "a\nb\n", "a\n\nb\n"] {
            assert!(
                matches!(
                    TagList::from_stored(bad.into()),
                    Err(StoreError::Corrupt(_))
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn contains_and_minus_walk_the_descending_order() {
        let new = TagList::new(["1.10.0", "1.9.0", "1.2.0", "latest", "a", "a"]).unwrap();
        let old = TagList::new(["1.9.0", "latest", "0.1.0"]).unwrap();
        for tag in ["1.10.0", "1.9.0", "1.2.0", "latest", "a"] {
            assert!(new.contains(tag), "{tag}");
        }
        for tag in ["", "1.1", "z", "0.1.0", "1.10"] {
            assert!(!new.contains(tag), "{tag}");
        }
        assert_eq!(new.minus(&old), ["a", "a", "1.2.0", "1.10.0"]);
        assert_eq!(old.minus(&new), ["0.1.0"]);
        assert!(new.minus(&new).is_empty());
        assert_eq!(new.minus(&TagList::default()).len(), new.len());
    }
}
