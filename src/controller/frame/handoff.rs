//! A decision that takes longer than a few seconds goes on off the reconcile workers
//! (docs/security.md). Every decision runs as a task of its own; the worker waits for it at
//! most [`HANDOFF_AFTER`]. Past that the task is parked under the object's key, the worker
//! is free for the next object, and when the task ends it wakes its object: the next
//! reconcile of the object takes the finished decision and writes it as if it had been
//! decided there. So a registry that never answers, or drips a byte a second, holds a worker
//! for at most a few seconds, whatever the order in which slow objects arrive; the scan's
//! own limits (per host, per namespace, the deadline) still bound the work itself.
//!
//! A parked decision belongs to the object as it was when it started: a change of what the
//! reconcile depends on (its trigger: generation and spec, a requested reconcile, deletion)
//! aborts it and decides again. The spec counts apart from the generation: a served schema
//! prunes it, or stops pruning it, with no new generation (controller/schema/). Deleting the
//! object aborts it too, so its registry requests stop.

use crate::controller::object::keys::{object_key, trigger_hash};
use futures::channel::mpsc;
use kube::runtime::reflector::ObjectRef;
use kube::Resource;
use room::{room, Room};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::{AbortHandle, JoinError};
use tracing::Instrument;

/// The longest one decision may run, on a worker or in the background (a scan's cap, plus
/// room for the API calls around it); the frame of a reconcile has the same deadline.
pub const RECONCILE_DEADLINE: Duration =
    Duration::from_secs(crate::controller::object::intervals::MAX_SCAN_TIMEOUT.as_secs() + 60);

/// The longest a worker waits for a decision before it goes on in the background.
pub const HANDOFF_AFTER: Duration = Duration::from_secs(3);

pub use room::{BUSY_RETRY, MAX_BACKGROUND, MAX_BACKGROUND_PER_NAMESPACE};

/// A decision running (or finished) in the background; `T` is what it comes to.
struct Parked<K: Resource<DynamicType = ()>, T> {
    /// The object's trigger when the decision started.
    trigger: Option<u64>,
    /// Its object, woken when the decision is stopped to give its room to another namespace.
    target: ObjectRef<K>,
    started: tokio::time::Instant,
    abort: AbortHandle,
    /// Set when the decision was stopped for another namespace (room.rs): why.
    taken: Option<String>,
    /// Set by the task when it ends.
    done: Arc<Mutex<Option<T>>>,
    /// A reconcile was asked for while it ran: run once more after taking its result, since
    /// what triggered it (a repository's new tags, for a policy) may be newer than the work.
    rerun: bool,
}

impl<K: Resource<DynamicType = ()>, T> Parked<K, T> {
    /// Still running: not finished (a finished one waiting to be taken holds nothing), nor
    /// stopped for another namespace.
    fn running(&self) -> bool {
        self.taken.is_none() && self.done.lock().expect("handoff lock").is_none()
    }
}

/// What became of a decision.
pub enum Handed<T> {
    /// Decided (here, or in the background and now taken): write it. `rerun`: reconcile
    /// again soon, something asked for it while the work ran.
    Decided { outcome: T, rerun: bool },
    /// Still running in the background; its object is woken when it ends.
    Working,
    /// Past [`HANDOFF_AFTER`] with no room in the background ([`MAX_BACKGROUND`],
    /// [`MAX_BACKGROUND_PER_NAMESPACE`], the namespace's fair share), or stopped there to give
    /// room to another namespace: tried again after [`BUSY_RETRY`]; says why.
    Busy(String),
}

/// The parked decisions of one kind `K`, and the wakes of their objects.
pub struct Handoffs<K: Resource<DynamicType = ()>, T> {
    parked: Mutex<HashMap<String, Parked<K, T>>>,
    wake: mpsc::UnboundedSender<ObjectRef<K>>,
    wakes: Mutex<Option<mpsc::UnboundedReceiver<ObjectRef<K>>>>,
}

impl<K: Resource<DynamicType = ()>, T> Default for Handoffs<K, T> {
    fn default() -> Self {
        let (wake, wakes) = mpsc::unbounded();
        Handoffs {
            parked: Mutex::default(),
            wake,
            wakes: Mutex::new(Some(wakes)),
        }
    }
}

impl<K, T> Handoffs<K, T>
where
    K: Resource<DynamicType = ()> + kube::core::object::HasSpec<Spec: serde::Serialize> + 'static,
    T: Send + 'static,
{
    /// The objects to reconcile because their background decision ended (the controller's
    /// `reconcile_on`); there is one such stream, so the second call gets `None`.
    pub fn wakes(&self) -> Option<mpsc::UnboundedReceiver<ObjectRef<K>>> {
        self.wakes.lock().expect("handoffs lock").take()
    }

    /// Decisions running or waiting to be taken.
    pub fn parked(&self) -> usize {
        self.parked.lock().expect("handoffs lock").len()
    }

    /// Aborts the background decision of the object `key` (`Kind/namespace/name`), if any.
    pub fn cancel(&self, key: &str) -> bool {
        let parked = self.parked.lock().expect("handoffs lock").remove(key);
        parked.map(|p| p.abort.abort()).is_some()
    }

    /// The decision for `obj`: a finished background one, or `deciding` (made only when there
    /// is none) run as a task that the worker waits for at most [`HANDOFF_AFTER`].
    pub async fn decide<F>(&self, obj: &K, deciding: impl FnOnce() -> F) -> Handed<T>
    where
        F: Future<Output = T> + Send + 'static,
    {
        let key = object_key(obj);
        let trigger = trigger_hash(obj);
        if let Some(handed) = self.take(&key, trigger) {
            return handed;
        }
        let target = ObjectRef::from_obj(obj);
        let deciding = deciding();
        let mut task = tokio::spawn(deciding.in_current_span());
        if let Ok(joined) = tokio::time::timeout(HANDOFF_AFTER, &mut task).await {
            return Handed::Decided {
                outcome: outcome(joined).expect("a task that is not parked is not aborted"),
                rerun: false,
            };
        }
        let done = Arc::new(Mutex::new(None));
        let parked = Parked {
            trigger,
            target: target.clone(),
            started: tokio::time::Instant::now(),
            abort: task.abort_handle(),
            taken: None,
            done: done.clone(),
            rerun: false,
        };
        {
            let mut all = self.parked.lock().expect("handoffs lock");
            let oldest = oldest_running(&all, tokio::time::Instant::now());
            match room(&running_by_namespace(&all), namespace_of(&key), oldest) {
                Room::Free => {}
                Room::TakenFrom { namespace, reason } => {
                    let stopped = take_newest(&mut all, &namespace, reason);
                    if let Some(stopped) = stopped {
                        let _ = self.wake.unbounded_send(stopped);
                    }
                }
                Room::Busy(busy) => {
                    drop(all);
                    task.abort();
                    return Handed::Busy(busy);
                }
            }
            all.insert(key, parked);
        }
        let wake = self.wake.clone();
        tokio::spawn(async move {
            // Aborted (the object changed or went): nothing to take, no one to wake.
            if let Some(finished) = outcome(task.await) {
                *done.lock().expect("handoff lock") = Some(finished);
                let _ = wake.unbounded_send(target);
            }
        });
        Handed::Working
    }

    /// The parked decision of `key`: taken when it has ended, `Working` while it runs;
    /// aborted, and `None`, when the object changed since it started.
    fn take(&self, key: &str, trigger: Option<u64>) -> Option<Handed<T>> {
        let mut parked = self.parked.lock().expect("handoffs lock");
        let entry = parked.get_mut(key)?;
        if entry.trigger != trigger {
            entry.abort.abort();
            parked.remove(key);
            return None;
        }
        if let Some(reason) = entry.taken.clone() {
            parked.remove(key);
            return Some(Handed::Busy(reason));
        }
        let finished = entry.done.lock().expect("handoff lock").take();
        match finished {
            Some(outcome) => {
                let rerun = entry.rerun;
                parked.remove(key);
                Some(Handed::Decided { outcome, rerun })
            }
            None => {
                entry.rerun = true;
                Some(Handed::Working)
            }
        }
    }
}

/// The namespace of a key (`Kind/namespace/name`).
fn namespace_of(key: &str) -> &str {
    key.split('/').nth(1).unwrap_or_default()
}

/// How many decisions each namespace runs in the background: finished ones waiting to be
/// taken hold nothing, nor do those stopped for another namespace.
fn running_by_namespace<K: Resource<DynamicType = ()>, T>(
    parked: &HashMap<String, Parked<K, T>>,
) -> HashMap<&str, usize> {
    let mut running = HashMap::new();
    for (key, p) in parked {
        if p.running() {
            *running.entry(namespace_of(key)).or_default() += 1;
        }
    }
    running
}

/// The namespace of the decision running longest, and how long it has run.
fn oldest_running<K: Resource<DynamicType = ()>, T>(
    parked: &HashMap<String, Parked<K, T>>,
    now: tokio::time::Instant,
) -> Option<(&str, Duration)> {
    let (key, p) = parked
        .iter()
        .filter(|(_, p)| p.running())
        .min_by_key(|(_, p)| p.started)?;
    Some((namespace_of(key), now.saturating_duration_since(p.started)))
}

/// Stops the newest running decision of `namespace` (the least work lost), keeping why for
/// its object's next reconcile; returns the object to wake.
fn take_newest<K: Resource<DynamicType = ()>, T>(
    parked: &mut HashMap<String, Parked<K, T>>,
    namespace: &str,
    reason: String,
) -> Option<ObjectRef<K>> {
    let newest = parked
        .iter_mut()
        .filter(|(key, p)| namespace_of(key) == namespace && p.running())
        .max_by_key(|(_, p)| p.started)?;
    let entry = newest.1;
    entry.abort.abort();
    entry.taken = Some(reason);
    Some(entry.target.clone())
}

/// A task's outcome; `None` when it was aborted. A panic goes on where it would have gone
/// had the decision run on the worker.
fn outcome<T>(joined: Result<T, JoinError>) -> Option<T> {
    match joined.map_err(JoinError::try_into_panic) {
        Ok(outcome) => Some(outcome),
        Err(Ok(panic)) => std::panic::resume_unwind(panic),
        // Aborted: the object changed or went.
        Err(Err(_cancelled)) => None,
    }
}

mod room;
#[cfg(test)]
mod tests;
