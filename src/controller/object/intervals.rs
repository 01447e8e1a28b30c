//! An ImageRepository's effective scan interval and timeout, with their bounds: the repository
//! scans on them, a policy bounds its digest lookups by them, and the reconcile deadline by the
//! longest scan.

use crate::api::parse_go_duration;
use crate::api::ImageRepository;
use std::time::Duration;
use thiserror::Error;

/// A repository's interval or timeout that is not a duration.
#[derive(Debug, Error)]
#[error("invalid spec.{field}: {reason}")]
pub struct IntervalError {
    pub field: &'static str,
    pub reason: String,
}

/// The shortest effective scan interval (and ImagePolicy digest interval). The schema admits
/// `1ms`, as Flux's does; three such objects sent 465 requests/s to a registry host other
/// tenants share. Flux has no floor (docs/compatibility.md).
pub const MIN_INTERVAL: Duration = Duration::from_secs(10);

/// The longest a scan may take, whatever `spec.timeout` (or the interval it defaults to)
/// says: a registry that drips a byte a second holds a worker no longer than this.
pub const MAX_SCAN_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// The effective scan interval (at least [`MIN_INTERVAL`]) and timeout (`timeout`, or the
/// interval, within 1 s and [`MAX_SCAN_TIMEOUT`]).
pub fn intervals(repo: &ImageRepository) -> Result<(Duration, Duration), IntervalError> {
    let invalid = |field| move |reason| IntervalError { field, reason };
    let interval = parse_go_duration(&repo.spec.interval)
        .map_err(invalid("interval"))?
        .max(MIN_INTERVAL);
    let timeout = match &repo.spec.timeout {
        Some(t) => parse_go_duration(t).map_err(invalid("timeout"))?,
        None => interval,
    };
    Ok((
        interval,
        timeout.clamp(Duration::from_secs(1), MAX_SCAN_TIMEOUT),
    ))
}
