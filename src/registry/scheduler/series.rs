//! The scheduler's request series per host: a host has its own label while fewer than
//! [`MAX_HOST_SERIES`] hosts have one, later hosts are counted under [`OTHER_HOSTS`], and a
//! host the scheduler forgets takes its series along (so its label is free again).

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;

/// Hosts with metric series of their own; the requests of any further host are counted under
/// `host="other"` ([`OTHER_HOSTS`]), so a tenant naming many hosts cannot multiply the series.
pub const MAX_HOST_SERIES: usize = 256;
/// The host label of the folded series.
pub const OTHER_HOSTS: &str = "other";

#[derive(Debug, Default)]
pub(super) struct Series {
    /// Hosts with series of their own (at most [`MAX_HOST_SERIES`]).
    labelled: Mutex<HashSet<String>>,
    /// Requests per (host label, status); the status is `error` when there was no answer.
    counts: Mutex<BTreeMap<(String, String), u64>>,
    /// Requests not sent because the host's backoff outlasted `max_wait`, per host label.
    refused: Mutex<BTreeMap<String, u64>>,
}

impl Series {
    /// The host's metric label: its name while fewer than [`MAX_HOST_SERIES`] hosts have one.
    pub(super) fn label(&self, host: &str) -> String {
        let mut labelled = self.labelled.lock().expect("labels lock");
        if labelled.contains(host) {
            return host.to_string();
        }
        if labelled.len() < MAX_HOST_SERIES {
            labelled.insert(host.to_string());
            return host.to_string();
        }
        OTHER_HOSTS.to_string()
    }

    /// One answer (`status`: the code, or `error`).
    pub(super) fn answered(&self, host: &str, status: String) {
        let label = self.label(host);
        *self
            .counts
            .lock()
            .expect("counts lock")
            .entry((label, status))
            .or_default() += 1;
    }

    /// One request not sent: the host's backoff outlasted `max_wait`.
    pub(super) fn refused(&self, host: &str) {
        let label = self.label(host);
        *self
            .refused
            .lock()
            .expect("refused lock")
            .entry(label)
            .or_default() += 1;
    }

    /// The series of `hosts` go (what was folded into `other` stays there).
    pub(super) fn forget(&self, hosts: &HashSet<String>) {
        let labelled = &mut self.labelled.lock().expect("labels lock");
        labelled.retain(|h| !hosts.contains(h));
        let counts = &mut self.counts.lock().expect("counts lock");
        counts.retain(|(label, _), _| !hosts.contains(label));
        let refused = &mut self.refused.lock().expect("refused lock");
        refused.retain(|label, _| !hosts.contains(label));
    }

    pub(super) fn request_counts(&self) -> BTreeMap<(String, String), u64> {
        self.counts.lock().expect("counts lock").clone()
    }

    pub(super) fn refused_counts(&self) -> BTreeMap<String, u64> {
        self.refused.lock().expect("refused lock").clone()
    }
}
