//! A host's backoff, kept per repository (docs/security.md, "What a registry teaches the
//! client"). A registry may throttle one repository path and not the others (a per-path
//! backend, a per-repository quota): a `429 Retry-After: 86400` on one tenant's path held back
//! every tenant's paths of that origin for a day when backoff was the host's alone. So a
//! throttling answer holds back the repository that got it, for as long as the registry says
//! (`Retry-After` is capped at a day where it is parsed). The host as a whole is held back
//! only for what the host as a whole refuses, that is when a second repository is refused
//! while the first still waits, and then for at most [`HOST_BACKOFF_CAP`]. A request that
//! names no repository (a `/v2/` ping, a cloud provider's endpoint) is the host's own.

use lru::LruCache;
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

/// The longest the host as a whole is held back because several of its repositories were
/// refused: a repository's own backoff may be a day, its neighbours' at most this.
pub const HOST_BACKOFF_CAP: Duration = Duration::from_secs(60);
/// Repositories of one host with a backoff of their own; past that the least recently
/// throttled goes (it is asked again, and throttled again if it still is).
pub const MAX_THROTTLED_REPOSITORIES: usize = 256;

/// One backoff: until when, how many throttling answers in a row, and the last such status.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Backoff {
    pub(super) not_before: Option<Instant>,
    pub(super) streak: u32,
    pub(super) status: u16,
}

impl Backoff {
    fn in_force(&self, now: Instant) -> bool {
        self.not_before.is_some_and(|at| at > now)
    }

    fn hold(&mut self, at: Instant, status: u16) {
        self.not_before = Some(self.not_before.map_or(at, |old| old.max(at)));
        self.status = status;
    }
}

/// A host's backoff and its repositories'.
#[derive(Debug)]
pub(super) struct Throttle {
    host: Backoff,
    repositories: LruCache<String, Backoff>,
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle {
            host: Backoff::default(),
            repositories: LruCache::new(
                NonZeroUsize::new(MAX_THROTTLED_REPOSITORIES).expect("a bound above zero"),
            ),
        }
    }
}

impl Throttle {
    /// The backoff a request for `repository` (or the host's own) waits for: the later of the
    /// host's and the repository's, with its status.
    pub(super) fn holding(&self, repository: Option<&str>) -> Backoff {
        let own = repository
            .and_then(|r| self.repositories.peek(r))
            .copied()
            .unwrap_or_default();
        if own.not_before > self.host.not_before {
            own
        } else {
            self.host
        }
    }

    /// How many throttling answers in a row `repository` (or the host) has had.
    pub(super) fn streak(&self, repository: Option<&str>) -> u32 {
        match repository {
            Some(r) => self.repositories.peek(r).map_or(0, |b| b.streak),
            None => self.host.streak,
        }
    }

    /// A throttling answer: `repository` (or the host) waits `delay`; the host as a whole
    /// waits too (at most [`HOST_BACKOFF_CAP`]) when another of its repositories is still held
    /// back. Returns when `repository` may be asked again.
    pub(super) fn throttled(
        &mut self,
        repository: Option<&str>,
        status: u16,
        delay: Duration,
        now: Instant,
    ) -> Option<Instant> {
        let at = now.checked_add(delay).unwrap_or(now + HOST_BACKOFF_CAP);
        let Some(repository) = repository else {
            self.host.streak += 1;
            self.host.hold(at, status);
            return self.host.not_before;
        };
        let others_held = self
            .repositories
            .iter()
            .any(|(r, b)| r != repository && b.in_force(now));
        if others_held {
            self.host.streak += 1;
            self.host.hold(now + delay.min(HOST_BACKOFF_CAP), status);
        }
        let own = self
            .repositories
            .get_or_insert_mut(repository.to_string(), Backoff::default);
        own.streak += 1;
        own.hold(at, status);
        self.holding(Some(repository)).not_before
    }

    /// An answer that is not throttling: the streak of `repository` (or the host) ends.
    pub(super) fn answered(&mut self, repository: Option<&str>) {
        match repository {
            Some(r) => {
                self.repositories.pop(r);
                self.host.streak = 0;
            }
            None => self.host.streak = 0,
        }
    }

    /// Whether any backoff of the host or its repositories holds now.
    pub(super) fn in_force(&self, now: Instant) -> bool {
        self.host.in_force(now) || self.repositories.iter().any(|(_, b)| b.in_force(now))
    }

    /// How long the longest backoff of the host or its repositories still lasts.
    pub(super) fn longest(&self, now: Instant) -> Duration {
        std::iter::once(&self.host)
            .chain(self.repositories.iter().map(|(_, b)| b))
            .filter_map(|b| b.not_before)
            .map(|at| at.saturating_duration_since(now))
            .max()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    #[test]
    fn a_repositorys_backoff_holds_that_repository_alone() {
        let mut t = Throttle::default();
        let now = Instant::now();
        t.throttled(Some("hostile/app"), 429, DAY, now);
        assert!(t.holding(Some("hostile/app")).not_before.unwrap() >= now + DAY);
        assert_eq!(t.holding(Some("victim/app")).not_before, None);
        assert_eq!(t.holding(None).not_before, None, "the host is not held");
        assert_eq!(t.longest(now), DAY);
    }

    #[test]
    fn the_host_is_held_for_at_most_a_minute_when_a_second_repository_is_refused() {
        let mut t = Throttle::default();
        let now = Instant::now();
        t.throttled(Some("a"), 429, DAY, now);
        t.throttled(Some("b"), 429, DAY, now);
        // The documented cap (docs/security.md), not the constant.
        assert_eq!(
            t.holding(Some("c")).not_before,
            Some(now + Duration::from_secs(60))
        );
        assert_eq!(t.holding(Some("a")).not_before, Some(now + DAY));
        t.answered(Some("a"));
        assert_eq!(t.streak(Some("a")), 0);
        assert_eq!(t.streak(Some("b")), 1);
    }

    #[test]
    fn throttled_repositories_of_one_host_are_bounded() {
        let mut t = Throttle::default();
        let now = Instant::now();
        for i in 0..300 {
            t.throttled(Some(&format!("r{i}")), 429, DAY, now);
        }
        assert_eq!(t.repositories.len(), 256);
        assert!(
            t.holding(Some("r299")).not_before.is_some(),
            "the newest stays"
        );
    }
}
