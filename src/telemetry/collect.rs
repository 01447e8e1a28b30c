//! Metrics read at scrape time from state that is kept anyway (work queues, the registry
//! scheduler), so nothing is counted twice: a [`Source`] lists its series and [`Collected`]
//! encodes them for prometheus-client.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use std::sync::Arc;

/// Counter (whole counts), counter of seconds (fractional), or gauge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Seconds,
    Gauge,
}

/// One metric with its samples.
#[derive(Clone, Debug)]
pub struct Series {
    /// The name; a counter's `_total` suffix is added by the encoder.
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    pub samples: Vec<(Vec<(&'static str, String)>, f64)>,
}

impl Series {
    pub fn new(name: &'static str, help: &'static str, kind: Kind) -> Self {
        Series {
            name,
            help,
            kind,
            samples: Vec::new(),
        }
    }

    pub fn sample(mut self, labels: Vec<(&'static str, String)>, value: f64) -> Self {
        self.samples.push((labels, value));
        self
    }
}

/// Something that lists series at scrape time.
pub trait Source: Send + Sync + 'static {
    fn series(&self) -> Vec<Series>;
}

/// A [`Source`] as a prometheus-client collector.
pub struct Collected(pub Arc<dyn Source>);

impl std::fmt::Debug for Collected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Collected")
    }
}

impl Collector for Collected {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for series in self.0.series() {
            let metric_type = match series.kind {
                Kind::Counter | Kind::Seconds => MetricType::Counter,
                Kind::Gauge => MetricType::Gauge,
            };
            let mut metric =
                encoder.encode_descriptor(series.name, series.help, None, metric_type)?;
            for (labels, value) in &series.samples {
                // No labels: `name value`, not `name{} value`.
                match labels.is_empty() {
                    true => encode_value(&mut metric, series.kind, *value)?,
                    false => encode_value(&mut metric.encode_family(labels)?, series.kind, *value)?,
                }
            }
        }
        Ok(())
    }
}

fn encode_value(
    sample: &mut prometheus_client::encoding::MetricEncoder<'_>,
    kind: Kind,
    value: f64,
) -> Result<(), std::fmt::Error> {
    match kind {
        // Counters here are whole counts.
        Kind::Counter => sample.encode_counter::<NoLabelSet, u64, f64>(&(value as u64), None),
        Kind::Seconds => sample.encode_counter::<NoLabelSet, f64, f64>(&value, None),
        Kind::Gauge => sample.encode_gauge(&value),
    }
}
