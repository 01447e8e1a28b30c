//! Prometheus metrics (prometheus-client, OpenMetrics text on `/metrics`).
//!
//! Flux's and controller-runtime's names, so Flux dashboards keep working:
//! `gotk_reconcile_duration_seconds{kind,name,namespace}` (Flux's buckets),
//! `controller_runtime_reconcile_total{controller,result}`,
//! `controller_runtime_reconcile_errors_total{controller}`,
//! `controller_runtime_reconcile_time_seconds{controller}`, `leader_election_master_status`,
//! and the work queue series of [`crate::controller::frame::queue`]. Ours, prefixed
//! `image_reflector_`: tags and last scan time per repository, Ready per object, one info
//! series per policy with its current tag and digest, and registry requests, throttling and
//! backoff per host ([`super::collect`]). Every series of a deleted object is removed. The
//! per-object series are one record per object ([`super::objects`]).

use super::collect::{Collected, Source};
pub use super::objects::Elected;
use super::objects::{ObjectSeries, GATES};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The object a series belongs to.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct ObjectLabels {
    pub kind: Cow<'static, str>,
    pub name: String,
    pub namespace: String,
}

/// A controller and how its reconcile ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    pub controller: &'static str,
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: &'static str,
}

/// A namespace and a gate, of tags held back.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HeldLabels {
    namespace: String,
    gate: &'static str,
}

/// How a notification to `--events-addr` may end.
pub const NOTIFICATION_RESULTS: [&str; 6] = [
    "delivered",
    "refused",
    "rejected",
    "unreachable",
    "unreadable",
    "dropped",
];

/// How a notification to `--events-addr` ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NotificationLabels {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaderLabels {
    name: String,
}

/// A work queue's name (`imagerepository`, `imagepolicy`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
}

/// The per-queue series a work queue records as objects pass through it.
#[derive(Clone, Debug)]
pub struct QueueMetrics {
    /// How long an object waited, due, before a worker took it.
    pub queue_duration: Histogram,
    /// How long a reconcile took.
    pub work_duration: Histogram,
    /// Reconciles requeued after an error.
    pub retries: Counter,
}

/// client-go's work queue buckets: 10 ns to 10 s, by tens.
fn workqueue_histogram() -> Histogram {
    Histogram::new((0..10).map(|i| 1e-8 * 10f64.powi(i)))
}

/// Every metric the controller exports.
pub struct Metrics {
    registry: Mutex<Registry>,
    objects: ObjectSeries,
    totals: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    times: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    leader: Family<LeaderLabels, Gauge>,
    queue_durations: Family<QueueLabels, Histogram, fn() -> Histogram>,
    work_durations: Family<QueueLabels, Histogram, fn() -> Histogram>,
    retries: Family<QueueLabels, Counter>,
    /// Fields beyond Flux's the served ImagePolicy schema lacks (-1: not read yet).
    schema_missing: Gauge,
    /// Reconciles of a policy that arrived without fields its generation held: nothing written.
    gates_hidden: Counter,
    /// Tags (and digests) a gate held back that it did not hold before, by namespace and gate.
    held_back: Family<HeldLabels, Counter>,
    /// Notifications to `--events-addr`, by how each ended.
    notifications: Family<NotificationLabels, Counter>,
}

/// controller-runtime's reconcile time buckets.
fn reconcile_time_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
        15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
    ])
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let m = Metrics {
            registry: Mutex::default(),
            objects: ObjectSeries::new(),
            totals: Family::default(),
            errors: Family::default(),
            times: Family::new_with_constructor(reconcile_time_histogram),
            leader: Family::default(),
            queue_durations: Family::new_with_constructor(workqueue_histogram),
            work_durations: Family::new_with_constructor(workqueue_histogram),
            retries: Family::default(),
            schema_missing: Gauge::default(),
            gates_hidden: Counter::default(),
            held_back: Family::default(),
            notifications: Family::default(),
        };
        m.schema_missing.set(-1);
        let r = &mut registry;
        r.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller and result",
            m.totals.clone(),
        );
        r.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            m.errors.clone(),
        );
        r.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            m.times.clone(),
        );
        r.register(
            "leader_election_master_status",
            "1 while this replica holds the leader-election Lease",
            m.leader.clone(),
        );
        r.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            m.queue_durations.clone(),
        );
        r.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            m.work_durations.clone(),
        );
        r.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            m.retries.clone(),
        );
        r.register(
            "image_reflector_served_schema_fields_missing",
            "ImagePolicy spec fields beyond Flux's that the API server's schema lacks (-1 unknown)",
            m.schema_missing.clone(),
        );
        r.register(
            "image_reflector_gates_hidden",
            "Reconciles of a policy served without fields its generation held: nothing written",
            m.gates_hidden.clone(),
        );
        r.register(
            "image_reflector_held_back",
            "Tags (at a digest) a gate held back that it did not hold before, by namespace and gate",
            m.held_back.clone(),
        );
        r.register(
            "image_reflector_event_notifications",
            "Notifications to --events-addr by how each ended: delivered, refused (401 or 403), \
             rejected (another answer), unreachable, unreadable (CA bundle or token), dropped",
            m.notifications.clone(),
        );
        r.register_collector(Box::new(m.objects.clone()));
        *m.registry.lock().expect("metrics registry lock") = registry;
        m
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// The series the work queue `name` records into.
    pub fn queue(&self, name: &str) -> QueueMetrics {
        let labels = QueueLabels { name: name.into() };
        QueueMetrics {
            queue_duration: self.queue_durations.get_or_create(&labels).clone(),
            work_duration: self.work_durations.get_or_create(&labels).clone(),
            retries: self.retries.get_or_create(&labels).clone(),
        }
    }

    /// Adds series read at scrape time.
    pub fn add_source(&self, source: Arc<dyn Source>) {
        self.registry
            .lock()
            .expect("metrics registry lock")
            .register_collector(Box::new(Collected(source)));
    }

    /// Records how long a reconcile of `object` took, and how it ended.
    pub fn observe(
        &self,
        object: ObjectLabels,
        controller: &'static str,
        result: &'static str,
        started: Instant,
    ) {
        let seconds = started.elapsed().as_secs_f64();
        self.objects
            .observe(object.kind, &object.namespace, &object.name, seconds);
        self.times
            .get_or_create(&ControllerLabels { controller })
            .observe(seconds);
        self.totals
            .get_or_create(&ResultLabels { controller, result })
            .inc();
        if result != "success" {
            self.errors
                .get_or_create(&ControllerLabels { controller })
                .inc();
        }
    }

    /// Whether the object's Ready condition is True.
    pub fn set_ready(&self, object: &ObjectLabels, ready: bool) {
        self.objects
            .set_ready(object.kind.clone(), &object.namespace, &object.name, ready);
    }

    /// The result of an ImageRepository's last successful scan.
    pub fn set_scan(&self, namespace: &str, name: &str, tags: u64, scanned_at_unix: f64) {
        self.objects
            .set_scan(namespace, name, tags, scanned_at_unix);
    }

    /// What a policy elects now; `None` removes its info series.
    pub fn set_policy(&self, namespace: &str, name: &str, elected: Option<Elected>) {
        self.objects.set_elected(namespace, name, elected);
    }

    /// Whether this replica leads (`name` is the Lease's name).
    pub fn set_leader(&self, name: &str, leading: bool) {
        self.leader
            .get_or_create(&LeaderLabels { name: name.into() })
            .set(i64::from(leading));
    }

    /// What the served ImagePolicy schema lacks (controller/schema/monitor.rs).
    pub fn set_served_schema_fields_missing(&self, missing: i64) {
        self.schema_missing.set(missing);
    }

    /// A policy held because it arrived without fields its generation held.
    pub fn gates_hidden(&self) {
        self.gates_hidden.inc();
    }

    /// What a policy's gates hold back now, one gate name per gate holding a tag.
    pub fn set_held_back<'a>(
        &self,
        namespace: &str,
        name: &str,
        gates: impl Iterator<Item = &'a str>,
    ) {
        self.objects.set_held(namespace, name, &mut { gates });
    }

    /// A gate held back a tag (and digest) it did not hold before.
    pub fn held_back(&self, namespace: &str, gate: &str) {
        let Some(gate) = GATES.iter().find(|g| **g == gate) else {
            return;
        };
        let labels = HeldLabels {
            namespace: namespace.to_string(),
            gate,
        };
        self.held_back.get_or_create(&labels).inc();
    }

    /// A notification ended as `result` (one of [`NOTIFICATION_RESULTS`]; another is not
    /// counted, so the label's values stay bounded).
    pub fn notification(&self, result: &str) {
        if let Some(result) = NOTIFICATION_RESULTS.iter().find(|r| **r == result) {
            let labels = NotificationLabels { result };
            self.notifications.get_or_create(&labels).inc();
        }
    }

    /// Drops every series of a deleted object.
    pub fn forget(&self, object: &ObjectLabels) {
        self.objects
            .forget(&object.kind, &object.namespace, &object.name);
    }

    /// The scrape's answer in pieces (`exposition::Chunks`): OpenMetrics or 0.0.4, gzipped or not.
    pub fn encode_chunks(&self, text_004: bool, gzip: bool) -> Vec<Vec<u8>> {
        let mut chunks = super::exposition::Chunks::new(text_004, gzip);
        let registry = self.registry.lock().expect("metrics registry lock");
        // Chunks never fail a write.
        let _ = prometheus_client::encoding::text::encode(&mut chunks, &registry);
        chunks.finish()
    }

    /// The OpenMetrics text.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        let registry = self.registry.lock().expect("metrics registry lock");
        // Encoding into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(kind: &'static str) -> ObjectLabels {
        ObjectLabels {
            kind: kind.into(),
            name: "app".into(),
            namespace: "team".into(),
        }
    }

    #[test]
    fn records_and_forgets_object_series() {
        let m = Metrics::default();
        let repo = object("ImageRepository");
        m.observe(repo.clone(), "imagerepository", "success", Instant::now());
        m.observe(repo.clone(), "imagerepository", "transient", Instant::now());
        m.set_ready(&repo, true);
        m.set_scan("team", "app", 42, 1.7e9);
        let text = m.encode();
        for line in [
            "gotk_reconcile_duration_seconds_count{kind=\"ImageRepository\",name=\"app\",namespace=\"team\"} 2",
            "controller_runtime_reconcile_total{controller=\"imagerepository\",result=\"success\"} 1",
            "controller_runtime_reconcile_errors_total{controller=\"imagerepository\"} 1",
            "controller_runtime_reconcile_time_seconds_count{controller=\"imagerepository\"} 2",
            "image_reflector_ready{kind=\"ImageRepository\",name=\"app\",namespace=\"team\"} 1",
            "image_reflector_repository_tags{name=\"app\",namespace=\"team\"} 42",
            "image_reflector_repository_last_scan_timestamp_seconds{name=\"app\",namespace=\"team\"} 1700000000.0",
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
        let bounds: Vec<f64> = text
            .lines()
            .filter(|l| l.starts_with("gotk_reconcile_duration_seconds_bucket"))
            .filter_map(|l| l.split("le=\"").nth(1)?.split('"').next()?.parse().ok())
            .filter(|b: &f64| b.is_finite())
            .collect();
        assert_eq!(bounds.len(), 10, "ten finite buckets: {bounds:?}");
        assert!((bounds[0] - 0.01).abs() < 1e-9 && (bounds[9] - 1800.0).abs() < 1e-6);
        m.forget(&repo);
        assert!(!m.encode().contains("name=\"app\""), "{}", m.encode());
    }

    #[test]
    fn a_policy_has_one_info_series_with_its_current_election() {
        let m = Metrics::default();
        let info = |tag: &str| Elected {
            image: "ghcr.io/org/app".into(),
            tag: tag.into(),
            digest: String::new(),
        };
        m.set_policy("team", "app", Some(info("1.0.0")));
        m.set_policy("team", "app", Some(info("1.1.0")));
        let text = m.encode();
        assert!(!text.contains("tag=\"1.0.0\""), "{text}");
        assert!(text.contains("image_reflector_policy_info{name=\"app\",namespace=\"team\",image=\"ghcr.io/org/app\",tag=\"1.1.0\",digest=\"\"} 1"), "{text}");
        m.forget(&object("ImagePolicy"));
        assert!(!m.encode().contains("tag=\"1.1.0\""));
    }
}
