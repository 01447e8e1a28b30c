//! Whether an ImageRepository is scanned now, and when next (docs/imagerepository.md): the first
//! rule that applies wins, with Flux's reason strings. Pure; the stored tag count is read only
//! when the earlier rules did not decide.

use crate::api::ImageRepositoryStatus;
use k8s_openapi::jiff::Timestamp;
use std::time::Duration;

/// Why a scan runs now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanReason {
    FirstScan,
    ReconcileRequested,
    NewImageName,
    UpdatedExclusionList,
    NoTagsInDatabase,
    TriggeredByInterval,
}

impl ScanReason {
    /// Flux's text, used in `scanning: <reason>`.
    pub fn as_str(self) -> &'static str {
        match self {
            ScanReason::FirstScan => "first scan",
            ScanReason::ReconcileRequested => "reconcile requested",
            ScanReason::NewImageName => "new image name",
            ScanReason::UpdatedExclusionList => "updated exclusion list",
            ScanReason::NoTagsInDatabase => "no tags in database",
            ScanReason::TriggeredByInterval => "triggered by interval",
        }
    }
}

/// The decision: scan now (and why), and how long until the next scan is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanDecision {
    pub reason: Option<ScanReason>,
    pub next: Duration,
}

/// What the decision looks at besides the status.
pub struct ScanInputs<'a> {
    /// The `reconcile.fluxcd.io/requestedAt` annotation.
    pub requested_at: Option<&'a str>,
    /// The canonical name of the current `spec.image`.
    pub canonical: &'a str,
    /// The effective exclusion list.
    pub exclusions: &'a [String],
    pub interval: Duration,
    pub now: Timestamp,
}

/// Decides per §3.7; `stored_tags` is called only when rules 1–4 do not apply.
pub fn should_scan<E>(
    status: &ImageRepositoryStatus,
    inputs: &ScanInputs<'_>,
    stored_tags: impl FnOnce() -> Result<usize, E>,
) -> Result<ScanDecision, E> {
    let scan = |reason| ScanDecision {
        reason: Some(reason),
        next: inputs.interval,
    };
    let Some(last) = &status.last_scan_result else {
        return Ok(scan(ScanReason::FirstScan));
    };
    if let Some(token) = inputs.requested_at {
        if status.last_handled_reconcile_at.as_deref() != Some(token) {
            return Ok(scan(ScanReason::ReconcileRequested));
        }
    }
    if status.canonical_image_name.as_deref() != Some(inputs.canonical) {
        return Ok(scan(ScanReason::NewImageName));
    }
    // Compared as multisets: Flux's comparison misses `[a, a]` -> `[a, b]` (§7 item 10).
    let mut observed = status.observed_exclusion_list.clone().unwrap_or_default();
    let mut wanted = inputs.exclusions.to_vec();
    observed.sort();
    wanted.sort();
    if observed != wanted {
        return Ok(scan(ScanReason::UpdatedExclusionList));
    }
    if stored_tags()? == 0 {
        return Ok(scan(ScanReason::NoTagsInDatabase));
    }
    let elapsed = last
        .scan_time
        .as_ref()
        .map(|t| inputs.now.duration_since(t.0))
        .unwrap_or_default();
    let interval = k8s_openapi::jiff::SignedDuration::try_from(inputs.interval).unwrap_or_default();
    let remaining = interval - elapsed;
    if remaining < k8s_openapi::jiff::SignedDuration::from_secs(1) {
        return Ok(scan(ScanReason::TriggeredByInterval));
    }
    Ok(ScanDecision {
        reason: None,
        next: remaining.unsigned_abs(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ScanResult;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use std::convert::Infallible;

    const MINUTE: Duration = Duration::from_secs(60);

    fn scanned(at: i64) -> ImageRepositoryStatus {
        ImageRepositoryStatus {
            canonical_image_name: Some("index.docker.io/library/alpine".into()),
            observed_exclusion_list: Some(vec!["^.*\\.sig$".into()]),
            last_handled_reconcile_at: Some("t1".into()),
            last_scan_result: Some(ScanResult {
                revision: Some("sha256:x".into()),
                tag_count: 3,
                scan_time: Some(Time(Timestamp::from_second(at).unwrap())),
                latest_tags: None,
            }),
            ..Default::default()
        }
    }

    fn decide(
        status: &ImageRepositoryStatus,
        requested_at: Option<&str>,
        canonical: &str,
        exclusions: &[&str],
        stored: usize,
        now: i64,
    ) -> ScanDecision {
        let exclusions: Vec<String> = exclusions.iter().map(|s| s.to_string()).collect();
        let inputs = ScanInputs {
            requested_at,
            canonical,
            exclusions: &exclusions,
            interval: MINUTE,
            now: Timestamp::from_second(now).unwrap(),
        };
        should_scan(status, &inputs, || Ok::<_, Infallible>(stored)).unwrap()
    }

    /// Name, status, annotation, canonical name, exclusions, stored tags, now, reason, next.
    type Case<'a> = (
        &'a str,
        &'a ImageRepositoryStatus,
        Option<&'a str>,
        &'a str,
        &'a [&'a str],
        usize,
        i64,
        Option<ScanReason>,
        u64,
    );

    #[test]
    fn the_first_rule_that_applies_decides() {
        let alpine = "index.docker.io/library/alpine";
        let sig = "^.*\\.sig$";
        let s = scanned(1000);
        let cases: [Case<'_>; 9] = [
            (
                "new object",
                &ImageRepositoryStatus::default(),
                None,
                alpine,
                &[sig],
                3,
                1000,
                Some(ScanReason::FirstScan),
                60,
            ),
            (
                "annotation new",
                &s,
                Some("t2"),
                alpine,
                &[sig],
                3,
                1010,
                Some(ScanReason::ReconcileRequested),
                60,
            ),
            (
                "same annotation",
                &s,
                Some("t1"),
                alpine,
                &[sig],
                3,
                1030,
                None,
                30,
            ),
            ("no annotation", &s, None, alpine, &[sig], 3, 1030, None, 30),
            (
                "image changed",
                &s,
                Some("t1"),
                "ghcr.io/a/b",
                &[sig],
                3,
                1010,
                Some(ScanReason::NewImageName),
                60,
            ),
            (
                "exclusions changed",
                &s,
                None,
                alpine,
                &["^x$"],
                3,
                1010,
                Some(ScanReason::UpdatedExclusionList),
                60,
            ),
            (
                "empty store",
                &s,
                None,
                alpine,
                &[sig],
                0,
                1010,
                Some(ScanReason::NoTagsInDatabase),
                60,
            ),
            (
                "interval elapsed",
                &s,
                None,
                alpine,
                &[sig],
                3,
                1060,
                Some(ScanReason::TriggeredByInterval),
                60,
            ),
            (
                "exactly 1s left",
                &s,
                None,
                alpine,
                &[sig],
                3,
                1059,
                None,
                1,
            ),
        ];
        for (name, status, ann, canonical, excl, stored, now, reason, next) in cases {
            let d = decide(status, ann, canonical, excl, stored, now);
            assert_eq!(d.reason, reason, "{name}");
            assert_eq!(d.next, Duration::from_secs(next), "{name}");
        }
    }

    #[test]
    fn exclusion_lists_compare_as_multisets() {
        let mut s = scanned(1000);
        s.observed_exclusion_list = Some(vec!["a".into(), "a".into()]);
        let d = decide(
            &s,
            None,
            "index.docker.io/library/alpine",
            &["a", "b"],
            3,
            1010,
        );
        assert_eq!(d.reason, Some(ScanReason::UpdatedExclusionList));
        let d = decide(
            &s,
            None,
            "index.docker.io/library/alpine",
            &["a", "a"],
            3,
            1010,
        );
        assert_eq!(d.reason, None, "order and equal lists: no scan");
    }

    #[test]
    fn a_store_error_is_returned_and_the_store_is_read_only_when_needed() {
        let s = scanned(1000);
        let inputs = ScanInputs {
            requested_at: None,
            canonical: "index.docker.io/library/alpine",
            exclusions: &["^.*\\.sig$".to_string()],
            interval: MINUTE,
            now: Timestamp::from_second(1010).unwrap(),
        };
        assert_eq!(should_scan(&s, &inputs, || Err("disk")), Err("disk"));
        let first = should_scan(
            &ImageRepositoryStatus::default(),
            &inputs,
            || -> Result<usize, &str> { panic!("not read for a first scan") },
        );
        assert_eq!(first.unwrap().reason, Some(ScanReason::FirstScan));
    }

    #[test]
    fn reason_texts_are_fluxs() {
        let texts: Vec<&str> = [
            ScanReason::FirstScan,
            ScanReason::ReconcileRequested,
            ScanReason::NewImageName,
            ScanReason::UpdatedExclusionList,
            ScanReason::NoTagsInDatabase,
            ScanReason::TriggeredByInterval,
        ]
        .iter()
        .map(|r| r.as_str())
        .collect();
        assert_eq!(
            texts,
            [
                "first scan",
                "reconcile requested",
                "new image name",
                "updated exclusion list",
                "no tags in database",
                "triggered by interval"
            ]
        );
    }
}
