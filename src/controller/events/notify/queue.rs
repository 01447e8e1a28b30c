//! The notifications waiting to be sent and being sent, shared by namespace (docs/security.md,
//! "Fair shares"). There was one task per Event and no bound on the posts in flight while
//! notification-controller was slow. Now at most [`MAX_SENDING`] posts are in flight, their
//! slots shared by namespace with max-min fairness (`crate::fair`) and held for one attempt
//! only (at most the client's 5 s timeout), so a namespace's notification waits for at most
//! one attempt in flight, whatever another namespace has queued. What waits is bounded:
//! [`MAX_QUEUED_PER_NAMESPACE`] a namespace, [`MAX_QUEUED`] in all; past the total, a
//! namespace under its fair share of the queue drops the oldest waiting notification of the
//! namespace queueing the most. A dropped notification is counted and logged; its Kubernetes
//! Event was recorded all the same.

use crate::fair::FairSlots;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

/// Posts to notification-controller in flight at once.
pub const MAX_SENDING: usize = 4;
/// Notifications one namespace may have waiting or being sent.
pub const MAX_QUEUED_PER_NAMESPACE: usize = 64;
/// Notifications all namespaces may have waiting or being sent.
pub const MAX_QUEUED: usize = 1024;

/// The queue of one notifier.
#[derive(Debug)]
pub(super) struct SendQueue {
    pub(super) slots: Arc<FairSlots>,
    state: Mutex<State>,
    /// Woken when a notification leaves the queue (flush).
    pub(super) left: Notify,
    max_queued: usize,
}

#[derive(Debug, Default)]
struct State {
    /// Each namespace's notifications, oldest first, with the task that sends it once known.
    queued: HashMap<String, VecDeque<(u64, Option<AbortHandle>)>>,
    total: usize,
    next: u64,
}

/// Why a notification was not queued, or which was dropped for it.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Dropped {
    /// The namespace has [`MAX_QUEUED_PER_NAMESPACE`] waiting: this one is dropped.
    ThisOne { queued: usize },
    /// The queue is full and this namespace holds its fair share of it: this one is dropped.
    OverShare { queued: usize, fair: usize },
}

/// A place in the queue, given back when dropped (sent, failed, or aborted).
#[derive(Debug)]
pub(super) struct Ticket {
    queue: Arc<SendQueue>,
    namespace: String,
    id: u64,
}

impl SendQueue {
    pub(super) fn new(sending: usize, max_queued: usize) -> Arc<Self> {
        Arc::new(SendQueue {
            slots: FairSlots::new(sending),
            state: Mutex::default(),
            left: Notify::new(),
            max_queued,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notifications waiting or being sent.
    pub(super) fn len(&self) -> usize {
        self.lock().total
    }

    /// A place for a notification of `namespace`, dropping another namespace's oldest when the
    /// queue is full and this namespace is under its fair share (returns which namespace lost
    /// one), or why it gets none.
    pub(super) fn admit(
        self: &Arc<Self>,
        namespace: &str,
    ) -> Result<(Ticket, Option<String>), Dropped> {
        let mut state = self.lock();
        let mine = state.queued.get(namespace).map_or(0, VecDeque::len);
        if mine >= MAX_QUEUED_PER_NAMESPACE {
            return Err(Dropped::ThisOne { queued: mine });
        }
        let mut evicted = None;
        if state.total >= self.max_queued {
            let namespaces = state.queued.len() + usize::from(mine == 0);
            let fair = (self.max_queued / namespaces).max(1);
            let most = state
                .queued
                .iter()
                .filter(|(ns, _)| *ns != namespace)
                .max_by_key(|(_, q)| q.len())
                .map(|(ns, q)| (ns.clone(), q.len()));
            match most {
                Some((ns, n)) if mine < fair && n > fair => {
                    let queue = state.queued.get_mut(&ns).expect("the namespace queues");
                    // Its oldest: aborting it drops its slot too, if it holds one.
                    if let Some((_, Some(task))) = queue.iter().find(|(_, t)| t.is_some()) {
                        task.abort();
                    }
                    evicted = Some(ns);
                }
                _ => return Err(Dropped::OverShare { queued: mine, fair }),
            }
        }
        state.next += 1;
        let id = state.next;
        state
            .queued
            .entry(namespace.to_string())
            .or_default()
            .push_back((id, None));
        state.total += 1;
        let ticket = Ticket {
            queue: self.clone(),
            namespace: namespace.to_string(),
            id,
        };
        Ok((ticket, evicted))
    }

    /// Records the task sending `ticket`'s notification, so it can be dropped for another.
    pub(super) fn started(&self, ticket_id: u64, namespace: &str, task: AbortHandle) {
        let mut state = self.lock();
        let entry = state
            .queued
            .get_mut(namespace)
            .and_then(|q| q.iter_mut().find(|(id, _)| *id == ticket_id));
        if let Some((_, handle)) = entry {
            *handle = Some(task);
        }
    }

    fn leave(&self, namespace: &str, id: u64) {
        let mut state = self.lock();
        if let Some(queue) = state.queued.get_mut(namespace) {
            let before = queue.len();
            queue.retain(|(i, _)| *i != id);
            let removed = before - queue.len();
            if queue.is_empty() {
                state.queued.remove(namespace);
            }
            state.total -= removed;
        }
        drop(state);
        self.left.notify_waiters();
    }
}

impl Ticket {
    pub(super) fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.queue.leave(&self.namespace, self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held tickets of `namespace`, `n` of them, each with a task that never ends.
    fn fill(
        queue: &Arc<SendQueue>,
        namespace: &str,
        n: usize,
    ) -> Vec<(Ticket, tokio::task::JoinHandle<()>)> {
        (0..n)
            .map(|_| {
                let (ticket, _) = queue.admit(namespace).unwrap();
                let task = tokio::spawn(std::future::pending::<()>());
                queue.started(ticket.id(), namespace, task.abort_handle());
                (ticket, task)
            })
            .collect()
    }

    /// A namespace queues at most 64; past the total, a namespace under its fair share drops
    /// the oldest of the one queueing the most (its task is aborted, no other), and one at
    /// its share is refused.
    #[tokio::test]
    async fn the_queue_is_bounded_and_shared_by_namespace() {
        let queue = SendQueue::new(MAX_SENDING, 100);
        let hostile = fill(&queue, "hostile", MAX_QUEUED_PER_NAMESPACE);
        assert_eq!(
            queue.admit("hostile").unwrap_err(),
            Dropped::ThisOne { queued: 64 }
        );
        let _other = fill(&queue, "other", 36);
        assert_eq!(queue.len(), 100);
        let (team, evicted) = queue.admit("team").unwrap();
        assert_eq!(evicted.as_deref(), Some("hostile"));
        tokio::task::yield_now().await;
        let aborted: Vec<usize> = (0..hostile.len())
            .filter(|i| hostile[*i].1.is_finished())
            .collect();
        assert_eq!(aborted, [0], "the oldest, and no other");
        assert_eq!(
            queue.len(),
            101,
            "the dropped one leaves when its ticket goes"
        );
        drop(hostile);
        drop(team);
        assert_eq!(queue.len(), 36);
    }

    /// Only a namespace under its share takes a place, and only from one over it.
    #[tokio::test]
    async fn a_place_is_taken_only_below_the_share_from_above_it() {
        // 2 and 3 of 5: "a" holds its share (2), so it takes nothing from "b".
        let full = SendQueue::new(MAX_SENDING, 5);
        let _a = fill(&full, "a", 2);
        let _b = fill(&full, "b", 3);
        assert_eq!(
            full.admit("a").unwrap_err(),
            Dropped::OverShare { queued: 2, fair: 2 }
        );
        // One each of 4, a fifth namespace: its share is one (at least), and no one holds
        // more than that.
        let even = SendQueue::new(MAX_SENDING, 4);
        let _held: Vec<_> = ["a", "b", "c", "d"]
            .iter()
            .flat_map(|ns| fill(&even, ns, 1))
            .collect();
        assert_eq!(
            even.admit("e").unwrap_err(),
            Dropped::OverShare { queued: 0, fair: 1 }
        );
    }
}
