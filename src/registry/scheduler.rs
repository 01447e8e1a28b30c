//! Quota-aware request scheduling, shared by every client that talks to the same registry
//! host: at most `max_concurrent_per_host` requests in flight, and one backoff per host. When
//! a host answers 429 (or 502/503/504), `Retry-After` — or an exponential delay with jitter —
//! sets a time before which no client sends it anything; a caller that would have to wait
//! longer than `max_wait` gets [`RegistryError::RateLimited`] at once, so it can report and
//! requeue instead of retrying hot.

use super::RegistryError;
use lru::LruCache;
use series::Series;
use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashSet};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Scheduling settings.
#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    /// Requests in flight per registry host.
    pub max_concurrent_per_host: usize,
    /// First backoff after a 429/5xx without `Retry-After`; doubles with each further one.
    pub base_backoff: Duration,
    /// Longest computed backoff (a registry's `Retry-After` is honoured even when longer).
    pub max_backoff: Duration,
    /// The longest a request waits for a host's backoff before failing with `RateLimited`.
    pub max_wait: Duration,
    /// Attempts per request when the host answers 429/502/503/504.
    pub attempts: u32,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            max_concurrent_per_host: 4,
            base_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(300),
            max_wait: Duration::from_secs(5),
            attempts: 3,
        }
    }
}

mod series;
mod throttle;

use crate::fair::{FairPermit, FairSlots};
pub(super) use throttle::Asking;
use throttle::Throttle;

/// Hosts the scheduler keeps state for. Past that, the least recently used host that nothing
/// is sent to and no backoff holds is dropped (else the least recently used one): every object
/// names a host of its choosing, so the table must not grow with them.
pub const MAX_HOSTS: usize = 1024;
/// The per-host state every client shares.
#[derive(Debug)]
pub struct Scheduler {
    config: SchedulerConfig,
    hosts: Mutex<LruCache<String, Arc<Host>>>,
    /// The requests' metric series, per host label.
    series: Series,
}

#[derive(Debug)]
struct Host {
    /// Its request slots, shared by tenant (fair.rs).
    permits: Arc<FairSlots>,
    /// The host's backoff and its repositories' (throttle.rs).
    backoff: Mutex<Throttle>,
    /// When a request last asked for the host.
    used: Mutex<Instant>,
}

impl Host {
    /// Nothing in flight, nobody waiting on it, no backoff to keep: dropping it loses nothing.
    fn idle(state: &Arc<Host>, now: Instant) -> bool {
        Arc::strong_count(state) == 1
            && state.permits.idle()
            && !state.backoff.lock().expect("backoff lock").in_force(now)
    }
}

/// Leave to send one request to a host; dropping it frees the slot. It is held until the
/// answer's body is read (client.rs keeps it in the response), so a host has at most
/// `max_concurrent_per_host` answers in flight, bodies included: a slot that ended with the
/// headers let 200 dripping manifests of one host hold 200 sockets.
pub(super) struct Slot {
    permit: FairPermit,
}

impl Slot {
    /// Completes when the slot is taken back for a tenant under its fair share of the host
    /// (crate::fair): the request or body read holding it stops.
    pub(super) fn stopped(&self) -> tokio_util::sync::WaitForCancellationFutureOwned {
        self.permit.stopped()
    }
}

impl Scheduler {
    pub fn new(config: SchedulerConfig) -> Self {
        Scheduler {
            config,
            // Bounded by `host`'s own eviction, which prefers idle hosts.
            hosts: Mutex::new(LruCache::unbounded()),
            series: Series::default(),
        }
    }

    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    fn host(&self, host: &str) -> Arc<Host> {
        let mut hosts = self.hosts.lock().expect("scheduler lock");
        if let Some(state) = hosts.get(host) {
            *state.used.lock().expect("used lock") = Instant::now();
            return state.clone();
        }
        let max_permits = self.config.max_concurrent_per_host.max(1);
        while hosts.len() >= MAX_HOSTS {
            let now = Instant::now();
            let idle = hosts
                .iter()
                .rev() // least recently used first
                .find(|(_, state)| Host::idle(state, now))
                .map(|(name, _)| name.clone());
            match idle {
                Some(name) => hosts.pop(&name),
                None => hosts.pop_lru().map(|(_, state)| state),
            };
        }
        let state = Arc::new(Host {
            permits: FairSlots::new(max_permits),
            backoff: Mutex::default(),
            used: Mutex::new(Instant::now()),
        });
        hosts.put(host.to_string(), state.clone());
        state
    }

    /// Drops the hosts that are idle (nothing in flight, no backoff) and were not asked for
    /// `idle`, with their metric series: hosts no object uses any more. Returns how many.
    pub fn forget_idle(&self, idle: Duration, now: Instant) -> usize {
        let gone: HashSet<String> = {
            let mut hosts = self.hosts.lock().expect("scheduler lock");
            let unused = |state: &Arc<Host>| {
                let used = *state.used.lock().expect("used lock");
                now.saturating_duration_since(used) >= idle && Host::idle(state, now)
            };
            let names: HashSet<String> = hosts
                .iter()
                .filter(|(_, state)| unused(state))
                .map(|(name, _)| name.clone())
                .collect();
            names.iter().for_each(|name| drop(hosts.pop(name)));
            names
        };
        self.series.forget(&gone);
        gone.len()
    }

    /// How many hosts the scheduler keeps state for.
    pub fn host_count(&self) -> usize {
        self.hosts.lock().expect("scheduler lock").len()
    }

    /// Waits for the host's backoff (up to `max_wait`) and a free slot, for an anonymous
    /// request that names no repository (a cloud provider's endpoint).
    pub(super) async fn acquire(&self, host: &str) -> Result<Slot, RegistryError> {
        self.acquire_for(host, &Asking::default()).await
    }

    /// Waits for the backoff that holds `asking` (its identity on its repository, its
    /// identity on the host, the host's own: throttle.rs), up to `max_wait`, and a free slot.
    pub(super) async fn acquire_for(
        &self,
        host: &str,
        asking: &Asking<'_>,
    ) -> Result<Slot, RegistryError> {
        let state = self.host(host);
        loop {
            let (not_before, status) = {
                let b = state.backoff.lock().expect("backoff lock").holding(asking);
                (b.not_before, b.status)
            };
            let now = Instant::now();
            match not_before {
                Some(at) if at > now => {
                    let wait = at - now;
                    if wait > self.config.max_wait {
                        self.series.refused(host);
                        return Err(RegistryError::RateLimited {
                            host: host.to_string(),
                            status,
                            retry_at: SystemTime::now() + wait,
                        });
                    }
                    tokio::time::sleep_until(at.into()).await;
                }
                _ => break,
            }
        }
        let permit = state.permits.acquire(asking.tenant).await;
        Ok(Slot { permit })
    }

    /// Records an answer (or `None`: no answer). A throttling status moves the host's
    /// backoff and returns when the host may be asked again.
    pub(super) fn record(
        &self,
        host: &str,
        status: Option<u16>,
        retry_after: Option<Duration>,
    ) -> Option<Instant> {
        self.record_for(host, &Asking::default(), status, retry_after)
    }

    /// [`Scheduler::record`] for a request of `asking`: its throttling holds back that identity
    /// on that repository (and the host only as throttle.rs says).
    pub(super) fn record_for(
        &self,
        host: &str,
        asking: &Asking<'_>,
        status: Option<u16>,
        retry_after: Option<Duration>,
    ) -> Option<Instant> {
        self.series.answered(host, status);
        let state = self.host(host);
        let mut b = state.backoff.lock().expect("backoff lock");
        match status {
            Some(code) if matches!(code, 429 | 502 | 503 | 504) => {
                let streak = b.streak(asking) + 1;
                let delay = retry_after.unwrap_or_else(|| self.computed_backoff(streak));
                b.throttled(asking, code, delay, Instant::now())
            }
            Some(_) => {
                b.answered(asking, Instant::now());
                None
            }
            None => None,
        }
    }

    /// `base * 2^(streak-1)`, capped, with ±20% jitter so hosts' clients do not retry in step.
    fn computed_backoff(&self, streak: u32) -> Duration {
        let exp = self
            .config
            .base_backoff
            .saturating_mul(1 << streak.saturating_sub(1).min(20));
        let capped = exp.min(self.config.max_backoff);
        let random = RandomState::new().hash_one(Instant::now());
        let factor = 0.8 + 0.4 * (random % 10_000) as f64 / 10_000.0;
        capped.mul_f64(factor)
    }

    /// Requests so far, per host and status (`200`, `429`, ..., `error`).
    pub fn request_counts(&self) -> BTreeMap<(String, String), u64> {
        self.series.request_counts()
    }

    /// Requests refused without being sent (the host's backoff was too long), per host.
    pub fn refused_counts(&self) -> BTreeMap<String, u64> {
        self.series.refused_counts()
    }

    /// Every host label, with how long its backoff still lasts (zero: none); `other` holds the
    /// longest of the hosts folded into it.
    pub fn backoffs(&self) -> BTreeMap<String, Duration> {
        let states: Vec<(String, Arc<Host>)> = self
            .hosts
            .lock()
            .expect("scheduler lock")
            .iter()
            .map(|(host, state)| (host.clone(), state.clone()))
            .collect();
        let now = Instant::now();
        let mut left_by_label = BTreeMap::new();
        for (host, state) in states {
            let left = state.backoff.lock().expect("backoff lock").longest(now);
            let entry = left_by_label.entry(self.series.label(&host)).or_default();
            *entry = left.max(*entry);
        }
        left_by_label
    }
}

impl Default for Scheduler {
    fn default() -> Self {
        Scheduler::new(SchedulerConfig::default())
    }
}

#[cfg(test)]
mod tests;
