//! When an object is reconciled again: the one answer a reconcile comes to. The shared
//! reconcile ([`super::reconcile`]) turns it into kube's `Action`, or into an error for the
//! error policy, which answers with a delay ([`super::error::retry_delay`]).

use std::time::{Duration, SystemTime};

/// When to reconcile again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Done: again after this (the next scan, an `Always` policy's interval, a short wait).
    After(Duration),
    /// Done, or stalled: only a change of the object (or a watched one) helps.
    AwaitChange,
    /// A transient failure (the message is in Ready): retry with backoff.
    Retry(String),
    /// The registry asked us to wait until then.
    RetryAt(SystemTime),
}
