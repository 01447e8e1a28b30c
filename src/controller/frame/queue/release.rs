//! Between the queue and kube-runtime's controller: what comes in (watch triggers, wakes), what
//! goes out (the objects due, a few at a time), and what comes back (an object gone before its
//! turn).

use super::{Due, Settled, WorkQueue};
use crate::controller::frame::stage::Stage;
use crate::controller::object::keys::{key_of, object_key};
use futures::{future, Stream, StreamExt};
use kube::runtime::controller::Error as ControllerError;
use kube::runtime::reflector::ObjectRef;
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

/// Released and not started, per worker: enough that a worker never waits on the queue, few
/// enough that kube's scheduler never holds more than a handful.
const RELEASED_PER_WORKER: usize = 2;

impl WorkQueue {
    /// The objects due, in the order they fell due, for kube's controller (`reconcile_on`),
    /// each staged for it first (`stage`, which its controller reads): never more than
    /// `RELEASED_PER_WORKER` × `concurrency` released and not started. Nothing is released
    /// before the cache has the first list: an object not in it yet would look gone.
    pub fn releases<K>(
        self: &Arc<Self>,
        concurrency: u16,
        stage: Arc<Stage<K>>,
    ) -> impl Stream<Item = ObjectRef<K>> + Send + 'static
    where
        K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Send + Sync,
    {
        let limit = RELEASED_PER_WORKER * usize::from(concurrency.max(1));
        let unstage = stage.clone();
        self.on_settled(Settled(Box::new(move |key| {
            if let Some((namespace, name)) = split_key(key) {
                unstage.remove(namespace, name);
            }
        })));
        let start = (self.clone(), stage);
        futures::stream::unfold(start, move |(queue, stage)| async move {
            stage.cache.ready().await;
            loop {
                // Registered before looking, so that a wake between the look and the wait
                // is not lost.
                let woken = queue.wake.notified();
                let due = queue.state().next_due(Instant::now(), limit);
                match due {
                    Due::Now(key) => {
                        let staged = split_key(&key)
                            .and_then(|(namespace, name)| stage.put(namespace, name));
                        match staged {
                            Some(reference) => {
                                drop(woken);
                                return Some((reference, (queue, stage)));
                            }
                            // Gone from the cache before its turn (or, never, not a key of
                            // ours: every key is made by `key_of`): its place is free.
                            None => queue.dropped(&key),
                        }
                    }
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

/// The namespace and name in `key` (`Kind/namespace/name`).
fn split_key(key: &str) -> Option<(&str, &str)> {
    let mut parts = key.splitn(3, '/');
    let (_kind, namespace, name) = (parts.next()?, parts.next()?, parts.next()?);
    Some((namespace, name))
}
