//! The controller's errors, and the one place that decides what each means for the object:
//! [`Error::kind`] picks stalled, conflict, transient or rate-limited (style.md §2).

use std::time::SystemTime;
use thiserror::Error;

/// What an error means for when the object is tried again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Someone else changed the object: try again soon, without a failure count.
    Conflict,
    /// Retry with per-object exponential backoff.
    Transient,
    /// The registry asked us to wait until then.
    RateLimited(SystemTime),
}

/// An error of a reconcile.
#[derive(Debug, Error)]
pub enum Error {
    /// An API-server call failed (status patch, event, finalizer).
    #[error("Kubernetes API: {}", describe_api_error(.0))]
    Kube(#[from] kube::Error),
    /// The reconcile failed; the status already says why.
    #[error("{0}")]
    Reconcile(String),
    /// The registry is rate limiting; the status says until when.
    #[error("{message}")]
    RateLimited { message: String, until: SystemTime },
    /// Removing the object's stored tags failed.
    #[error("deleting the stored tags: {0}")]
    Store(String),
    /// kube's finalizer helper, boxed to break the type cycle with this enum. Shows the
    /// reconcile's own error when that is what failed.
    #[error("{}", finalizer_text(.0))]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),
}

impl Error {
    /// How to retry.
    pub fn kind(&self) -> ErrorKind {
        use kube::runtime::finalizer::Error as F;
        match self {
            Error::Kube(e) if is_conflict(e) => ErrorKind::Conflict,
            Error::RateLimited { until, .. } => ErrorKind::RateLimited(*until),
            Error::Finalizer(inner) => match inner.as_ref() {
                F::ApplyFailed(e) | F::CleanupFailed(e) => e.kind(),
                F::AddFinalizer(e) | F::RemoveFinalizer(e) if is_conflict(e) => ErrorKind::Conflict,
                _ => ErrorKind::Transient,
            },
            _ => ErrorKind::Transient,
        }
    }

    /// A failure the reconcile reported itself (its status and log line say it).
    fn logged_by_the_reconcile(&self) -> bool {
        use kube::runtime::finalizer::Error as F;
        match self {
            Error::Reconcile(_) => true,
            Error::Finalizer(inner) => matches!(
                inner.as_ref(),
                F::ApplyFailed(Error::Reconcile(_)) | F::CleanupFailed(Error::Reconcile(_))
            ),
            _ => false,
        }
    }

    /// A fixed label for metrics (never free text).
    pub fn metric_label(&self) -> &'static str {
        match self.kind() {
            ErrorKind::Conflict => "conflict",
            ErrorKind::RateLimited(_) => "rate_limited",
            ErrorKind::Transient => "transient",
        }
    }
}

/// The controller's answer to a reconcile's [`Next`]: a requeue (and the object's backoff
/// reset) when it ended well or stalled, an error (so [`retry_delay`] decides) when not.
pub fn next_requeue(
    next: crate::controller::shared::summary::Next,
    summary: String,
    key: &str,
    backoff: &crate::controller::shared::backoff::Backoff,
) -> Result<crate::controller::shared::reconcile::Requeue, Error> {
    use crate::controller::shared::summary::Next;
    match next {
        Next::After(delay) => {
            backoff.reset(key);
            Ok(Some(delay))
        }
        Next::AwaitChange => {
            backoff.reset(key);
            Ok(None)
        }
        Next::Retry(message) => Err(Error::Reconcile(message)),
        Next::RetryAt(until) => Err(Error::RateLimited {
            message: summary,
            until,
        }),
    }
}

/// Logs what a reconcile decided, once, in its span (so with its reconcileID), at the level
/// its meaning deserves: a failure (retried with backoff) or a stall (no retry until the spec
/// changes) at error, a registry's rate limit at warn, the rest at info. [`retry_delay`] then
/// logs only the errors that happened around the reconcile (an API write, the finalizer).
pub fn log_result(next: &crate::controller::shared::summary::Next, stalled: bool, summary: &str) {
    use crate::controller::shared::summary::Next;
    match next {
        Next::Retry(_) => tracing::error!("{summary}"),
        Next::RetryAt(_) => tracing::warn!("{summary}"),
        Next::AwaitChange if stalled => tracing::error!("{summary}"),
        _ => tracing::info!("{summary}"),
    }
}

/// When to try again after `err` for the object `key`: decided by the error's kind.
pub fn retry_delay(
    err: &Error,
    key: &str,
    backoff: &crate::controller::shared::backoff::Backoff,
) -> std::time::Duration {
    use std::time::Duration;
    match err.kind() {
        ErrorKind::Conflict => Duration::from_secs(1),
        ErrorKind::RateLimited(until) => until
            .duration_since(SystemTime::now())
            .unwrap_or_default()
            .max(Duration::from_secs(1)),
        ErrorKind::Transient => {
            let delay = backoff.next_delay(key);
            // A reconcile's own failure was logged inside it (log_result, with its
            // reconcileID); an API error around it was not.
            if !err.logged_by_the_reconcile() {
                tracing::error!(retry_in = ?delay, "{err}");
            }
            delay
        }
    }
}

fn finalizer_text(err: &kube::runtime::finalizer::Error<Error>) -> String {
    use kube::runtime::finalizer::Error as F;
    match err {
        F::ApplyFailed(e) | F::CleanupFailed(e) => e.to_string(),
        other => format!("finalizer {}: {other}", crate::controller::FINALIZER),
    }
}

/// 409 Conflict, or 422 from a JSON patch `test` op that lost a race.
fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 409 || status.code == 422)
}

pub use crate::runtime::api_error::describe_api_error;
