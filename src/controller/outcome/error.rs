//! The controller's errors, and the one place that decides what each means for the object:
//! [`retry_delay`] picks a conflict's short delay, a rate limit's wait, or the object's
//! backoff (style.md §2), and [`log_result`] logs what a reconcile decided, once.

use super::backoff::Backoff;
use super::next::{Failure, Next};
use crate::store::StoreError;
use std::time::{Duration, SystemTime};
use thiserror::Error;

pub use crate::runtime::api_error::describe_api_error;

/// An error of a reconcile.
#[derive(Debug, Error)]
pub enum Error {
    /// An API-server call failed (status patch, event, finalizer).
    #[error("Kubernetes API: {}", describe_api_error(.0))]
    Kube(#[from] kube::Error),
    /// The reconcile failed and retries with backoff; Ready already says why (its reason and
    /// these words).
    #[error("{0}")]
    Failed(Failure),
    /// The registry is rate limiting; the status says until when.
    #[error("{message}")]
    RateLimited { message: String, until: SystemTime },
    /// The reconcile held its worker past the deadline and was cut.
    #[error("the reconcile did not finish within {}s; it is retried", .0.as_secs())]
    Deadline(Duration),
    /// The reconcile panicked (panic.rs): this object fails and retries with backoff, no
    /// other object is affected.
    #[error(
        "internal error: the reconcile panicked ({0}); this object is retried with backoff and \
         no other object is affected; please report this as a bug of image-reflector"
    )]
    Panicked(String),
    /// Removing the object's stored tags failed.
    #[error("deleting the stored tags: {0}")]
    Store(#[from] StoreError),
    /// A blocking task (a store call) panicked or was cancelled.
    #[error("a blocking task did not finish: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// kube's finalizer helper, boxed to break the type cycle with this enum. Shows the
    /// reconcile's own error when that is what failed.
    #[error("{}", finalizer_text(.0))]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),
}

impl Error {
    /// The error itself, or the reconcile's error inside kube's finalizer helper.
    fn inner(&self) -> &Error {
        use kube::runtime::finalizer::Error as F;
        match self {
            Error::Finalizer(inner) => match inner.as_ref() {
                F::ApplyFailed(e) | F::CleanupFailed(e) => e.inner(),
                _ => self,
            },
            _ => self,
        }
    }

    /// Someone else changed the object: try again soon, without a failure counted.
    fn is_conflict(&self) -> bool {
        use kube::runtime::finalizer::Error as F;
        match self.inner() {
            Error::Kube(e) => is_conflict(e),
            Error::Finalizer(inner) => matches!(
                inner.as_ref(),
                F::AddFinalizer(e) | F::RemoveFinalizer(e) if is_conflict(e)
            ),
            _ => false,
        }
    }

    /// A failure the reconcile reported itself (its status and log line say it).
    fn logged_by_the_reconcile(&self) -> bool {
        matches!(self.inner(), Error::Failed(_))
    }

    /// A fixed label for metrics (never free text).
    pub fn metric_label(&self) -> &'static str {
        match self.inner() {
            _ if self.is_conflict() => "conflict",
            Error::RateLimited { .. } => "rate_limited",
            Error::Panicked(_) => "panic",
            _ => "transient",
        }
    }
}

/// What a reconcile's [`Next`] means for the object `key`: a requeue (and the object's backoff
/// reset) when it ended well or stalled, an error (so [`retry_delay`] decides) when not.
pub fn requeue_after(
    next: Next,
    summary: &str,
    key: &str,
    backoff: &Backoff,
) -> Result<Option<Duration>, Error> {
    match next {
        Next::After(delay) => {
            backoff.reset(key);
            Ok(Some(delay))
        }
        Next::AwaitChange => {
            backoff.reset(key);
            Ok(None)
        }
        Next::Retry(failure) => Err(Error::Failed(failure)),
        Next::RetryAt(until) => Err(Error::RateLimited {
            message: summary.to_string(),
            until,
        }),
    }
}

/// Logs what a reconcile decided, once, in its span (so with its reconcileID), at the level
/// its meaning deserves: a failure (retried with backoff) or a stall (no retry until the spec
/// changes) at error, a registry's rate limit at warn, the rest at info. [`retry_delay`] then
/// logs only the errors that happened around the reconcile (an API write, the finalizer).
///
/// Its target says what happened (`image_reflector::reconcile::failed`, `::rate_limited`,
/// `::stalled`, `::done`), not the module that logs it: a successful scan was logged under
/// `...::outcome::error`. [`result_target`] names it.
///
/// A failure, a stall or a rate limit of the object `key` is cut to 4 KiB and written once per
/// ten minutes while it says the same ([`super::log_lines`]); a success clears that memory.
pub fn log_result(next: &Next, stalled: bool, summary: &str, key: &str) {
    let target = result_target(next, stalled);
    let repeats = super::log_lines::repeats();
    if target == DONE {
        repeats.clear(key);
        tracing::info!(target: DONE, "{summary}");
        return;
    }
    let Some(line) = repeats.admit(key, summary, std::time::Instant::now()) else {
        return;
    };
    match target {
        FAILED => tracing::error!(target: FAILED, "{line}"),
        RATE_LIMITED => tracing::warn!(target: RATE_LIMITED, "{line}"),
        _ => tracing::error!(target: STALLED, "{line}"),
    }
}

const FAILED: &str = "image_reflector::reconcile::failed";
const RATE_LIMITED: &str = "image_reflector::reconcile::rate_limited";
const STALLED: &str = "image_reflector::reconcile::stalled";
const DONE: &str = "image_reflector::reconcile::done";

/// The log target of a reconcile that decided `next` (`stalled`: the spec must change).
pub fn result_target(next: &Next, stalled: bool) -> &'static str {
    match next {
        Next::Retry(_) => FAILED,
        Next::RetryAt(_) => RATE_LIMITED,
        Next::AwaitChange if stalled => STALLED,
        _ => DONE,
    }
}

/// When to try again after `err` for the object `key`: soon after a conflict, when the
/// registry said after a rate limit, else with the object's exponential backoff.
pub fn retry_delay(err: &Error, key: &str, backoff: &Backoff) -> Duration {
    if err.is_conflict() {
        return Duration::from_secs(1);
    }
    if let Error::RateLimited { until, .. } = err.inner() {
        return until
            .duration_since(SystemTime::now())
            .unwrap_or_default()
            .max(Duration::from_secs(1));
    }
    let delay = backoff.next_delay(key);
    // A reconcile's own failure was logged inside it (log_result, with its reconcileID); an
    // API error around it was not.
    if !err.logged_by_the_reconcile() {
        tracing::error!(retry_in = ?delay, "{err}");
    }
    delay
}

fn finalizer_text(err: &kube::runtime::finalizer::Error<Error>) -> String {
    use kube::runtime::finalizer::Error as F;
    match err {
        F::ApplyFailed(e) | F::CleanupFailed(e) => e.to_string(),
        other => format!(
            "finalizer {}: {other}",
            crate::controller::object::keys::FINALIZER
        ),
    }
}

/// 409 Conflict, or 422 from a JSON patch `test` op that lost a race.
fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 409 || status.code == 422)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::outcome::conditions::Reason;
    use crate::controller::outcome::next::Failure;

    /// What a reconcile decided is what its log line's target says, whatever module logs it.
    #[test]
    fn a_reconciles_log_target_names_what_happened() {
        let failure = Failure {
            reason: Reason::Failed,
            message: "x".into(),
        };
        let done = Next::After(Duration::from_secs(60));
        assert_eq!(
            result_target(&done, false),
            "image_reflector::reconcile::done"
        );
        assert_eq!(result_target(&Next::AwaitChange, false), DONE);
        assert_eq!(
            result_target(&Next::AwaitChange, true),
            "image_reflector::reconcile::stalled"
        );
        assert_eq!(
            result_target(&Next::Retry(failure), false),
            "image_reflector::reconcile::failed"
        );
        let later = Next::RetryAt(SystemTime::now());
        assert_eq!(
            result_target(&later, false),
            "image_reflector::reconcile::rate_limited"
        );
    }
}
