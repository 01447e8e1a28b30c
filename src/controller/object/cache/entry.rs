//! One cached object as one allocation: its `namespace/name` and its JSON together.
//!
//! As a key and a value apart, the key outlived every value it was stored with: a map keeps
//! the key it has when a value is replaced, and an object's first versions (as listed, before
//! its finalizer and status) were freed around keys allocated next to them. At 5,000
//! repositories and policies the cold start's peak held about 5 MB of free chunks of 430–530
//! bytes, which the heap could neither give back nor reuse for the larger versions that
//! replaced them (glibc's `malloc_info`); with one allocation per version, freed whole, the
//! free chunks there fell from about 22,400 to 10,000 (docs/benchmarks-history.md).
//!
//! An entry is written from a thread's scratch buffer (a `Vec` grown by doubling and shrunk
//! would leave its tail free behind the entry), with a little room to grow, and a new version
//! of the object that fits is written over the old one in place. Most updates change times,
//! counts and a resource version, not lengths, or grow by an annotation or a field: as a new
//! allocation each, every version an update replaced was a hole in the heap that the next,
//! larger versions could not reuse. A steady cycle replaced each repository twice (the request,
//! then its status), and those holes were what the resident set held above the live heap at
//! its peak (docs/benchmarks-history.md, "The heap's holes").

use std::borrow::Borrow;
use std::cell::RefCell;
use std::hash::{Hash, Hasher};

/// The scratch buffer a thread keeps between entries; a larger one (an unusually large
/// object) is let go after use.
const SCRATCH_KEPT: usize = 64 * 1024;

/// `[key length: u16][JSON length: u32]`.
const HEADER: usize = 6;

/// The room to grow an entry is given: an eighth of its size, at least this...
const ROOM_MIN: usize = 64;
/// ... and at most this, whatever the object's size.
const ROOM_MAX: usize = 1024;

/// `[key length: u16][JSON length: u32][key][JSON][room]`. Hashed and compared by its key, so
/// a set of entries is looked up by `&str`.
pub struct Entry(Box<[u8]>);

/// Why an entry could not be written.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error("a key of {0} bytes does not fit an entry")]
    KeyTooLong(usize),
    #[error("an object of {0} bytes does not fit an entry")]
    TooLarge(usize),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// An object encoded as an entry's bytes (header, key and JSON) in the thread's scratch
/// buffer, which it gives back when dropped; made before a cache's lock is taken, so readers
/// wait only for the copy.
pub struct Encoded(Vec<u8>);

impl Encoded {
    /// `value` as JSON under `key`.
    pub fn new<T: serde::Serialize + ?Sized>(key: &str, value: &T) -> Result<Encoded, EntryError> {
        let key_len = u16::try_from(key.len()).map_err(|_| EntryError::KeyTooLong(key.len()))?;
        // A nested encoding (never made today) finds the buffer taken, and gets its own.
        let mut buf = SCRATCH
            .with(|scratch| {
                scratch
                    .try_borrow_mut()
                    .map(|mut b| std::mem::take(&mut *b))
            })
            .unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(&key_len.to_le_bytes());
        buf.extend_from_slice(&[0; 4]);
        buf.extend_from_slice(key.as_bytes());
        let mut encoded = Encoded(buf);
        serde_json::to_writer(&mut encoded.0, value)?;
        let json_len = encoded.0.len() - HEADER - key.len();
        let json_len = u32::try_from(json_len).map_err(|_| EntryError::TooLarge(json_len))?;
        encoded.0[2..HEADER].copy_from_slice(&json_len.to_le_bytes());
        Ok(encoded)
    }

    /// `namespace/name`.
    pub fn key(&self) -> &str {
        key_of(&self.0)
    }
}

impl Drop for Encoded {
    fn drop(&mut self) {
        if self.0.capacity() > SCRATCH_KEPT {
            return;
        }
        let buf = std::mem::take(&mut self.0);
        SCRATCH.with(|scratch| {
            if let Ok(mut kept) = scratch.try_borrow_mut() {
                if kept.capacity() < buf.capacity() {
                    *kept = buf;
                }
            }
        });
    }
}

/// The bytes an entry of `used` bytes is allocated with: its room to grow added, and rounded
/// so that the allocation fills glibc's chunk (16-byte multiples with 8 bytes of header), whose
/// tail would be spare anyway.
fn allocation(used: usize) -> usize {
    (used + room(used) + 8).next_multiple_of(16) - 8
}

fn room(used: usize) -> usize {
    (used / 8).clamp(ROOM_MIN, ROOM_MAX)
}

impl Entry {
    /// `encoded` as a new entry.
    pub fn new(encoded: &Encoded) -> Entry {
        let used = &encoded.0[..];
        let mut bytes = vec![0; allocation(used.len())].into_boxed_slice();
        bytes[..used.len()].copy_from_slice(used);
        Entry(bytes)
    }

    /// The entry's next version, of the same key: `encoded` over this one's bytes when it fits
    /// in them and leaves at most twice the room a new entry would have (a version a little
    /// shorter stays too), else a new entry.
    pub fn rewritten(mut self, encoded: &Encoded) -> Entry {
        debug_assert_eq!(self.key(), encoded.key());
        let used = &encoded.0[..];
        let spare = self.0.len().checked_sub(used.len());
        if spare.is_some_and(|spare| spare <= 2 * room(used.len())) {
            self.0[..used.len()].copy_from_slice(used);
            self
        } else {
            Entry::new(encoded)
        }
    }

    /// `namespace/name`.
    pub fn key(&self) -> &str {
        key_of(&self.0)
    }

    /// The object's JSON.
    pub fn json(&self) -> &[u8] {
        let len = u32::from_le_bytes([self.0[2], self.0[3], self.0[4], self.0[5]]);
        let start = HEADER + key_len(&self.0);
        // The length was written with the JSON, and the JSON fits the entry.
        let end = usize::try_from(len).map_or(start, |len| start + len);
        self.0.get(start..end).unwrap_or_default()
    }

    /// The bytes allocated.
    #[cfg(test)]
    pub fn size(&self) -> usize {
        self.0.len()
    }
}

/// The key's length, from an entry's (or an encoding's) header.
fn key_len(bytes: &[u8]) -> usize {
    usize::from(u16::from_le_bytes([bytes[0], bytes[1]]))
}

fn key_of(bytes: &[u8]) -> &str {
    // Written from a `&str` and never changed: a rewrite is of the same key.
    std::str::from_utf8(&bytes[HEADER..HEADER + key_len(bytes)]).unwrap_or_default()
}

impl Borrow<str> for Entry {
    fn borrow(&self) -> &str {
        self.key()
    }
}

/// As the key's `str` hashes, which `Borrow<str>` requires.
impl Hash for Entry {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Entry {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn entry<T: serde::Serialize + ?Sized>(key: &str, value: &T) -> Entry {
        Entry::new(&Encoded::new(key, value).unwrap())
    }

    #[test]
    fn an_entry_holds_its_key_and_json_and_room_to_grow() {
        let entry = entry("team/app", &serde_json::json!({"spec": {"image": "r/app"}}));
        assert_eq!(entry.key(), "team/app");
        assert_eq!(entry.json(), br#"{"spec":{"image":"r/app"}}"#);
        let used = HEADER + "team/app".len() + entry.json().len();
        assert!(
            entry.size() >= used + ROOM_MIN,
            "{} for {used}",
            entry.size()
        );
        assert!(entry.size() < used + ROOM_MIN + 16);
        assert_eq!((entry.size() + 8) % 16, 0, "fills its chunk");
    }

    #[test]
    fn the_room_is_an_eighth_of_the_entry_within_bounds() {
        assert_eq!(room(100), ROOM_MIN);
        assert_eq!(room(2_000), 250);
        // A tenant's large object (the API server takes up to about 1.5 MiB) gets no more.
        assert_eq!(room(1_500_000), ROOM_MAX);
        for used in [0, 1, 7, 8, 9, 500, 1_500_000] {
            let size = allocation(used);
            assert!(size >= used + room(used) && size < used + room(used) + 16);
        }
    }

    #[test]
    fn a_version_that_fits_is_written_in_place() {
        let first = entry("team/app", "a".repeat(1_000).as_str());
        let at = first.json().as_ptr();
        let size = first.size();
        // Longer, by less than the room: the same bytes.
        let longer = "b".repeat(1_000 + ROOM_MIN);
        let second = first.rewritten(&Encoded::new("team/app", longer.as_str()).unwrap());
        assert_eq!(second.json(), format!("\"{longer}\"").as_bytes());
        assert_eq!((second.json().as_ptr(), second.size()), (at, size));
        // A little shorter: still in place.
        let third = second.rewritten(&Encoded::new("team/app", "c".repeat(990).as_str()).unwrap());
        assert_eq!(third.json().len(), 992);
        assert_eq!((third.json().as_ptr(), third.size()), (at, size));
        assert_eq!(third.key(), "team/app");
    }

    #[test]
    fn a_version_that_does_not_fit_or_wastes_the_room_is_a_new_entry() {
        let first = entry("team/app", "a".repeat(1_000).as_str());
        let size = first.size();
        let grown = first.rewritten(&Encoded::new("team/app", "b".repeat(size).as_str()).unwrap());
        assert!(grown.size() > size);
        assert_eq!(grown.json().len(), size + 2);
        let big = grown.size();
        let shrunk = grown.rewritten(&Encoded::new("team/app", "c").unwrap());
        assert_eq!(shrunk.json(), b"\"c\"");
        assert!(shrunk.size() < big / 4, "{} of {big}", shrunk.size());
    }

    #[test]
    fn a_set_of_entries_is_looked_up_and_replaced_by_key() {
        let mut set = HashSet::new();
        set.insert(entry("team/app", &1));
        set.insert(entry("team/web", &2));
        // `replace`, unlike a map's `insert`, puts the new key in too: the old entry goes whole.
        let old = set.replace(entry("team/app", &3)).unwrap();
        assert_eq!(old.json(), b"1");
        assert_eq!(set.get("team/app").unwrap().json(), b"3");
        assert_eq!(set.len(), 2);
        assert!(!set.contains("team/other"));
    }

    #[test]
    fn a_key_too_long_for_an_entry_is_refused() {
        let key = "k".repeat(usize::from(u16::MAX) + 1);
        assert!(matches!(
            Encoded::new(&key, &1),
            Err(EntryError::KeyTooLong(n)) if n == key.len()
        ));
    }

    #[test]
    fn a_large_object_does_not_stay_in_the_scratch_buffer() {
        let big = "x".repeat(SCRATCH_KEPT * 2);
        let large = entry("team/big", big.as_str());
        assert_eq!(large.json().len(), big.len() + 2);
        assert_eq!(large.size(), allocation(HEADER + 8 + big.len() + 2));
        SCRATCH.with(|s| assert!(s.borrow().capacity() <= SCRATCH_KEPT));
        let small = entry("team/small", &1);
        assert_eq!(small.json(), b"1");
        SCRATCH.with(|s| assert!(s.borrow().capacity() > 0, "a small one is kept"));
    }
}
