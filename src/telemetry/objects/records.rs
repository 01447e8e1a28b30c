//! Where the object records live: in pages, not one allocation each (issue 49).

use std::collections::HashMap;
use std::hash::Hash;

/// How many records a page holds: about 24 KB, allocated when the one before is full.
const RECORDS_PER_PAGE: usize = 256;

/// The records in pages, found by their key's index. A record boxed on its own was a 112-byte
/// allocation made during the object's first reconcile, between that reconcile's transient
/// buffers (a response's 8 KiB, its parsed objects), and it outlived them: at 10,000
/// repositories and policies, most of the 10 KiB free chunks the cold start left in the heap
/// had a record right after them (docs/benchmarks-history.md). Pages are a few large allocations, kept
/// once made: a forgotten object's slot is blanked and reused, so they hold at most the most
/// objects ever watched at once.
pub(super) struct Records<K, R> {
    index: HashMap<K, usize>,
    pages: Vec<Box<[R]>>,
    /// Slots of forgotten objects, reused first.
    free: Vec<usize>,
}

impl<K, R> Default for Records<K, R> {
    fn default() -> Self {
        Records {
            index: HashMap::new(),
            pages: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<K: Hash + Eq, R: Default> Records<K, R> {
    fn slot(&self, at: usize) -> &R {
        &self.pages[at / RECORDS_PER_PAGE][at % RECORDS_PER_PAGE]
    }

    pub(super) fn get(&self, key: &K) -> Option<&R> {
        self.index.get(key).map(|at| self.slot(*at))
    }

    pub(super) fn get_or_insert(&mut self, key: K) -> &R {
        if let Some(at) = self.index.get(&key) {
            return self.slot(*at);
        }
        let at = match self.free.pop() {
            // Blanked when it was freed.
            Some(at) => at,
            // No slot free: every slot below the number of records is taken.
            None => {
                let next = self.index.len();
                if next == self.pages.len() * RECORDS_PER_PAGE {
                    let page = (0..RECORDS_PER_PAGE).map(|_| R::default()).collect();
                    self.pages.push(page);
                }
                next
            }
        };
        self.index.insert(key, at);
        self.slot(at)
    }

    pub(super) fn remove(&mut self, key: &K) {
        if let Some(at) = self.index.remove(key) {
            // Blank now: what the record holds (a policy's elected image) goes with the object.
            self.pages[at / RECORDS_PER_PAGE][at % RECORDS_PER_PAGE] = R::default();
            self.free.push(at);
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&K, &R)> {
        self.index.iter().map(|(key, at)| (key, self.slot(*at)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[derive(Default)]
    struct Count(AtomicU64);

    fn key(name: &str) -> String {
        format!("team/{name}")
    }

    #[test]
    fn a_forgotten_slot_is_reused_blank() {
        let mut records = Records::<String, Count>::default();
        records
            .get_or_insert(key("a"))
            .0
            .store(3, Ordering::Relaxed);
        records.remove(&key("a"));
        assert!(records.get(&key("a")).is_none());
        let b = records.get_or_insert(key("b"));
        assert_eq!(b.0.load(Ordering::Relaxed), 0, "the slot was a's: blank");
        assert_eq!(records.pages.len(), 1);
        assert_eq!(records.index.len(), 1);
        assert!(records.free.is_empty(), "a's slot went to b");
    }

    #[test]
    fn records_fill_pages_in_turn() {
        let mut records = Records::<String, Count>::default();
        for i in 0..=RECORDS_PER_PAGE {
            records
                .get_or_insert(key(&format!("p{i}")))
                .0
                .store(i as u64, Ordering::Relaxed);
        }
        assert_eq!(records.pages.len(), 2);
        assert_eq!(records.iter().count(), RECORDS_PER_PAGE + 1);
        for i in 0..=RECORDS_PER_PAGE {
            let r = records.get(&key(&format!("p{i}"))).unwrap();
            assert_eq!(
                r.0.load(Ordering::Relaxed),
                i as u64,
                "p{i} has its own slot"
            );
        }
    }
}
