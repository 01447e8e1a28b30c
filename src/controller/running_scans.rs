//! The scans running now, so that no tenant holds every worker (docs/security.md): at most
//! `limit` scans at once against one registry host, and as many for one namespace, where
//! `limit` is one less than `--concurrent` (at least 1), so a slow host or a busy tenant always
//! leaves a worker to the others. A scan that finds its host or namespace full does not wait
//! on a worker: the object is tried again shortly. A running scan can be cancelled when its
//! object is deleted, so deletion never waits for a slow registry.

use crate::store::RepoKey;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How soon an object whose host or namespace was full is tried again.
pub const SLOT_RETRY: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
struct Running {
    per_host: HashMap<String, usize>,
    per_namespace: HashMap<String, usize>,
    /// By repository.
    cancel: HashMap<RepoKey, CancellationToken>,
}

/// The running scans and their limits.
#[derive(Debug, Clone)]
pub struct RunningScans {
    limit: usize,
    state: Arc<Mutex<Running>>,
}

impl RunningScans {
    /// Limits for `workers` concurrent reconciles.
    pub fn for_workers(workers: u16) -> Self {
        RunningScans {
            limit: usize::from(workers).saturating_sub(1).max(1),
            state: Arc::default(),
        }
    }

    /// The most scans one host or one namespace may run at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// A slot for a scan of `key` against `host`, or why there is none now.
    pub fn try_start(&self, key: &RepoKey, host: &str) -> Result<ScanSlot, String> {
        let namespace = key.namespace();
        let mut running = self.state.lock().expect("running scans lock");
        let on_host = running.per_host.get(host).copied().unwrap_or(0);
        if on_host >= self.limit {
            return Err(format!(
                "{on_host} scans of {host} are running (the most at once for one registry host)"
            ));
        }
        let in_namespace = running.per_namespace.get(namespace).copied().unwrap_or(0);
        if in_namespace >= self.limit {
            return Err(format!(
                "{in_namespace} scans of namespace {namespace} are running (the most at once \
                 for one namespace)"
            ));
        }
        *running.per_host.entry(host.to_string()).or_default() += 1;
        *running
            .per_namespace
            .entry(namespace.to_string())
            .or_default() += 1;
        let cancelled = CancellationToken::new();
        running.cancel.insert(key.clone(), cancelled.clone());
        Ok(ScanSlot {
            state: self.state.clone(),
            key: key.clone(),
            namespace: namespace.to_string(),
            host: host.to_string(),
            cancelled,
        })
    }

    /// Cancels the running scan of `key`, if there is one (its object is being deleted).
    pub fn cancel(&self, key: &RepoKey) -> bool {
        let running = self.state.lock().expect("running scans lock");
        match running.cancel.get(key) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }
}

/// A running scan; its place is given back when dropped.
#[derive(Debug)]
pub struct ScanSlot {
    state: Arc<Mutex<Running>>,
    key: RepoKey,
    namespace: String,
    host: String,
    cancelled: CancellationToken,
}

impl ScanSlot {
    /// Completes when the scan's object is deleted.
    pub fn cancelled(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.cancelled.cancelled()
    }
}

impl Drop for ScanSlot {
    fn drop(&mut self) {
        let mut guard = self.state.lock().expect("running scans lock");
        let running = &mut *guard;
        for (map, key) in [
            (&mut running.per_host, &self.host),
            (&mut running.per_namespace, &self.namespace),
        ] {
            if let Some(count) = map.get_mut(key) {
                *count -= 1;
                if *count == 0 {
                    map.remove(key);
                }
            }
        }
        running.cancel.remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(namespace: &str, name: &str) -> RepoKey {
        RepoKey::new(namespace, name).unwrap()
    }

    #[test]
    fn hosts_and_namespaces_leave_a_worker_to_the_others() {
        let scans = RunningScans::for_workers(4);
        assert_eq!(scans.limit(), 3);
        let held: Vec<_> = (0..3)
            .map(|i| {
                scans
                    .try_start(&key("a", &format!("r{i}")), "slow.example")
                    .unwrap()
            })
            .collect();
        let err = scans
            .try_start(&key("b", "r0"), "slow.example")
            .unwrap_err();
        assert!(err.contains("3 scans of slow.example"), "{err}");
        // Another host is free; the namespace is full.
        let err = scans
            .try_start(&key("a", "r9"), "fast.example")
            .unwrap_err();
        assert!(err.contains("namespace a"), "{err}");
        let other = scans.try_start(&key("b", "r0"), "fast.example").unwrap();
        drop(held);
        drop(other);
        assert!(scans.state.lock().unwrap().per_host.is_empty());
        assert_eq!(RunningScans::for_workers(1).limit(), 1);
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
