//! The memory budget's fair shares (docs/security.md, "Fair shares"): what each namespace
//! holds, by read; which namespaces were refused lately; and which reads to stop so that a
//! refused namespace under its fair share finds room at its next try. Max-min: the fair
//! share is the budget over the namespaces holding or waiting, and only the namespaces over
//! it give back, their largest reads first, down to it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// One read's share of the budget: its bytes (of every `Held` of the read), and its stop.
#[derive(Debug, Default)]
pub(super) struct Read {
    bytes: AtomicUsize,
    stop: CancellationToken,
    reason: OnceLock<String>,
}

impl Read {
    /// Why the read was stopped, once it was.
    pub(super) fn stopped_reason(&self) -> Option<String> {
        self.stop
            .is_cancelled()
            .then(|| self.reason.get().cloned().unwrap_or_default())
    }

    pub(super) async fn wait_stopped(&self) -> String {
        self.stop.cancelled().await;
        self.reason.get().cloned().unwrap_or_default()
    }

    fn stop(&self, reason: String) {
        let _ = self.reason.set(reason);
        self.stop.cancel();
    }
}

/// What one namespace holds.
#[derive(Debug, Default)]
struct Holding {
    bytes: usize,
    /// Its reads holding bytes (weak: a read's `Held`s own it).
    reads: Vec<Weak<Read>>,
}

/// Every namespace's holding, and the namespaces refused lately.
#[derive(Debug, Default)]
pub(super) struct Tenants {
    held: HashMap<String, Holding>,
    wanting: HashMap<String, Instant>,
}

impl Tenants {
    /// Namespaces holding bytes now.
    #[cfg(test)]
    pub(super) fn holders(&self) -> usize {
        self.held.len()
    }

    pub(super) fn bytes_of(&self, tenant: &str) -> usize {
        self.held.get(tenant).map_or(0, |h| h.bytes)
    }

    /// Forgets refusals older than `window`.
    pub(super) fn forget_wants(&mut self, now: Instant, window: Duration) {
        self.wanting
            .retain(|_, at| now.saturating_duration_since(*at) < window);
    }

    pub(super) fn want(&mut self, tenant: &str, now: Instant) {
        self.wanting.insert(tenant.to_string(), now);
    }

    /// Whether a namespace other than `tenant` was refused lately.
    pub(super) fn others_wait(&self, tenant: &str) -> bool {
        self.wanting.keys().any(|t| t != tenant)
    }

    /// The budget over the namespaces holding or waiting, `tenant` among them.
    pub(super) fn fair_share(&self, budget: usize, tenant: &str) -> usize {
        let others = self
            .held
            .keys()
            .chain(self.wanting.keys().filter(|t| !self.held.contains_key(*t)))
            .filter(|t| *t != tenant)
            .count();
        budget / (others + 1)
    }

    pub(super) fn charge(&mut self, tenant: &str, read: &Arc<Read>, bytes: usize) {
        read.bytes.fetch_add(bytes, Ordering::SeqCst);
        let holding = self.held.entry(tenant.to_string()).or_default();
        holding.bytes += bytes;
        // A read leaves the list when its last byte comes back (give_back), so the list
        // holds no read that has ended.
        if !holding
            .reads
            .iter()
            .any(|r| r.as_ptr() == Arc::as_ptr(read))
        {
            holding.reads.push(Arc::downgrade(read));
        }
    }

    pub(super) fn give_back(&mut self, tenant: &str, read: &Arc<Read>, bytes: usize) {
        read.bytes.fetch_sub(bytes, Ordering::SeqCst);
        let Some(holding) = self.held.get_mut(tenant) else {
            return;
        };
        holding.bytes = holding.bytes.saturating_sub(bytes);
        if read.bytes.load(Ordering::SeqCst) == 0 {
            holding.reads.retain(|r| r.as_ptr() != Arc::as_ptr(read));
        }
        if holding.bytes == 0 {
            self.held.remove(tenant);
        }
    }

    /// Stops the reads of every namespace but `tenant` that holds more than `fair`, largest
    /// first, until what it still holds unstopped is within `fair`; returns how many.
    pub(super) fn stop_over(
        &mut self,
        fair: usize,
        tenant: &str,
        reason: impl Fn(&str) -> String,
    ) -> usize {
        let mut stopped = 0;
        for (name, holding) in self.held.iter().filter(|(n, _)| *n != tenant) {
            let mut reads: Vec<Arc<Read>> = holding
                .reads
                .iter()
                .filter_map(Weak::upgrade)
                .filter(|r| !r.stop.is_cancelled())
                .collect();
            let mut keeps: usize = reads.iter().map(|r| r.bytes.load(Ordering::SeqCst)).sum();
            reads.sort_by_key(|r| std::cmp::Reverse(r.bytes.load(Ordering::SeqCst)));
            for read in reads {
                if keeps <= fair {
                    break;
                }
                keeps -= read.bytes.load(Ordering::SeqCst);
                read.stop(reason(name));
                stopped += 1;
            }
        }
        stopped
    }
}
