//! A table whose keys a tenant or a registry chooses (hosts, routes, identities): at most `N`
//! entries, the least recently used dropped first, so no object count and no registry answer
//! grows the process without bound (docs/security.md).

use lru::LruCache;
use std::hash::Hash;
use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Entries with the time of their last use.
pub(super) struct Bounded<K: Hash + Eq, V, const N: usize>(Mutex<LruCache<K, (V, Instant)>>);

impl<K: Hash + Eq, V, const N: usize> Default for Bounded<K, V, N> {
    fn default() -> Self {
        Bounded(Mutex::new(LruCache::new(
            NonZeroUsize::new(N).expect("a bound above zero"),
        )))
    }
}

impl<K: Hash + Eq, V: Clone, const N: usize> Bounded<K, V, N> {
    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<K, (V, Instant)>> {
        self.0.lock().expect("bounded table lock")
    }

    /// The entry of `key`, marked used now.
    pub(super) fn get(&self, key: &K) -> Option<V> {
        let mut table = self.lock();
        let (value, used) = table.get_mut(key)?;
        *used = Instant::now();
        Some(value.clone())
    }

    /// Keeps `value` for `key`; when the table is full the least recently used entry goes.
    pub(super) fn put(&self, key: K, value: V) {
        self.lock().put(key, (value, Instant::now()));
    }

    pub(super) fn pop(&self, key: &K) {
        self.lock().pop(key);
    }

    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Drops the entries not used since `now - idle` (hosts no object asks any more); returns
    /// how many went. The least recently used come first, so the walk stops at the first
    /// entry in use.
    pub(super) fn forget_idle(&self, idle: Duration, now: Instant) -> usize {
        let mut table = self.lock();
        let mut gone = 0;
        while let Some((_, (_, used))) = table.peek_lru() {
            if now.saturating_duration_since(*used) < idle {
                break;
            }
            table.pop_lru();
            gone += 1;
        }
        gone
    }
}

impl<K: Hash + Eq, V, const N: usize> std::fmt::Debug for Bounded<K, V, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = self.0.lock().expect("bounded table lock").len();
        write!(f, "Bounded({len} of {N})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_entry_goes_first() {
        let table: Bounded<u32, u32, 3> = Bounded::default();
        for k in 0..3 {
            table.put(k, k);
        }
        assert_eq!(table.get(&0), Some(0), "0 used again");
        table.put(3, 3);
        let mut keys: Vec<u32> = table.lock().iter().map(|(k, _)| *k).collect();
        keys.sort();
        assert_eq!(keys, [0, 2, 3], "1 was the least recently used");
        for k in 10..1000 {
            table.put(k, k);
        }
        assert_eq!(table.len(), 3);
    }

    #[test]
    fn entries_unused_for_the_idle_time_go() {
        let table: Bounded<u32, u32, 8> = Bounded::default();
        for k in 0..4 {
            table.put(k, k);
        }
        let idle = Duration::from_secs(3600);
        let later = Instant::now() + idle;
        assert_eq!(
            table.forget_idle(idle, Instant::now()),
            0,
            "all used just now"
        );
        // 2 is used an hour on (as if asked again then): the others go.
        table.lock().get_mut(&2).unwrap().1 = later;
        assert_eq!(table.forget_idle(idle, later), 3);
        assert_eq!(table.get(&2), Some(2));
        assert_eq!(table.len(), 1);
    }
}
