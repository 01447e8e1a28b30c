//! At start-up, repositories that policies refer to are scanned first (decisions.md, warm
//! start): once the policies' cache has synced, the repositories they name are known; until
//! each of them has had its first reconcile, the others step back briefly. The gate is open
//! for good once that set is empty or the start-up window has passed, so it costs nothing
//! after start-up and can never hold a repository back for long.

use crate::store::RepoKey;
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long after start the order applies at most.
const WINDOW: Duration = Duration::from_secs(60);

/// How long a repository without policies steps back while the gate is closed.
pub const STEP_BACK: Duration = Duration::from_millis(500);

/// The start-up scan order.
#[derive(Debug)]
pub struct ScanOrder {
    started: Instant,
    /// `None` until the policies' cache has synced; then the repositories still to go first.
    first: Mutex<Option<HashSet<RepoKey>>>,
}

impl Default for ScanOrder {
    fn default() -> Self {
        ScanOrder {
            started: Instant::now(),
            first: Mutex::default(),
        }
    }
}

impl ScanOrder {
    /// The repositories policies refer to (called once the policies' cache has synced).
    pub fn prioritize(&self, referenced: impl IntoIterator<Item = RepoKey>) {
        let mut first = self.first.lock().expect("scan order lock");
        if first.is_none() {
            *first = Some(referenced.into_iter().collect());
        }
    }

    /// Whether `key` should step back now: the gate is closed and it is not one of the first.
    pub fn should_wait(&self, key: &RepoKey) -> bool {
        if self.started.elapsed() > WINDOW {
            return false;
        }
        let first = self.first.lock().expect("scan order lock");
        first
            .as_ref()
            .is_some_and(|set| !set.is_empty() && !set.contains(key))
    }

    /// `key` had its first reconcile since start.
    pub fn reconciled(&self, key: &RepoKey) {
        if let Some(set) = self.first.lock().expect("scan order lock").as_mut() {
            set.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> RepoKey {
        RepoKey::new("team", name).unwrap()
    }

    #[test]
    fn repositories_with_policies_go_first() {
        let order = ScanOrder::default();
        assert!(
            !order.should_wait(&key("other")),
            "open until the policies are known"
        );
        order.prioritize([key("a"), key("b")]);
        assert!(order.should_wait(&key("other")));
        assert!(!order.should_wait(&key("a")));
        order.reconciled(&key("a"));
        assert!(order.should_wait(&key("other")), "b still goes first");
        order.reconciled(&key("b"));
        assert!(!order.should_wait(&key("other")), "open for good");
        order.prioritize([key("c")]);
        assert!(!order.should_wait(&key("other")), "computed once");
    }

    #[test]
    fn no_policies_means_no_order() {
        let order = ScanOrder::default();
        order.prioritize([]);
        assert!(!order.should_wait(&key("any")));
    }
}
