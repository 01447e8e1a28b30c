//! One cached object as one allocation: its `namespace/name` and its JSON together.
//!
//! As a key and a value apart, the key outlived every value it was stored with: a map keeps
//! the key it has when a value is replaced, and an object's first versions (as listed, before
//! its finalizer and status) were freed around keys allocated next to them. At 5,000
//! repositories and policies the cold start's peak held about 5 MB of free chunks of 430–530
//! bytes, which the heap could neither give back nor reuse for the larger versions that
//! replaced them (glibc's `malloc_info`); with one allocation per version, freed whole, the
//! free chunks there fell from about 22,400 to 10,000 (docs/benchmarks.md).
//!
//! The entry is written once, at its exact size: serde_json writes into a scratch buffer of
//! the thread's, and the entry is copied out of it (a vector grown by doubling, then shrunk,
//! leaves its tail free behind the entry).

use std::borrow::Borrow;
use std::cell::RefCell;
use std::hash::{Hash, Hasher};

/// The scratch buffer a thread keeps between entries; a larger one (an unusually large
/// object) is let go after use.
const SCRATCH_KEPT: usize = 64 * 1024;

/// `[key length: u16][key][JSON]`. Hashed and compared by its key, so a set of entries is
/// looked up by `&str`.
pub struct Entry(Box<[u8]>);

/// Why an entry could not be written.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error("a key of {0} bytes does not fit an entry")]
    KeyTooLong(usize),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl Entry {
    /// `value` as JSON under `key`, in one allocation of exactly its size.
    pub fn new<T: serde::Serialize + ?Sized>(key: &str, value: &T) -> Result<Entry, EntryError> {
        let len = u16::try_from(key.len()).map_err(|_| EntryError::KeyTooLong(key.len()))?;
        SCRATCH.with(|scratch| {
            // A nested entry (never made today) would find the buffer taken: it gets its own.
            let mut own = Vec::new();
            let mut borrowed = scratch.try_borrow_mut();
            let buf = match borrowed.as_deref_mut() {
                Ok(buf) => buf,
                Err(_) => &mut own,
            };
            buf.clear();
            buf.extend_from_slice(&len.to_le_bytes());
            buf.extend_from_slice(key.as_bytes());
            let written = serde_json::to_writer(&mut *buf, value);
            let entry = written.map(|()| Entry(Box::from(&buf[..])));
            if buf.capacity() > SCRATCH_KEPT {
                *buf = Vec::new();
            }
            entry.map_err(EntryError::from)
        })
    }

    fn key_len(&self) -> usize {
        usize::from(u16::from_le_bytes([self.0[0], self.0[1]]))
    }

    /// `namespace/name`.
    pub fn key(&self) -> &str {
        let bytes = &self.0[2..2 + self.key_len()];
        // Written from a `&str` in `new` and never changed.
        std::str::from_utf8(bytes).unwrap_or_default()
    }

    /// The object's JSON.
    pub fn json(&self) -> &[u8] {
        &self.0[2 + self.key_len()..]
    }

    /// The bytes allocated.
    #[cfg(test)]
    pub fn size(&self) -> usize {
        self.0.len()
    }
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

    #[test]
    fn an_entry_holds_its_key_and_json_at_their_size() {
        let entry =
            Entry::new("team/app", &serde_json::json!({"spec": {"image": "r/app"}})).unwrap();
        assert_eq!(entry.key(), "team/app");
        assert_eq!(entry.json(), br#"{"spec":{"image":"r/app"}}"#);
        assert_eq!(entry.0.len(), 2 + "team/app".len() + entry.json().len());
    }

    #[test]
    fn a_set_of_entries_is_looked_up_and_replaced_by_key() {
        let mut set = HashSet::new();
        set.insert(Entry::new("team/app", &1).unwrap());
        set.insert(Entry::new("team/web", &2).unwrap());
        // `replace`, unlike a map's `insert`, puts the new key in too: the old entry goes whole.
        let old = set.replace(Entry::new("team/app", &3).unwrap()).unwrap();
        assert_eq!(old.json(), b"1");
        assert_eq!(set.get("team/app").unwrap().json(), b"3");
        assert_eq!(set.len(), 2);
        assert!(!set.contains("team/other"));
    }

    #[test]
    fn a_key_too_long_for_an_entry_is_refused() {
        let key = "k".repeat(usize::from(u16::MAX) + 1);
        assert!(matches!(
            Entry::new(&key, &1),
            Err(EntryError::KeyTooLong(n)) if n == key.len()
        ));
    }

    #[test]
    fn a_large_object_does_not_stay_in_the_scratch_buffer() {
        let big = "x".repeat(SCRATCH_KEPT * 2);
        let entry = Entry::new("team/big", &big).unwrap();
        assert_eq!(entry.json().len(), big.len() + 2);
        SCRATCH.with(|s| assert!(s.borrow().capacity() <= SCRATCH_KEPT));
        let small = Entry::new("team/small", &1).unwrap();
        assert_eq!(small.json(), b"1");
    }
}
