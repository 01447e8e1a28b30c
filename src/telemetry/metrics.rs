//! Prometheus metrics (prometheus-client, OpenMetrics text on `/metrics`).
//!
//! Flux's and controller-runtime's names, so Flux dashboards keep working:
//! `gotk_reconcile_duration_seconds{kind,name,namespace}` (Flux's buckets),
//! `controller_runtime_reconcile_total{controller,result}`,
//! `controller_runtime_reconcile_errors_total{controller}`,
//! `controller_runtime_reconcile_time_seconds{controller}`, `leader_election_master_status`,
//! and the work queue series of [`crate::controller::queue`]. Ours, prefixed
//! `image_reflector_`: tags and last scan time per repository, Ready per object, one info
//! series per policy with its current tag and digest, and registry requests, throttling and
//! backoff per host ([`super::collect`]). Every series of a deleted object is removed.

use super::collect::{Collected, Source};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The object a series belongs to.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ObjectLabels {
    pub kind: String,
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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RepositoryLabels {
    name: String,
    namespace: String,
}

/// The info series of a policy: what it elected.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PolicyInfo {
    pub name: String,
    pub namespace: String,
    pub image: String,
    pub tag: String,
    pub digest: String,
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

type FloatGauge = Gauge<f64, AtomicU64>;

/// Every metric the controller exports.
pub struct Metrics {
    registry: Mutex<Registry>,
    durations: Family<ObjectLabels, Histogram, fn() -> Histogram>,
    totals: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    times: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    ready: Family<ObjectLabels, Gauge>,
    tags: Family<RepositoryLabels, Gauge>,
    last_scan: Family<RepositoryLabels, FloatGauge>,
    policy_info: Family<PolicyInfo, Gauge>,
    /// The info series each policy has now, so a new election replaces it.
    policy_current: Mutex<HashMap<(String, String), PolicyInfo>>,
    leader: Family<LeaderLabels, Gauge>,
    queue_durations: Family<QueueLabels, Histogram, fn() -> Histogram>,
    work_durations: Family<QueueLabels, Histogram, fn() -> Histogram>,
    retries: Family<QueueLabels, Counter>,
}

/// `min × factor^i` for `count` buckets from `min` to `max`, as Go's
/// `prometheus.ExponentialBucketsRange`.
fn exponential_range(min: f64, max: f64, count: u16) -> impl Iterator<Item = f64> {
    let factor = (max / min).powf(1.0 / (f64::from(count) - 1.0));
    (0..count).map(move |i| min * factor.powf(f64::from(i)))
}

/// Flux's 10 exponential buckets from 10 ms to 1800 s.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_range(0.01, 1800.0, 10))
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
            durations: Family::new_with_constructor(duration_histogram),
            totals: Family::default(),
            errors: Family::default(),
            times: Family::new_with_constructor(reconcile_time_histogram),
            ready: Family::default(),
            tags: Family::default(),
            last_scan: Family::default(),
            policy_info: Family::default(),
            policy_current: Mutex::default(),
            leader: Family::default(),
            queue_durations: Family::new_with_constructor(workqueue_histogram),
            work_durations: Family::new_with_constructor(workqueue_histogram),
            retries: Family::default(),
        };
        let r = &mut registry;
        r.register(
            "gotk_reconcile_duration_seconds",
            "The duration in seconds of a GitOps Toolkit resource reconciliation",
            m.durations.clone(),
        );
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
            "image_reflector_ready",
            "1 when the object's Ready condition is True, 0 otherwise",
            m.ready.clone(),
        );
        r.register(
            "image_reflector_repository_tags",
            "Tags stored by the last successful scan of the ImageRepository",
            m.tags.clone(),
        );
        r.register(
            "image_reflector_repository_last_scan_timestamp_seconds",
            "When the ImageRepository was last scanned successfully (Unix time)",
            m.last_scan.clone(),
        );
        r.register(
            "image_reflector_policy_info",
            "The image, tag and digest an ImagePolicy currently elects (value 1)",
            m.policy_info.clone(),
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
        *m.registry.lock().expect("metrics registry lock") = registry;
        m
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
        self.durations.get_or_create(&object).observe(seconds);
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
        self.ready.get_or_create(object).set(i64::from(ready));
    }

    /// The result of an ImageRepository's last successful scan.
    pub fn set_scan(&self, namespace: &str, name: &str, tags: u64, scanned_at_unix: f64) {
        let labels = RepositoryLabels {
            name: name.into(),
            namespace: namespace.into(),
        };
        self.tags
            .get_or_create(&labels)
            .set(i64::try_from(tags).unwrap_or(i64::MAX));
        self.last_scan.get_or_create(&labels).set(scanned_at_unix);
    }

    /// What a policy elects now; `None` removes its series.
    pub fn set_policy(&self, namespace: &str, name: &str, info: Option<PolicyInfo>) {
        let mut current = self.policy_current.lock().expect("policy info lock");
        let key = (namespace.to_string(), name.to_string());
        if let Some(old) = current.remove(&key) {
            self.policy_info.remove(&old);
        }
        if let Some(info) = info {
            self.policy_info.get_or_create(&info).set(1);
            current.insert(key, info);
        }
    }

    /// Whether this replica leads (`name` is the Lease's name).
    pub fn set_leader(&self, name: &str, leading: bool) {
        self.leader
            .get_or_create(&LeaderLabels { name: name.into() })
            .set(i64::from(leading));
    }

    /// Drops every series of a deleted object.
    pub fn forget(&self, object: &ObjectLabels) {
        self.durations.remove(object);
        self.ready.remove(object);
        let repository = RepositoryLabels {
            name: object.name.clone(),
            namespace: object.namespace.clone(),
        };
        match object.kind.as_str() {
            "ImageRepository" => {
                self.tags.remove(&repository);
                self.last_scan.remove(&repository);
            }
            _ => self.set_policy(&object.namespace, &object.name, None),
        }
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

    fn object(kind: &str) -> ObjectLabels {
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
        let info = |tag: &str| PolicyInfo {
            name: "app".into(),
            namespace: "team".into(),
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
