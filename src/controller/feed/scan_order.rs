//! At start-up, repositories that policies refer to are scanned first (docs/compatibility.md, warm
//! start). Once both caches have synced, the first ones are known: the repositories policies
//! refer to that exist and are not suspended, less those already reconciled since start. Until
//! each of them has had its first reconcile (whatever its outcome), the others step back
//! briefly. A repository is never held back beyond its own first reconcile when it is one of
//! the first; a missing, suspended or failing one never closes the gate; and the gate is open
//! for good once the set is empty or the start-up window has passed.

use crate::store::RepoKey;
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long after start the order applies at most.
const WINDOW: Duration = Duration::from_secs(60);

/// How long a repository without policies steps back while the gate is closed.
pub const STEP_BACK: Duration = Duration::from_millis(500);

#[derive(Debug, Default)]
struct State {
    /// The gate is open for good: the sets below were let go (at 10,000 repositories they
    /// held about 3 MB for nothing once start-up was over).
    open: bool,
    /// What the policies refer to, once their cache has synced.
    referenced: Option<HashSet<RepoKey>>,
    /// The repositories that exist and are not suspended, once their cache has synced.
    existing: Option<HashSet<RepoKey>>,
    /// Reconciled since start.
    done: HashSet<RepoKey>,
    /// The first ones still to reconcile (known once both caches have synced).
    pending: Option<HashSet<RepoKey>>,
}

impl State {
    fn recompute(&mut self) {
        if let (Some(referenced), Some(existing)) = (&self.referenced, &self.existing) {
            self.pending = Some(
                referenced
                    .intersection(existing)
                    .filter(|k| !self.done.contains(*k))
                    .cloned()
                    .collect(),
            );
        }
    }
}

/// The start-up scan order.
#[derive(Debug)]
pub struct ScanOrder {
    started: Instant,
    state: Mutex<State>,
}

impl Default for ScanOrder {
    fn default() -> Self {
        ScanOrder {
            started: Instant::now(),
            state: Mutex::default(),
        }
    }
}

impl ScanOrder {
    /// The repositories policies refer to (once the policies' cache has synced; later calls,
    /// after a re-list, change nothing).
    pub fn prioritize(&self, referenced: impl IntoIterator<Item = RepoKey>) {
        let mut state = self.state.lock().expect("scan order lock");
        if !state.open && state.referenced.is_none() {
            state.referenced = Some(referenced.into_iter().collect());
            state.recompute();
        }
    }

    /// The repositories that exist and are not suspended (once their cache has synced).
    pub fn existing(&self, repositories: impl IntoIterator<Item = RepoKey>) {
        let mut state = self.state.lock().expect("scan order lock");
        if !state.open && state.existing.is_none() {
            state.existing = Some(repositories.into_iter().collect());
            state.recompute();
        }
    }

    /// Whether `key` should step back now: the gate is closed and it is not one of the first.
    pub fn should_wait(&self, key: &RepoKey) -> bool {
        let mut state = self.state.lock().expect("scan order lock");
        if state.open || self.open_for_good(&mut state) {
            return false;
        }
        state
            .pending
            .as_ref()
            .is_some_and(|pending| !pending.is_empty() && !pending.contains(key))
    }

    /// `key` had a reconcile since start (scanned, failed, stalled, suspended or deleted).
    pub fn reconciled(&self, key: &RepoKey) {
        let mut state = self.state.lock().expect("scan order lock");
        if state.open || self.open_for_good(&mut state) {
            return;
        }
        state.done.insert(key.clone());
        if let Some(pending) = state.pending.as_mut() {
            pending.remove(key);
        }
        self.open_for_good(&mut state);
    }

    /// Whether the gate is open for good (the window has passed, or the first ones have all
    /// reconciled); if so, lets the sets go.
    fn open_for_good(&self, state: &mut State) -> bool {
        let done = state.pending.as_ref().is_some_and(HashSet::is_empty);
        if done || self.started.elapsed() > WINDOW {
            *state = State {
                open: true,
                ..State::default()
            };
        }
        state.open
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
        assert!(
            !order.should_wait(&key("other")),
            "open until the repositories are known"
        );
        order.existing([key("a"), key("b"), key("other")]);
        assert!(order.should_wait(&key("other")));
        assert!(!order.should_wait(&key("a")));
        order.reconciled(&key("a"));
        assert!(order.should_wait(&key("other")), "b still goes first");
        order.reconciled(&key("b"));
        assert!(!order.should_wait(&key("other")), "open for good");
        order.prioritize([key("c")]);
        assert!(!order.should_wait(&key("other")), "computed once");
        // Open for good: what it knew is let go, and a re-list does not gather it again.
        order.existing([key("c"), key("other")]);
        let state = order.state.lock().unwrap();
        assert!(state.open);
        assert!(state.referenced.is_none() && state.existing.is_none());
        assert!(state.done.is_empty() && state.pending.is_none());
    }

    #[test]
    fn no_policies_means_no_order() {
        let order = ScanOrder::default();
        order.prioritize([]);
        order.existing([key("any")]);
        assert!(!order.should_wait(&key("any")));
    }

    /// The start-up stall: a repository reconciled before the policies' cache synced, or one
    /// a policy names that does not exist or is suspended, must not close the gate.
    #[test]
    fn reconciled_missing_or_suspended_repositories_never_close_the_gate() {
        let order = ScanOrder::default();
        order.reconciled(&key("early"));
        order.prioritize([key("early"), key("missing"), key("suspended")]);
        // "suspended" exists but is suspended: not among the existing ones given.
        order.existing([key("early"), key("other")]);
        assert!(!order.should_wait(&key("other")), "nothing is pending");
    }
}
