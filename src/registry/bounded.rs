//! A table whose keys a tenant or a registry chooses (hosts, routes, identities): at most `N`
//! entries, the least recently used dropped first, so no object count and no registry answer
//! grows the process without bound (docs/security.md).

use lru::LruCache;
use std::hash::Hash;
use std::num::NonZeroUsize;
use std::sync::{Mutex, MutexGuard};

pub(super) struct Bounded<K: Hash + Eq, V, const N: usize>(Mutex<LruCache<K, V>>);

impl<K: Hash + Eq, V, const N: usize> Default for Bounded<K, V, N> {
    fn default() -> Self {
        Bounded(Mutex::new(LruCache::new(
            NonZeroUsize::new(N).expect("a bound above zero"),
        )))
    }
}

impl<K: Hash + Eq, V, const N: usize> Bounded<K, V, N> {
    /// The table; `put` drops the least recently used entry when it is full, `get` marks use.
    pub(super) fn lock(&self) -> MutexGuard<'_, LruCache<K, V>> {
        self.0.lock().expect("bounded table lock")
    }
}

impl<K: Hash + Eq, V, const N: usize> std::fmt::Debug for Bounded<K, V, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bounded({} of {N})", self.lock().len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_entry_goes_first() {
        let table: Bounded<u32, u32, 3> = Bounded::default();
        for k in 0..3 {
            table.lock().put(k, k);
        }
        assert_eq!(table.lock().get(&0), Some(&0), "0 used again");
        table.lock().put(3, 3);
        let mut keys: Vec<u32> = table.lock().iter().map(|(k, _)| *k).collect();
        keys.sort();
        assert_eq!(keys, [0, 2, 3], "1 was the least recently used");
        for k in 10..1000 {
            table.lock().put(k, k);
        }
        assert_eq!(table.lock().len(), 3);
    }
}
