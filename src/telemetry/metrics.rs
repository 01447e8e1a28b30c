//! Prometheus metrics (prometheus-client, OpenMetrics text on `/metrics`): Flux's
//! `gotk_reconcile_duration_seconds{kind,name,namespace}` with controller-runtime's buckets, and
//! reconcile totals per controller and result. Series of a deleted object are removed.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::Mutex;
use std::time::Instant;

/// The object a duration series belongs to.
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

/// Every metric the controller exports.
pub struct Metrics {
    registry: Mutex<Registry>,
    durations: Family<ObjectLabels, Histogram, fn() -> Histogram>,
    totals: Family<ResultLabels, Counter>,
}

/// Flux's 10 exponential buckets from 10 ms to 1800 s.
fn duration_histogram() -> Histogram {
    let (start, end, count) = (0.01f64, 1800f64, 10);
    let factor = (end / start).powf(1.0 / (count as f64 - 1.0));
    // As Go's prometheus.ExponentialBucketsRange: min × factor^i with math.Pow.
    Histogram::new((0..count).map(move |i| start * factor.powf(f64::from(i))))
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let durations = Family::<ObjectLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            duration_histogram,
        );
        let totals = Family::<ResultLabels, Counter>::default();
        registry.register(
            "gotk_reconcile_duration_seconds",
            "The duration in seconds of a GitOps Toolkit resource reconciliation",
            durations.clone(),
        );
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller and result",
            totals.clone(),
        );
        Metrics {
            registry: Mutex::new(registry),
            durations,
            totals,
        }
    }
}

impl Metrics {
    /// Records how long a reconcile of `object` took, and how it ended.
    pub fn observe(
        &self,
        object: ObjectLabels,
        controller: &'static str,
        result: &'static str,
        started: Instant,
    ) {
        self.durations
            .get_or_create(&object)
            .observe(started.elapsed().as_secs_f64());
        self.totals
            .get_or_create(&ResultLabels { controller, result })
            .inc();
    }

    /// Drops the series of a deleted object.
    pub fn forget(&self, object: &ObjectLabels) {
        self.durations.remove(object);
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

    #[test]
    fn records_and_forgets_object_series() {
        let m = Metrics::default();
        let object = ObjectLabels {
            kind: "ImageRepository".into(),
            name: "app".into(),
            namespace: "team".into(),
        };
        m.observe(object.clone(), "imagerepository", "success", Instant::now());
        let text = m.encode();
        assert!(text.contains(
            "gotk_reconcile_duration_seconds_count{kind=\"ImageRepository\",name=\"app\",namespace=\"team\"} 1"
        ), "{text}");
        assert!(text.contains("le=\"0.01\""), "{text}");
        let bounds: Vec<f64> = text
            .lines()
            .filter(|l| l.starts_with("gotk_reconcile_duration_seconds_bucket"))
            .filter_map(|l| l.split("le=\"").nth(1)?.split('"').next()?.parse().ok())
            .filter(|b: &f64| b.is_finite())
            .collect();
        assert_eq!(bounds.len(), 10, "ten finite buckets: {bounds:?}");
        assert!((bounds[9] - 1800.0).abs() < 1e-6, "{bounds:?}");
        assert!(text.contains(
            "controller_runtime_reconcile_total{controller=\"imagerepository\",result=\"success\"} 1"
        ), "{text}");
        m.forget(&object);
        assert!(!m.encode().contains("name=\"app\""));
    }
}
