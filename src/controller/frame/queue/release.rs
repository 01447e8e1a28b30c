//! Between the queue and kube-runtime's controller: what comes in (watch triggers, wakes), what
//! goes out (the objects due, a few at a time), and what comes back (an object gone before its
//! turn).

use super::{Due, WorkQueue};
use crate::controller::object::keys::{key_of, object_key};
use futures::{future, Stream, StreamExt};
use kube::runtime::controller::Error as ControllerError;
use kube::runtime::reflector::ObjectRef;
use kube::Resource;
use std::sync::Arc;
use std::time::Instant;

/// Released and not started, per worker: enough that a worker never waits on the queue, few
/// enough that kube's scheduler never holds more than a handful.
const RELEASED_PER_WORKER: usize = 2;

impl WorkQueue {
    /// The objects due, in the order they fell due, for kube's controller (`reconcile_on`):
    /// never more than `RELEASED_PER_WORKER` × `concurrency` released and not started.
    pub fn releases<K: Resource<DynamicType = ()>>(
        self: &Arc<Self>,
        concurrency: u16,
    ) -> impl Stream<Item = ObjectRef<K>> + Send + 'static {
        let limit = RELEASED_PER_WORKER * usize::from(concurrency.max(1));
        futures::stream::unfold(self.clone(), move |queue| async move {
            loop {
                // Registered before looking, so that a wake between the look and the wait
                // is not lost.
                let woken = queue.wake.notified();
                let due = queue.state().next_due(Instant::now(), limit);
                match due {
                    Due::Now(key) => match reference(&key) {
                        Some(reference) => {
                            drop(woken);
                            return Some((reference, queue));
                        }
                        // Not a key of ours (every key is made by `key_of`): let it go.
                        None => queue.dropped(&key),
                    },
                    Due::Later(Some(at)) => {
                        let at = tokio::time::Instant::from_std(at);
                        tokio::select! {
                            () = woken => {}
                            () = tokio::time::sleep_until(at) => {}
                        }
                    }
                    Due::Later(None) => woken.await,
                }
            }
        })
    }

    /// Queues each object of `stream` (a watch's triggers), due now. kube's controller polls
    /// what this returns, which yields nothing: the queue releases them.
    pub fn intake<K, E>(
        self: &Arc<Self>,
        stream: impl Stream<Item = Result<K, E>>,
    ) -> impl Stream<Item = ObjectRef<K>>
    where
        K: Resource<DynamicType = ()>,
        E: std::fmt::Display,
    {
        let queue = self.clone();
        stream.filter_map(move |item| {
            match item {
                Ok(obj) => queue.add(object_key(&obj), Instant::now()),
                Err(err) => tracing::debug!(error = %err, "watch error; the watch retries"),
            }
            future::ready(None)
        })
    }

    /// Queues each reference of `stream` (a background decision ended), due now.
    pub fn intake_refs<K: Resource<DynamicType = ()>>(
        self: &Arc<Self>,
        stream: impl Stream<Item = ObjectRef<K>>,
    ) -> impl Stream<Item = ObjectRef<K>> {
        let queue = self.clone();
        stream.filter_map(move |reference| {
            let namespace = reference.namespace.as_deref().unwrap_or_default();
            queue.add(
                key_of(&K::kind(&()), namespace, &reference.name),
                Instant::now(),
            );
            future::ready(None)
        })
    }

    /// A released object that will not start: its place is free again.
    pub(super) fn dropped(&self, key: &str) {
        let hash = self.hash(key);
        let was_released = self.state().released.remove(&hash);
        if was_released {
            self.wake.notify_one();
        }
    }

    /// Drives a controller's result stream, marking the loop alive while it runs. An object
    /// released but gone from the cache before its turn frees its place.
    pub async fn run_loop<S, T, R, Q>(self: Arc<Self>, results: S)
    where
        S: Stream<Item = Result<T, ControllerError<R, Q>>>,
        R: std::error::Error + 'static,
        Q: std::error::Error + 'static,
    {
        /// Marks the loop ended however it ends: returned, or unwound by a panic (which
        /// left it "alive" for `/healthz` before).
        struct Ended<'a>(&'a WorkQueue);
        impl Drop for Ended<'_> {
            fn drop(&mut self) {
                self.0.set_alive(false);
            }
        }
        self.set_alive(true);
        let _ended = Ended(&self);
        let queue = &self;
        results
            .for_each(|result| async move {
                match result {
                    Ok(_) => {}
                    Err(ControllerError::ObjectNotFound(gone)) => {
                        let namespace = gone.namespace.as_deref().unwrap_or_default();
                        queue.dropped(&key_of(&gone.dyntype.kind, namespace, &gone.name));
                    }
                    Err(err) => tracing::debug!(error = %err, "reconcile ended with an error"),
                }
            })
            .await;
    }
}

/// kube's reference to the object of `key` (`Kind/namespace/name`).
fn reference<K: Resource<DynamicType = ()>>(key: &str) -> Option<ObjectRef<K>> {
    let mut parts = key.splitn(3, '/');
    let (_kind, namespace, name) = (parts.next()?, parts.next()?, parts.next()?);
    let reference = ObjectRef::new(name);
    Some(match namespace {
        "" => reference,
        namespace => reference.within(namespace),
    })
}
