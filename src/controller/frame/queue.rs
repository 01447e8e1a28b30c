//! Each controller's work queue: the objects due for a reconcile (`workqueue_depth`), the ones
//! being reconciled, and how long the oldest of those has been running, which is how `/healthz`
//! tells a stuck loop. It is also where reconciles wait: every trigger and every requeue comes
//! here, and [`releases`](release) hands kube-runtime's controller only what is due, a few at a
//! time. kube's scheduler keeps each object it is given in three tables that never shrink (its
//! delay queue, its map and its pending set, each with two copies of the object's reference), so
//! a cold start that gave it every object at once kept about 600 bytes an object for good
//! (docs/benchmarks-history.md); here an object waits in about 150.
//!
//! As in kube-runtime, one object waits at most once and an earlier time wins; a reconcile that
//! starts takes what was waiting for its object.

mod release;
#[cfg(test)]
mod tests;

use crate::telemetry::collect::{Kind, Series, Source};
use crate::telemetry::metrics::QueueMetrics;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One controller's queue, keyed by [`crate::controller::object::keys::object_key`].
#[derive(Debug)]
pub struct WorkQueue {
    /// The controller's name in metrics: `imagerepository` or `imagepolicy`.
    pub name: &'static str,
    state: Mutex<State>,
    /// Objects are known by a hash of their key, keyed at random per process so that no tenant
    /// can pick names that collide with another's.
    keys: RandomState,
    /// Wakes [`release`] when something may be due sooner, or a place to release one opened.
    wake: tokio::sync::Notify,
    /// Where waits, reconcile times and retries are recorded (none in tests without metrics).
    recorded: Mutex<Option<QueueMetrics>>,
    /// Called with an object's key when its reconcile ended and it is not released again:
    /// what was staged for kube's controller goes ([`super::stage`]).
    settled: OnceLock<Settled>,
}

/// What [`WorkQueue::on_settled`] calls.
pub struct Settled(pub Box<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for Settled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Settled")
    }
}

#[derive(Debug, Default)]
struct State {
    /// Objects waiting, by the hash of their key.
    waiting: HashMap<u64, Waiting>,
    /// The waiting objects by the time they are due, earliest first. An entry whose time is not
    /// its object's in `waiting` any more is stale, and dropped when it comes up.
    timeline: BinaryHeap<Reverse<(Instant, u64)>>,
    /// Handed to kube's controller and not started yet (by hash).
    released: HashSet<u64>,
    /// Objects being reconciled, with the time the reconcile started (a few: `--concurrent`).
    running: HashMap<String, Instant>,
    /// Whether the controller's loop is running (false before the start and after the end).
    alive: bool,
    adds: u64,
}

/// What [`State::next_due`] found.
#[derive(Debug, PartialEq, Eq)]
enum Due {
    /// This object is due: it is released.
    Now(Box<str>),
    /// Nothing is due before this time (`None`: nothing waits, or no place is free).
    Later(Option<Instant>),
}

impl State {
    /// The next object due at `now`, released, if fewer than `limit` released ones have not
    /// started yet.
    fn next_due(&mut self, now: Instant, limit: usize) -> Due {
        if self.released.len() >= limit {
            return Due::Later(None);
        }
        while let Some(Reverse((due, hash))) = self.timeline.peek().copied() {
            if self.waiting.get(&hash).is_none_or(|w| w.due != due) {
                self.timeline.pop();
                continue;
            }
            if due > now {
                return Due::Later(Some(due));
            }
            self.timeline.pop();
            let waiting = self.waiting.remove(&hash).expect("checked above");
            self.released.insert(hash);
            return Due::Now(waiting.key);
        }
        Due::Later(None)
    }

    /// Drops the stale entries once they are more than the live ones (each object brought
    /// forward leaves one behind until its old time comes).
    fn compact(&mut self) {
        if self.timeline.len() > 2 * self.waiting.len() + 64 {
            let waiting = &self.waiting;
            self.timeline
                .retain(|Reverse((due, hash))| waiting.get(hash).is_some_and(|w| w.due == *due));
        }
    }
}

/// One object waiting: when it is due, and its key (for kube's reference when it is released).
#[derive(Debug)]
struct Waiting {
    due: Instant,
    key: Box<str>,
}

/// A snapshot for metrics and health.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueStats {
    /// Objects due now and not running.
    pub depth: usize,
    /// Reconciles in flight.
    pub running: usize,
    /// How long the oldest reconcile in flight has run.
    pub oldest_running: Option<Duration>,
    /// Triggers and requeues so far.
    pub adds: u64,
    pub alive: bool,
}

impl WorkQueue {
    pub fn new(name: &'static str) -> Self {
        WorkQueue {
            name,
            state: Mutex::default(),
            keys: RandomState::new(),
            wake: tokio::sync::Notify::new(),
            recorded: Mutex::default(),
            settled: OnceLock::new(),
        }
    }

    /// Records into `metrics` from now on.
    pub fn record_into(&self, metrics: QueueMetrics) {
        *self.recorded.lock().expect("work queue metrics lock") = Some(metrics);
    }

    fn record(&self, f: impl FnOnce(&QueueMetrics)) {
        if let Some(metrics) = self
            .recorded
            .lock()
            .expect("work queue metrics lock")
            .as_ref()
        {
            f(metrics);
        }
    }

    /// A reconcile of `key` failed and is tried again (`workqueue_retries_total`).
    pub fn retried(&self) {
        self.record(|m| {
            m.retries.inc();
        });
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn hash(&self, key: &str) -> u64 {
        self.keys.hash_one(key)
    }

    /// `key` is due at `at` (a trigger: now; a requeue: later).
    pub fn add(&self, key: String, at: Instant) {
        let hash = self.hash(&key);
        let mut state = self.state();
        state.adds += 1;
        let sooner = match state.waiting.get_mut(&hash) {
            Some(waiting) if waiting.due <= at => false,
            Some(waiting) => {
                waiting.due = at;
                true
            }
            None => {
                let key = key.into_boxed_str();
                state.waiting.insert(hash, Waiting { due: at, key });
                true
            }
        };
        if sooner {
            state.timeline.push(Reverse((at, hash)));
            state.compact();
            drop(state);
            self.wake.notify_one();
        }
    }

    /// A reconcile of `key` starts: it takes what was waiting for it.
    pub fn start(&self, key: &str, now: Instant) {
        let hash = self.hash(key);
        let mut state = self.state();
        let due = state.waiting.remove(&hash).map(|w| w.due);
        let was_released = state.released.remove(&hash);
        state.running.insert(key.to_string(), now);
        drop(state);
        if was_released {
            self.wake.notify_one();
        }
        let waited = due.map_or(Duration::ZERO, |due| now.saturating_duration_since(due));
        self.record(|m| m.queue_duration.observe(waited.as_secs_f64()));
    }

    /// A reconcile of `key` ended; `requeue` is when it runs again, if it does.
    pub fn finish(&self, key: &str, requeue: Option<Duration>, now: Instant) {
        let hash = self.hash(key);
        let mut state = self.state();
        let started = state.running.remove(key);
        self.settle(&state, hash, key);
        drop(state);
        if let Some(started) = started {
            let took = now.saturating_duration_since(started);
            self.record(|m| m.work_duration.observe(took.as_secs_f64()));
        }
        if let Some(after) = requeue {
            self.add(key.to_string(), now + after);
        }
    }

    /// The object is gone: nothing of it stays queued.
    pub fn forget(&self, key: &str) {
        let hash = self.hash(key);
        let mut state = self.state();
        state.waiting.remove(&hash);
        state.running.remove(key);
        let was_released = state.released.remove(&hash);
        self.settle(&state, hash, key);
        drop(state);
        if was_released {
            self.wake.notify_one();
        }
    }

    /// Calls `settled` with each object's key once its reconcile ended and it is not released
    /// again (the first call only: one controller per queue).
    pub fn on_settled(&self, settled: Settled) {
        let _ = self.settled.set(settled);
    }

    /// Under the state's lock, so that no release comes between the look and the call.
    fn settle(&self, state: &State, hash: u64, key: &str) {
        if !state.released.contains(&hash) {
            if let Some(Settled(settled)) = self.settled.get() {
                settled(key);
            }
        }
    }

    /// Marks the controller's loop running or ended.
    pub fn set_alive(&self, alive: bool) {
        self.state().alive = alive;
    }

    /// The object reconciled for the longest time now, and for how long.
    pub fn oldest_running(&self, now: Instant) -> Option<(String, Duration)> {
        let state = self.state();
        state
            .running
            .iter()
            .map(|(key, started)| (key.clone(), now.saturating_duration_since(*started)))
            .max_by_key(|(_, age)| *age)
    }

    /// The time the reconciles in flight have run so far, together.
    pub fn unfinished(&self, now: Instant) -> Duration {
        let state = self.state();
        state
            .running
            .values()
            .map(|started| now.saturating_duration_since(*started))
            .sum()
    }

    pub fn stats(&self, now: Instant) -> QueueStats {
        let state = self.state();
        QueueStats {
            depth: state.waiting.values().filter(|w| w.due <= now).count() + state.released.len(),
            running: state.running.len(),
            oldest_running: state
                .running
                .values()
                .map(|started| now.saturating_duration_since(*started))
                .max(),
            adds: state.adds,
            alive: state.alive,
        }
    }
}

/// Why `/healthz` fails, if it does: a loop that ended, or a reconcile running too long.
pub fn unhealthy(queues: &[&WorkQueue], stuck_after: Duration, now: Instant) -> Option<String> {
    queues.iter().find_map(|queue| {
        if !queue.stats(now).alive {
            return Some(format!("the {} controller is not running", queue.name));
        }
        match queue.oldest_running(now) {
            Some((key, age)) if age > stuck_after => Some(format!(
                "the reconcile of {key} has been running for {}s (more than {}s)",
                age.as_secs(),
                stuck_after.as_secs()
            )),
            _ => None,
        }
    })
}

/// The queues as controller-runtime's metrics: `workqueue_depth`, `workqueue_adds_total`,
/// `workqueue_longest_running_processor_seconds` (by `name`) and
/// `controller_runtime_active_workers` (by `controller`).
pub struct QueueSource(pub Vec<Arc<WorkQueue>>);

impl Source for QueueSource {
    fn series(&self) -> Vec<Series> {
        let now = Instant::now();
        let mut depth = Series::new("workqueue_depth", "Current depth of workqueue", Kind::Gauge);
        let mut adds = Series::new(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            Kind::Counter,
        );
        let mut longest = Series::new(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            Kind::Gauge,
        );
        let mut active = Series::new(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            Kind::Gauge,
        );
        let mut unfinished = Series::new(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
            Kind::Gauge,
        );
        for queue in &self.0 {
            let stats = queue.stats(now);
            let name = || vec![("name", queue.name.to_string())];
            depth = depth.sample(name(), stats.depth as f64);
            adds = adds.sample(name(), stats.adds as f64);
            longest = longest.sample(
                name(),
                stats.oldest_running.unwrap_or_default().as_secs_f64(),
            );
            active = active.sample(
                vec![("controller", queue.name.to_string())],
                stats.running as f64,
            );
            unfinished = unfinished.sample(name(), queue.unfinished(now).as_secs_f64());
        }
        vec![depth, adds, longest, active, unfinished]
    }
}
