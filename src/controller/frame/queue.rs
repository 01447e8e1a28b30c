//! What each controller's work queue holds, seen from outside kube-runtime's scheduler: the
//! objects due for a reconcile (`workqueue_depth`), the ones being reconciled, and how long the
//! oldest of those has been running, which is how `/healthz` tells a stuck loop.
//!
//! kube-runtime keeps its queue private, so this follows what enters it (a trigger: due now;
//! a requeue: due later) and what leaves it (a reconcile starts). As in kube-runtime, one
//! object is queued at most once and an earlier time wins.

use crate::telemetry::collect::{Kind, Series, Source};
use crate::telemetry::metrics::QueueMetrics;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One controller's queue, keyed by [`crate::controller::object::keys::object_key`].
#[derive(Debug)]
pub struct WorkQueue {
    /// The controller's name in metrics: `imagerepository` or `imagepolicy`.
    pub name: &'static str,
    state: Mutex<State>,
    /// Where waits, reconcile times and retries are recorded (none in tests without metrics).
    recorded: Mutex<Option<QueueMetrics>>,
}

#[derive(Debug, Default)]
struct State {
    /// Objects waiting, with the time they are due.
    waiting: HashMap<String, Instant>,
    /// Objects being reconciled, with the time the reconcile started.
    running: HashMap<String, Instant>,
    /// Whether the controller's loop is running (false before the start and after the end).
    alive: bool,
    adds: u64,
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
            recorded: Mutex::default(),
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

    /// `key` is due at `at` (a trigger: now; a requeue: later).
    pub fn add(&self, key: String, at: Instant) {
        let mut state = self.state();
        state.adds += 1;
        let due = state.waiting.entry(key).or_insert(at);
        *due = (*due).min(at);
    }

    /// A reconcile of `key` starts: it leaves the queue.
    pub fn start(&self, key: &str, now: Instant) {
        let mut state = self.state();
        let due = state.waiting.remove(key);
        state.running.insert(key.to_string(), now);
        drop(state);
        let waited = due.map_or(Duration::ZERO, |due| now.saturating_duration_since(due));
        self.record(|m| m.queue_duration.observe(waited.as_secs_f64()));
    }

    /// A reconcile of `key` ended; `requeue` is when it runs again, if it does.
    pub fn finish(&self, key: &str, requeue: Option<Duration>, now: Instant) {
        let started = self.state().running.remove(key);
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
        let mut state = self.state();
        state.waiting.remove(key);
        state.running.remove(key);
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

    /// Drives a controller's result stream, marking the loop alive while it runs.
    pub async fn run_loop<S, T, E>(self: Arc<Self>, results: S)
    where
        S: futures::Stream<Item = Result<T, E>>,
        E: std::fmt::Display,
    {
        use futures::StreamExt;
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
        results
            .for_each(|result| async move {
                if let Err(err) = result {
                    tracing::debug!(error = %err, "reconcile ended with an error");
                }
            })
            .await;
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
            depth: state.waiting.values().filter(|due| **due <= now).count(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_due_objects_once_each() {
        let q = WorkQueue::new("imagerepository");
        let t0 = Instant::now();
        q.add("a".into(), t0);
        q.add("a".into(), t0);
        q.add("b".into(), t0 + Duration::from_secs(60));
        assert_eq!(q.stats(t0).depth, 1, "b is not due yet; a counts once");
        assert_eq!(q.stats(t0).adds, 3);
        // A trigger brings a later requeue forward.
        q.add("b".into(), t0);
        assert_eq!(q.stats(t0).depth, 2);
        q.start("a", t0);
        let stats = q.stats(t0 + Duration::from_secs(2));
        assert_eq!((stats.depth, stats.running), (1, 1));
        assert_eq!(stats.oldest_running, Some(Duration::from_secs(2)));
        q.finish(
            "a",
            Some(Duration::from_secs(30)),
            t0 + Duration::from_secs(2),
        );
        let stats = q.stats(t0 + Duration::from_secs(3));
        assert_eq!((stats.depth, stats.running), (1, 0));
        assert_eq!(
            q.stats(t0 + Duration::from_secs(40)).depth,
            2,
            "a is due again"
        );
        q.forget("a");
        q.forget("b");
        assert_eq!(q.stats(t0 + Duration::from_secs(40)).depth, 0);
    }

    #[test]
    fn waits_reconcile_times_and_retries_are_recorded() {
        let metrics = crate::telemetry::metrics::Metrics::default();
        let q = WorkQueue::new("imagerepository");
        q.record_into(metrics.queue(q.name));
        let t0 = Instant::now();
        q.add("a".into(), t0);
        q.start("a", t0 + Duration::from_millis(300));
        assert_eq!(
            q.unfinished(t0 + Duration::from_millis(500)),
            Duration::from_millis(200)
        );
        q.retried();
        q.finish(
            "a",
            Some(Duration::from_secs(1)),
            t0 + Duration::from_secs(2),
        );
        let text = metrics.encode();
        let line = |prefix: &str| {
            text.lines()
                .find(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("{prefix} in {text}"))
                .to_string()
        };
        assert!(
            line("workqueue_queue_duration_seconds_sum{name=\"imagerepository\"}")
                .ends_with(" 0.3")
        );
        assert!(
            line("workqueue_work_duration_seconds_sum{name=\"imagerepository\"}").ends_with(" 1.7")
        );
        assert!(line("workqueue_retries_total{name=\"imagerepository\"}").ends_with(" 1"));
    }

    #[test]
    fn unhealthy_when_a_loop_ended_or_a_reconcile_is_stuck() {
        let q = WorkQueue::new("imagepolicy");
        let t0 = Instant::now();
        let limit = Duration::from_secs(60);
        assert_eq!(
            unhealthy(&[&q], limit, t0).as_deref(),
            Some("the imagepolicy controller is not running")
        );
        q.set_alive(true);
        q.start("p", t0);
        assert_eq!(unhealthy(&[&q], limit, t0 + Duration::from_secs(59)), None);
        assert_eq!(
            unhealthy(&[&q], limit, t0 + Duration::from_secs(61)).as_deref(),
            Some("the reconcile of p has been running for 61s (more than 60s)")
        );
        q.finish("p", None, t0 + Duration::from_secs(61));
        assert_eq!(unhealthy(&[&q], limit, t0 + Duration::from_secs(62)), None);
    }
}
