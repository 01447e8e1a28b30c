//! A host's backoff, kept per identity and repository (docs/security.md, "What a registry
//! teaches the client"). Registries rate-limit per account and per repository path (a
//! per-path backend, a per-repository quota), and Flux asks with each scan's own credentials:
//! so a throttling answer holds back the identity that got it (a digest of its credentials, or
//! anonymous) on the repository it asked about, for as long as the registry says
//! (`Retry-After` is capped at a day where it is parsed). An anonymous tenant's `429
//! Retry-After: 3600` on `b/app` no longer stops another tenant that lists `b/app` with its
//! own password. A request that names no repository (a `/v2/` ping, a cloud provider's
//! endpoint) holds back that identity's requests to the host.
//!
//! The host as a whole is held back only for what the host as a whole refuses: when an answer
//! throttles one identity while another identity, of another tenant, is still held back; then
//! for at most [`HOST_BACKOFF_CAP`]. One tenant's paths and identities count once, so a tenant
//! that points its repository at a fresh path every minute never holds the host for others.

use lru::LruCache;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

/// The longest the host as a whole is held back because several identities of different
/// tenants were refused: one identity's own backoff may be a day, its neighbours' at most this.
pub const HOST_BACKOFF_CAP: Duration = Duration::from_secs(60);
/// Identity and repository pairs of one host with a backoff of their own; past that the least
/// recently throttled goes (it is asked again, and throttled again if it still is).
pub const MAX_THROTTLED_REPOSITORIES: usize = 256;

/// Who asks a host, as its quota counts: the identity (`None`: anonymous), the repository
/// (`None`: the host's own endpoints), and whose request it is (the tenant, a namespace).
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::registry) struct Asking<'a> {
    pub(in crate::registry) identity: Option<[u8; 32]>,
    pub(in crate::registry) repository: Option<&'a str>,
    pub(in crate::registry) tenant: Option<&'a str>,
}

impl Asking<'_> {
    fn key(&self) -> Key {
        (self.identity, self.repository.map(str::to_string))
    }

    fn host_key(&self) -> Key {
        (self.identity, None)
    }

    fn tenant_tag(&self) -> u64 {
        let mut hasher = DefaultHasher::new();
        self.tenant.hash(&mut hasher);
        hasher.finish()
    }
}

type Key = (Option<[u8; 32]>, Option<String>);

/// One backoff: until when, how many throttling answers in a row, the last such status, and
/// the tenant whose request got it.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Backoff {
    pub(super) not_before: Option<Instant>,
    pub(super) streak: u32,
    pub(super) status: u16,
    tenant: u64,
}

impl Backoff {
    fn in_force(&self, now: Instant) -> bool {
        self.not_before.is_some_and(|at| at > now)
    }

    fn hold(&mut self, at: Instant, status: u16) {
        self.not_before = Some(self.not_before.map_or(at, |old| old.max(at)));
        self.status = status;
    }

    fn later(self, other: Backoff) -> Backoff {
        if other.not_before > self.not_before {
            other
        } else {
            self
        }
    }
}

/// A host's backoff and its identities' on its repositories.
#[derive(Debug)]
pub(super) struct Throttle {
    host: Backoff,
    held: LruCache<Key, Backoff>,
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle {
            host: Backoff::default(),
            held: LruCache::new(
                NonZeroUsize::new(MAX_THROTTLED_REPOSITORIES).expect("a bound above zero"),
            ),
        }
    }
}

impl Throttle {
    /// The backoff a request waits for: the latest of the host's, the identity's on the host,
    /// and the identity's on the repository, with its status.
    pub(super) fn holding(&self, asking: &Asking) -> Backoff {
        let peek = |key: &Key| self.held.peek(key).copied().unwrap_or_default();
        let own = peek(&asking.key());
        let identity = match asking.repository {
            Some(_) => peek(&asking.host_key()),
            None => Backoff::default(),
        };
        self.host.later(identity).later(own)
    }

    /// How many throttling answers in a row this identity has had on this repository.
    pub(super) fn streak(&self, asking: &Asking) -> u32 {
        self.held.peek(&asking.key()).map_or(0, |b| b.streak)
    }

    /// A throttling answer: the identity waits `delay` on the repository; the host as a whole
    /// waits too (at most [`HOST_BACKOFF_CAP`]) when another identity, of another tenant, is
    /// still held back. Returns when the asker may ask again.
    pub(super) fn throttled(
        &mut self,
        asking: &Asking,
        status: u16,
        delay: Duration,
        now: Instant,
    ) -> Option<Instant> {
        let at = now.checked_add(delay).unwrap_or(now + HOST_BACKOFF_CAP);
        let tenant = asking.tenant_tag();
        let others_held = self.held.iter().any(|((identity, _), b)| {
            *identity != asking.identity && b.tenant != tenant && b.in_force(now)
        });
        if others_held {
            self.host.streak += 1;
            self.host.hold(now + delay.min(HOST_BACKOFF_CAP), status);
        }
        let own = self.held.get_or_insert_mut(asking.key(), Backoff::default);
        own.streak += 1;
        own.tenant = tenant;
        own.hold(at, status);
        self.holding(asking).not_before
    }

    /// An answer that is not throttling: the asker's streak on that repository ends. A hold in
    /// force stays until its time (an answer to a request sent before the refusal lifts
    /// nothing); one that is over is forgotten.
    pub(super) fn answered(&mut self, asking: &Asking, now: Instant) {
        let key = asking.key();
        match self.held.peek_mut(&key) {
            Some(b) if b.in_force(now) => b.streak = 0,
            Some(_) => drop(self.held.pop(&key)),
            None => {}
        }
        self.host.streak = 0;
    }

    /// Whether any backoff of the host or its identities holds now.
    pub(super) fn in_force(&self, now: Instant) -> bool {
        self.host.in_force(now) || self.held.iter().any(|(_, b)| b.in_force(now))
    }

    /// How long the longest backoff of the host or its identities still lasts.
    pub(super) fn longest(&self, now: Instant) -> Duration {
        std::iter::once(&self.host)
            .chain(self.held.iter().map(|(_, b)| b))
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

    fn asking<'a>(id: u8, repository: &'a str, tenant: &'a str) -> Asking<'a> {
        Asking {
            identity: (id != 0).then_some([id; 32]),
            repository: Some(repository),
            tenant: Some(tenant),
        }
    }

    #[test]
    fn a_backoff_holds_that_identity_on_that_repository_alone() {
        let mut t = Throttle::default();
        let now = Instant::now();
        t.throttled(&asking(0, "b/app", "attacker"), 429, DAY, now);
        assert!(
            t.holding(&asking(0, "b/app", "attacker"))
                .not_before
                .unwrap()
                >= now + DAY
        );
        // Another tenant with its own password on the same path is not held (the registry
        // counts its quota apart), nor the anonymous identity elsewhere.
        assert_eq!(t.holding(&asking(7, "b/app", "victim")).not_before, None);
        assert_eq!(t.holding(&asking(0, "c/app", "victim")).not_before, None);
        assert_eq!(t.host.not_before, None, "the host is not held");
        assert_eq!(t.longest(now), DAY);
    }

    #[test]
    fn the_host_is_held_for_at_most_a_minute_when_two_tenants_identities_are_refused() {
        let mut t = Throttle::default();
        let now = Instant::now();
        t.throttled(&asking(1, "a", "one"), 429, DAY, now);
        t.throttled(&asking(2, "b", "two"), 429, DAY, now);
        // The documented cap (docs/security.md), not the constant.
        assert_eq!(
            t.holding(&asking(3, "c", "three")).not_before,
            Some(now + Duration::from_secs(60))
        );
        assert_eq!(
            t.holding(&asking(1, "a", "one")).not_before,
            Some(now + DAY)
        );
        t.answered(&asking(1, "a", "one"), now);
        assert_eq!(t.streak(&asking(1, "a", "one")), 0);
        assert_eq!(t.streak(&asking(2, "b", "two")), 1);
    }

    /// One tenant, whatever paths and identities it uses, never holds the host for others.
    #[test]
    fn one_tenants_paths_and_identities_count_once() {
        let mut t = Throttle::default();
        let now = Instant::now();
        for i in 0..50u8 {
            let path = format!("fresh/path-{i}");
            t.throttled(&asking(i % 3, &path, "attacker"), 429, DAY, now);
        }
        assert_eq!(t.host.not_before, None);
        assert_eq!(
            t.holding(&asking(9, "victim/app", "victim")).not_before,
            None
        );
    }

    #[test]
    fn the_hosts_own_endpoints_hold_that_identity_on_the_host() {
        let mut t = Throttle::default();
        let now = Instant::now();
        let ping = Asking {
            identity: Some([4; 32]),
            repository: None,
            tenant: Some("t"),
        };
        t.throttled(&ping, 429, Duration::from_secs(30), now);
        let later = Some(now + Duration::from_secs(30));
        assert_eq!(t.holding(&asking(4, "any/repo", "t")).not_before, later);
        assert_eq!(t.holding(&asking(5, "any/repo", "u")).not_before, None);
    }

    #[test]
    fn throttled_identities_and_repositories_of_one_host_are_bounded() {
        let mut t = Throttle::default();
        let now = Instant::now();
        for i in 0..300 {
            t.throttled(&asking(1, &format!("r{i}"), "t"), 429, DAY, now);
        }
        assert_eq!(t.held.len(), 256);
        assert!(
            t.holding(&asking(1, "r299", "t")).not_before.is_some(),
            "the newest stays"
        );
    }
}
