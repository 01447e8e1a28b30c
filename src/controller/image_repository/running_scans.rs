//! The scans running now, so that no tenant holds every worker (docs/security.md). Once a
//! registry host is slow (a scan of it has run for [`SLOW_AFTER`], not counting the time it
//! waited for the host's slots or backoff: waiting behind another tenant's queue is not
//! slowness), it may run at most `limit` scans at once, and so may a namespace whose scans are
//! slow, where `limit` is one less than `--concurrent` (at least 1): a slow host or a busy
//! tenant always leaves a worker to the others. A slow host's limit is shared by namespace: a
//! namespace running fewer than its fair share of it (the limit over the namespaces scanning
//! the host) may start one whatever the others run, so one tenant's slow repositories cannot
//! refuse another's on a shared host. Fast hosts are not limited (a single-registry install
//! scans with every worker).
//! A scan that finds its host or namespace full does not wait on a worker: the object is tried
//! again shortly. A running scan can be cancelled when its object is deleted, so deletion never
//! waits for a slow registry.

use crate::fair::WaitClock;
use crate::store::RepoKey;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How soon an object whose host or namespace was full is tried again.
pub const SLOT_RETRY: Duration = Duration::from_secs(2);

/// A scan running this long makes its host (and namespace) slow, and so limited.
pub const SLOW_AFTER: Duration = Duration::from_secs(10);

#[derive(Debug)]
struct Scan {
    host: String,
    started: Instant,
    /// Its time waiting for slots and backoff, which is not slowness.
    waits: WaitClock,
    cancel: CancellationToken,
}

impl Scan {
    fn slow(&self, now: Instant) -> bool {
        let ran = now.saturating_duration_since(self.started);
        ran.saturating_sub(self.waits.waited(now)) >= SLOW_AFTER
    }
}

/// The running scans and their limits.
#[derive(Debug, Clone)]
pub struct RunningScans {
    limit: usize,
    state: Arc<Mutex<HashMap<RepoKey, Scan>>>,
}

/// Why a scan gets no slot now: too many slow scans of its host or of its namespace.
#[derive(Debug, thiserror::Error)]
pub enum Busy {
    #[error("{running} scans of {host} are running, {slow} of them for over {}s (the most at once for one slow registry host), {ours} of them this namespace's, its fair share among the {namespaces} namespaces scanning it being {fair}", SLOW_AFTER.as_secs())]
    Host {
        host: String,
        running: usize,
        slow: usize,
        ours: usize,
        namespaces: usize,
        fair: usize,
    },
    #[error("{running} scans of namespace {namespace} are running, {slow} of them for over {}s (the most at once for one namespace with slow scans)", SLOW_AFTER.as_secs())]
    Namespace {
        namespace: String,
        running: usize,
        slow: usize,
    },
}

impl RunningScans {
    /// Limits for `workers` concurrent reconciles.
    pub fn for_workers(workers: u16) -> Self {
        RunningScans {
            limit: usize::from(workers).saturating_sub(1).max(1),
            state: Arc::default(),
        }
    }

    /// The most scans one slow host or one slow namespace may run at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// A slot for a scan of `key` against `host`, or why there is none now.
    pub fn try_start(&self, key: &RepoKey, host: &str) -> Result<ScanSlot, Busy> {
        self.try_start_since(key, host, Instant::now())
    }

    /// [`Self::try_start`] for a scan that started at `started` (tests make slow ones).
    #[doc(hidden)]
    pub fn try_start_since(
        &self,
        key: &RepoKey,
        host: &str,
        started: Instant,
    ) -> Result<ScanSlot, Busy> {
        let namespace = key.namespace();
        let mut scans = self.state.lock().expect("running scans lock");
        let now = Instant::now();
        // (running, of which slow) among the scans that match.
        let count = |matches: &dyn Fn(&RepoKey, &Scan) -> bool| {
            scans
                .iter()
                .filter(|(k, s)| matches(k, s))
                .fold((0, 0), |(n, slow), (_, s)| {
                    (n + 1, slow + usize::from(s.slow(now)))
                })
        };
        let (on_host, slow) = count(&|_, s| s.host == host);
        if on_host >= self.limit && slow > 0 {
            let (ours, _) = count(&|k, s| s.host == host && k.namespace() == namespace);
            let scanning: HashSet<&str> = scans
                .iter()
                .filter(|(_, s)| s.host == host)
                .map(|(k, _)| k.namespace())
                .collect();
            let namespaces = scanning.len() + usize::from(ours == 0);
            let fair = (self.limit / namespaces).max(1);
            if ours >= fair {
                return Err(Busy::Host {
                    host: host.into(),
                    running: on_host,
                    slow,
                    ours,
                    namespaces,
                    fair,
                });
            }
        }
        let (in_namespace, slow) = count(&|k, _| k.namespace() == namespace);
        if in_namespace >= self.limit && slow > 0 {
            return Err(Busy::Namespace {
                namespace: namespace.into(),
                running: in_namespace,
                slow,
            });
        }
        let cancelled = CancellationToken::new();
        let waits = WaitClock::default();
        scans.insert(
            key.clone(),
            Scan {
                host: host.to_string(),
                started,
                waits: waits.clone(),
                cancel: cancelled.clone(),
            },
        );
        Ok(ScanSlot {
            state: self.state.clone(),
            key: key.clone(),
            cancelled,
            waits,
        })
    }

    /// Cancels the running scan of `key`, if there is one (its object is being deleted).
    pub fn cancel(&self, key: &RepoKey) -> bool {
        let scans = self.state.lock().expect("running scans lock");
        match scans.get(key) {
            Some(scan) => {
                scan.cancel.cancel();
                true
            }
            None => false,
        }
    }
}

/// A running scan; its place is given back when dropped.
#[derive(Debug)]
pub struct ScanSlot {
    state: Arc<Mutex<HashMap<RepoKey, Scan>>>,
    key: RepoKey,
    cancelled: CancellationToken,
    waits: WaitClock,
}

impl ScanSlot {
    /// The clock the scan's registry client counts its waits on (`ClientOptions::waits`).
    pub fn waits(&self) -> WaitClock {
        self.waits.clone()
    }

    /// Completes when the scan's object is deleted.
    pub fn cancelled(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.cancelled.cancelled()
    }
}

impl Drop for ScanSlot {
    fn drop(&mut self) {
        self.state
            .lock()
            .expect("running scans lock")
            .remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(namespace: &str, name: &str) -> RepoKey {
        RepoKey::new(namespace, name).unwrap()
    }

    fn long_ago() -> Instant {
        Instant::now() - SLOW_AFTER - Duration::from_secs(1)
    }

    #[test]
    fn slow_hosts_and_namespaces_leave_a_worker_to_the_others() {
        let scans = RunningScans::for_workers(4);
        assert_eq!(scans.limit(), 3);
        // Three fast scans of one host: a fourth may start (fast hosts are not limited).
        let fast: Vec<_> = (0..3)
            .map(|i| {
                scans
                    .try_start(&key("a", &format!("f{i}")), "fast.example")
                    .unwrap()
            })
            .collect();
        let fourth = scans.try_start(&key("b", "f3"), "fast.example").unwrap();
        drop((fast, fourth));
        // Three scans of a host, one of them slow: the host is full.
        let held: Vec<_> = (0..3)
            .map(|i| {
                let started = if i == 0 { long_ago() } else { Instant::now() };
                scans
                    .try_start_since(&key("a", &format!("r{i}")), "slow.example", started)
                    .unwrap()
            })
            .collect();
        let err = scans
            .try_start(&key("a", "r3"), "slow.example")
            .unwrap_err();
        assert!(
            err.to_string().contains(
                "3 scans of slow.example are running, 1 of them for over 10s (the most at once \
                 for one slow registry host), 3 of them this namespace's, its fair share among \
                 the 1 namespaces scanning it being 3"
            ),
            "{err}"
        );
        // Another namespace on that host is under its fair share (3 over 2 namespaces: 1):
        // it starts one, and no more.
        let shared = scans.try_start(&key("b", "s0"), "slow.example").unwrap();
        let err = scans
            .try_start(&key("b", "s1"), "slow.example")
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("1 of them this namespace's, its fair share among the 2 namespaces scanning it being 1"),
            "{err}"
        );
        drop(shared);
        // Another host is free; the namespace (with a slow scan) is full.
        let err = scans
            .try_start(&key("a", "r9"), "other.example")
            .unwrap_err();
        assert!(err.to_string().contains("namespace a"), "{err}");
        let other = scans.try_start(&key("b", "r0"), "other.example").unwrap();
        drop(held);
        drop(other);
        assert!(scans.state.lock().unwrap().is_empty());
        assert_eq!(RunningScans::for_workers(1).limit(), 1);
    }

    /// What only waited for a slot is not slow: a scan started long ago that spent its time
    /// waiting behind another tenant's queue does not make its host or namespace slow; the
    /// same scan answered slowly does.
    #[test]
    fn waiting_for_a_slot_is_not_slowness() {
        let scans = RunningScans::for_workers(2);
        assert_eq!(scans.limit(), 1);
        let scan = scans
            .try_start_since(&key("a", "w"), "shared.example", long_ago())
            .unwrap();
        let (clock, wait) = WaitClock::waiting_since(long_ago());
        let set_clock = |clock: WaitClock| {
            scans
                .state
                .lock()
                .unwrap()
                .get_mut(&key("a", "w"))
                .unwrap()
                .waits = clock;
        };
        set_clock(clock);
        drop(scans.try_start(&key("a", "x"), "shared.example").unwrap());
        drop(wait);
        drop(scans.try_start(&key("a", "y"), "shared.example").unwrap());
        set_clock(WaitClock::default());
        let err = scans
            .try_start(&key("a", "z"), "shared.example")
            .unwrap_err();
        assert!(err.to_string().contains("1 of them for over 10s"), "{err}");
        drop(scan);
    }

    #[tokio::test]
    async fn a_running_scan_is_cancelled_by_its_key() {
        let scans = RunningScans::for_workers(4);
        let slot = scans.try_start(&key("ns", "app"), "r.example").unwrap();
        assert!(!scans.cancel(&key("ns", "other")));
        assert!(scans.cancel(&key("ns", "app")));
        slot.cancelled().await;
        drop(slot);
        assert!(!scans.cancel(&key("ns", "app")), "gone with its slot");
    }
}
