//! When an object is reconciled again: the one answer a reconcile comes to. The shared
//! reconcile ([`crate::controller::frame::reconcile`]) turns it into kube's `Action`, or into
//! an error for the error policy, which answers with a delay ([`super::error::retry_delay`]).

use super::conditions::Reason;
use std::time::{Duration, SystemTime};

/// When to reconcile again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Done: again after this (the next scan, an `Always` policy's interval, a short wait).
    After(Duration),
    /// Done, or stalled: only a change of the object (or a watched one) helps.
    AwaitChange,
    /// A transient failure (Ready says it): retry with backoff.
    Retry(Failure),
    /// The registry asked us to wait until then.
    RetryAt(SystemTime),
}

/// A failure a reconcile reports: Ready=False with this reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub reason: Reason,
    pub message: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
