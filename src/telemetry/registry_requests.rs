//! Registry traffic as metrics, read from the shared per-host scheduler at scrape time:
//! requests by host and status code, requests refused while a host backs off, and how long
//! each host's backoff still lasts.

use super::collect::{Kind, Series, Source};
use crate::registry::Registries;
use std::sync::Arc;

/// The registry series of one process.
pub struct RegistrySource(pub Arc<Registries>);

impl Source for RegistrySource {
    fn series(&self) -> Vec<Series> {
        let scheduler = self.0.scheduler();
        let mut requests = Series::new(
            "image_reflector_registry_requests",
            "Registry HTTP requests by host and status code (`error`: no answer)",
            Kind::Counter,
        );
        for ((host, code), n) in scheduler.request_counts() {
            requests = requests.sample(vec![("host", host), ("code", code)], n as f64);
        }
        let mut refused = Series::new(
            "image_reflector_registry_rate_limited",
            "Registry requests not sent because the host asked us to back off (429/5xx, Retry-After)",
            Kind::Counter,
        );
        for (host, n) in scheduler.refused_counts() {
            refused = refused.sample(vec![("host", host)], n as f64);
        }
        let mut backoff = Series::new(
            "image_reflector_registry_backoff_seconds",
            "How long the host's backoff still lasts (0: none)",
            Kind::Gauge,
        );
        for (host, left) in scheduler.backoffs() {
            backoff = backoff.sample(vec![("host", host)], left.as_secs_f64());
        }
        vec![requests, refused, backoff]
    }
}
