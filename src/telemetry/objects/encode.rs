//! The records encoded at scrape time, one metric at a time: a metric without series is left
//! out, as a family would be.

use super::{object, repository, Key, ObjectSeries, Record, BUCKETS, GATES, UNSET};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use std::sync::atomic::Ordering;

/// The records, as the lock gives them.
type Read<'a> = std::sync::RwLockReadGuard<'a, super::Records<Key, Record>>;

impl Collector for ObjectSeries {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let records = self.read();
        self.durations(&records, &mut encoder)?;
        ready(&records, &mut encoder)?;
        scans(&records, &mut encoder)?;
        elections(&records, &mut encoder)?;
        held(&records, &mut encoder)
    }
}

impl ObjectSeries {
    /// Flux's `gotk_reconcile_duration_seconds`, per object.
    fn durations(
        &self,
        records: &Read<'_>,
        encoder: &mut DescriptorEncoder,
    ) -> Result<(), std::fmt::Error> {
        if !records
            .iter()
            .any(|(_, r)| r.count.load(Ordering::Relaxed) > 0)
        {
            return Ok(());
        }
        let mut metric = encoder.encode_descriptor(
            "gotk_reconcile_duration_seconds",
            "The duration in seconds of a GitOps Toolkit resource reconciliation",
            None,
            MetricType::Histogram,
        )?;
        for (key, r) in records.iter() {
            let count = r.count.load(Ordering::Relaxed);
            if count == 0 {
                continue;
            }
            let mut buckets = [(f64::INFINITY, 0u64); BUCKETS + 1];
            let mut finite = 0;
            for (i, bound) in self.bounds.iter().enumerate() {
                let n = u64::from(r.buckets[i].load(Ordering::Relaxed));
                buckets[i] = (*bound, n);
                finite += n;
            }
            buckets[BUCKETS].1 = count.saturating_sub(finite);
            let sum = f64::from_bits(r.sum.load(Ordering::Relaxed));
            metric
                .encode_family(&object(key))?
                .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
        }
        Ok(())
    }
}

/// `image_reflector_ready`, per object whose Ready condition is known.
fn ready(records: &Read<'_>, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let known = |r: &Record| r.ready.load(Ordering::Relaxed) != UNSET;
    if !records.iter().any(|(_, r)| known(r)) {
        return Ok(());
    }
    let mut metric = encoder.encode_descriptor(
        "image_reflector_ready",
        "1 when the object's Ready condition is True, 0 otherwise",
        None,
        MetricType::Gauge,
    )?;
    for (key, r) in records.iter().filter(|(_, r)| known(r)) {
        let value = i64::from(r.ready.load(Ordering::Relaxed) == 2);
        metric.encode_family(&object(key))?.encode_gauge(&value)?;
    }
    Ok(())
}

/// A scanned repository's tags and last scan time.
fn scans(records: &Read<'_>, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let scanned = |r: &Record| r.scanned.load(Ordering::Relaxed) != UNSET;
    if !records.iter().any(|(_, r)| scanned(r)) {
        return Ok(());
    }
    let mut metric = encoder.encode_descriptor(
        "image_reflector_repository_tags",
        "Tags stored by the last successful scan of the ImageRepository",
        None,
        MetricType::Gauge,
    )?;
    for (key, r) in records.iter().filter(|(_, r)| scanned(r)) {
        let tags = i64::try_from(r.tags.load(Ordering::Relaxed)).unwrap_or(i64::MAX);
        metric
            .encode_family(&repository(key))?
            .encode_gauge(&tags)?;
    }
    let mut metric = encoder.encode_descriptor(
        "image_reflector_repository_last_scan_timestamp_seconds",
        "When the ImageRepository was last scanned successfully (Unix time)",
        None,
        MetricType::Gauge,
    )?;
    for (key, r) in records.iter().filter(|(_, r)| scanned(r)) {
        let at = f64::from_bits(r.last_scan.load(Ordering::Relaxed));
        metric.encode_family(&repository(key))?.encode_gauge(&at)?;
    }
    Ok(())
}

/// `image_reflector_policy_info`: the image, tag and digest each policy elects.
fn elections(records: &Read<'_>, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let elected = |r: &Record| {
        r.elected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    };
    if !records.iter().any(|(_, r)| elected(r)) {
        return Ok(());
    }
    let mut metric = encoder.encode_descriptor(
        "image_reflector_policy_info",
        "The image, tag and digest an ImagePolicy currently elects (value 1)",
        None,
        MetricType::Gauge,
    )?;
    for (key, r) in records.iter() {
        let guard = r.elected.lock().unwrap_or_else(|e| e.into_inner());
        let Some(e) = guard.as_deref() else { continue };
        let labels = [
            ("name", &*key.name),
            ("namespace", &*key.namespace),
            ("image", e.image.as_str()),
            ("tag", e.tag.as_str()),
            ("digest", e.digest.as_str()),
        ];
        metric.encode_family(&labels)?.encode_gauge(&1i64)?;
    }
    Ok(())
}

/// `image_reflector_held_back_tags`: how many tags each gate holds back now, per policy, for
/// the gates that hold one.
fn held(records: &Read<'_>, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let holds = |r: &Record| r.held.iter().any(|n| n.load(Ordering::Relaxed) > 0);
    if !records.iter().any(|(_, r)| holds(r)) {
        return Ok(());
    }
    let mut metric = encoder.encode_descriptor(
        "image_reflector_held_back_tags",
        "Tags an ImagePolicy's gate holds back now (status.heldBack, at most 10 a policy)",
        None,
        MetricType::Gauge,
    )?;
    for (key, r) in records.iter().filter(|(_, r)| holds(r)) {
        for (gate, n) in GATES.iter().zip(&r.held) {
            let n = i64::from(n.load(Ordering::Relaxed));
            if n > 0 {
                let labels = [
                    ("gate", *gate),
                    ("name", &*key.name),
                    ("namespace", &*key.namespace),
                ];
                metric.encode_family(&labels)?.encode_gauge(&n)?;
            }
        }
    }
    Ok(())
}
