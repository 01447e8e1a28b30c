//! A panic in one reconcile fails that object only (docs/security.md, "A panic fails one
//! object"). kube's controller polls every reconcile inside its one stream, and both
//! controllers and the storage GC run in one process: a panic that escaped a reconcile ended
//! every tenant's reconciles while `/healthz` still answered. So the decision of a reconcile,
//! on a worker or in the background, is caught here and becomes Ready=False `Failed` on its
//! object, retried with the object's backoff like any failure; a panic elsewhere in the frame
//! (an API call's handling) becomes an error of that reconcile
//! ([`crate::controller::outcome::error::Error::Panicked`]).

use crate::controller::outcome::error::Error;
use futures::FutureExt;
use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

/// Runs `work`, turning a panic into its message. What the work shares with other objects
/// lives behind locks that recover or state that stays valid at every await point (caches,
/// counters), so going on after one object's panic is sound.
pub async fn contained<F: Future>(work: F) -> Result<F::Output, String> {
    AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .map_err(|payload| describe(payload.as_ref()))
}

/// The panic's own words (`panic!`'s message), or a placeholder for other payloads.
pub fn describe(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// The message on the object: what panicked and that it is retried, so that an operator can
/// tell a bug from a registry's failure.
pub fn message(panic: &str) -> String {
    Error::Panicked(panic.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_becomes_its_message() {
        let caught = contained(async { panic!("expires_in overflowed") }).await;
        assert_eq!(caught.unwrap_err(), "expires_in overflowed");
        let n = 7;
        let caught = contained(async move { panic!("formatted {n}") }).await;
        assert_eq!(caught.unwrap_err(), "formatted 7");
        assert_eq!(contained(async { 3 }).await, Ok(3));
        let m = message("boom");
        assert!(
            m.contains("(boom)") && m.contains("retried with backoff"),
            "{m}"
        );
    }
}
