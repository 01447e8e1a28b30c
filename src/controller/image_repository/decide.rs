//! The ImageRepository reconcile as a function of (object, cluster objects, registry answers,
//! tag store, clock): Flux's inner flow (docs/imagerepository.md) with docs/compatibility.md's changes,
//! returning the status to write and what to do next. No API-server writes happen here, so
//! the controller and `image-reflector scan` share it, and tests call it directly.

use super::running_scans::{RunningScans, ScanSlot, SLOT_RETRY};
use super::scan::{scan, ScanError};
use super::should_scan::{should_scan, ScanInputs, ScanReason};
use crate::api::{
    format_go_duration, ImageRepository, ImageRepositoryStatus, ScanResult, DEFAULT_EXCLUSION_LIST,
    REFERRERS_TAG_EXCLUSION,
};
use crate::controller::frame::reconciled::Decision;
use crate::controller::lookup::credentials::{client_options, ObjectReader, WorkloadIdentity};
use crate::controller::object::intervals::intervals;
use crate::controller::object::keys::REQUESTED_AT_ANNOTATION;
use crate::controller::outcome::conditions::{ConditionType, Conditions, Reason};
pub use crate::controller::outcome::next::Next;
use crate::controller::outcome::status::finish_status;
use crate::controller::outcome::stop::{Steps, Stop};
use crate::controller::outcome::summary::Outcome;
use crate::policy::{compile_exclusions, Exclusions};
use crate::reference::ImageReference;
use crate::registry::{Registries, RegistryClient, RegistryError};
use crate::store::{RepoKey, StoreError, TagStore};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use std::sync::Arc;
use std::time::Duration;

/// Flux's `FeatureGateDisabled` message for an ImageRepository.
pub const FEATURE_GATE_MESSAGE: &str = "to use spec.serviceAccountName for provider authentication please enable the ObjectLevelWorkloadIdentity feature gate in the controller";

/// What a reconcile reads besides the object.
pub struct RepositoryEnv<'a, R> {
    pub reader: &'a R,
    pub registries: &'a Arc<Registries>,
    pub store: &'a Arc<dyn TagStore>,
    pub now: Timestamp,
    /// The `ObjectLevelWorkloadIdentity` gate and `--default-service-account`.
    pub workload_identity: WorkloadIdentity<'a>,
    /// The controller's running scans (per-host and per-namespace limits, cancellation on
    /// deletion); `None` offline, where one scan runs per object.
    pub running: Option<&'a RunningScans>,
}

/// The status to write and what to do next.
pub type RepositoryResult = Decision<ImageRepositoryStatus>;

/// Runs one reconcile of `repo` and returns its status.
pub async fn reconcile_repository<R: ObjectReader>(
    repo: &ImageRepository,
    env: &RepositoryEnv<'_, R>,
) -> RepositoryResult {
    let old = repo.status.clone().unwrap_or_default();
    let generation = repo.metadata.generation.unwrap_or(0);
    let mut status = old.clone();
    let mut list = old.conditions.clone().unwrap_or_default();
    let mut conditions = Conditions::new(&mut list, generation, env.now);
    let (outcome, next, summary) = match run_steps(repo, env, &mut conditions, &mut status).await {
        Ok(done) => done,
        // Not this time (no scan slot, or deleted while scanning): nothing to write.
        Err((next, summary)) => {
            return RepositoryResult {
                status: old,
                next,
                summary,
                held: true,
            }
        }
    };
    finish_status(repo, &old, &mut status, list, &outcome, env.now);
    RepositoryResult {
        status,
        next,
        summary,
        held: false,
    }
}

/// What the spec says, checked: everything a scan needs that cannot fail later.
struct Checked {
    image: ImageReference,
    exclusions: Vec<String>,
    filters: Exclusions,
    interval: Duration,
    timeout: Duration,
    key: RepoKey,
}

/// The steps of Flux's flow (docs/imagerepository.md), each ending the reconcile on failure.
async fn run_steps<R: ObjectReader>(
    repo: &ImageRepository,
    env: &RepositoryEnv<'_, R>,
    c: &mut Conditions<'_>,
    status: &mut ImageRepositoryStatus,
) -> Steps {
    let steps = async {
        check_gate(repo, env)?;
        c.mark_progress(status.observed_generation);
        let spec = check_spec(repo).await?;
        c.delete(ConditionType::Stalled);
        let canonical = spec.image.canonical();
        let options = auth_options(repo, env, &canonical, spec.timeout).await?;
        let due = scan_due(repo, env, status, &spec, &canonical)?;
        let next_in = format_go_duration(due.next);
        let summary = match due.reason {
            None => format!(
                "no change in repository configuration since last scan, next scan in {next_in}"
            ),
            Some(reason) => {
                mark_scanning(c, reason);
                let result = scan_now(env, &spec, options, &canonical).await?;
                record_scan(status, result, &next_in)
            }
        };
        status.canonical_image_name = Some(canonical);
        status.observed_exclusion_list = Some(spec.exclusions);
        Ok::<_, Stop>((due.next, summary))
    };
    match steps.await {
        Ok((next, summary)) => Ok(succeeded(c, status, next, summary)),
        Err(stop) => stop.into_steps(c),
    }
}

/// Object-level workload identity needs its feature gate.
fn check_gate<R>(repo: &ImageRepository, env: &RepositoryEnv<'_, R>) -> Result<(), Stop> {
    match env.workload_identity.refuses(repo) {
        true => Err(Stop::Stalled(
            Reason::FeatureGateDisabled,
            FEATURE_GATE_MESSAGE.into(),
        )),
        false => Ok(()),
    }
}

/// The references, the image, the exclusions, the interval and the store key: a tenant's
/// input, checked before any read (docs/security.md); what fails here stalls.
async fn check_spec(repo: &ImageRepository) -> Result<Checked, Stop> {
    let spec = &repo.spec;
    let stalled = |reason| move |message: String| Stop::Stalled(reason, message);
    // Names reach request URLs.
    spec.check_references()
        .map_err(stalled(Reason::InvalidReference))?;
    let image = ImageReference::parse(&spec.image, spec.insecure.unwrap_or(false))
        .map_err(|e| Stop::Stalled(Reason::ImageUrlInvalid, e.to_string()))?;
    let exclusions = effective_exclusions(repo);
    let filters = match default_exclusions(&exclusions) {
        Some(compiled) => compiled,
        None => {
            // Compiled on the blocking pool, within one size bound.
            let list = exclusions.clone();
            let compiled = tokio::task::spawn_blocking(move || compile_exclusions(&list)).await;
            compiled
                .unwrap_or_else(|e| Err(e.to_string()))
                .map_err(stalled(Reason::InvalidExclusionList))?
        }
    };
    let (interval, timeout) =
        intervals(repo).map_err(|e| stalled(Reason::Failed)(e.to_string()))?;
    let key = RepoKey::new(repo.namespace().unwrap_or_default(), repo.name_any())
        .map_err(|e| Stop::Stalled(Reason::Failed, e.to_string()))?;
    Ok(Checked {
        image,
        exclusions,
        filters,
        interval,
        timeout,
        key,
    })
}

/// Credentials, TLS and proxy for the registry, from the Secrets and ServiceAccount named.
async fn auth_options<R: ObjectReader>(
    repo: &ImageRepository,
    env: &RepositoryEnv<'_, R>,
    canonical: &str,
    timeout: Duration,
) -> Result<crate::registry::ClientOptions, Stop> {
    let namespace = repo.namespace().unwrap_or_default();
    let options = client_options(
        repo,
        &namespace,
        canonical,
        env.reader,
        timeout,
        env.workload_identity,
    );
    options.await.map_err(|err| {
        let message = format!("failed to configure authentication options: {err}");
        Stop::Failed(Reason::AuthenticationFailed, message)
    })
}

/// Whether to scan now, and when next ([`should_scan`]).
fn scan_due<R>(
    repo: &ImageRepository,
    env: &RepositoryEnv<'_, R>,
    status: &ImageRepositoryStatus,
    spec: &Checked,
    canonical: &str,
) -> Result<super::should_scan::ScanDecision, Stop> {
    let inputs = ScanInputs {
        requested_at: repo
            .annotations()
            .get(REQUESTED_AT_ANNOTATION)
            .map(String::as_str),
        canonical,
        exclusions: &spec.exclusions,
        interval: spec.interval,
        now: env.now,
    };
    should_scan(status, &inputs, || stored_tag_count(env.store, &spec.key)).map_err(|err| {
        let message = format!("failed to determine if it's scan time: {err}");
        Stop::Failed(Reason::Failure, message)
    })
}

/// Reconciling (and Ready=Unknown before a first scan) while the scan runs.
fn mark_scanning(c: &mut Conditions<'_>, reason: ScanReason) {
    let progress = format!("scanning: {}", reason.as_str());
    c.mark_reconciling(Reason::Progressing, &progress);
    if reason == ScanReason::NoTagsInDatabase {
        c.set(
            ConditionType::Ready,
            crate::api::ConditionStatus::Unknown,
            Reason::Progressing,
            &progress,
        );
    }
}

/// The scan, in a slot of its host and namespace when the controller runs it: a slow host or
/// a busy tenant leaves a worker to the others (no slot, no wait), and deleting the object
/// cancels it.
async fn scan_now<R>(
    env: &RepositoryEnv<'_, R>,
    spec: &Checked,
    mut options: crate::registry::ClientOptions,
    canonical: &str,
) -> Result<ScanResult, Stop> {
    let slot = match env.running {
        Some(running) => match running.try_start(&spec.key, spec.image.registry()) {
            Ok(slot) => Some(slot),
            Err(busy) => {
                return Err(Stop::Held(
                    Next::After(SLOT_RETRY),
                    format!("waiting to scan: {busy}"),
                ))
            }
        },
        None => None,
    };
    options.waits = slot.as_ref().map(ScanSlot::waits);
    let scanned = match RegistryClient::new(options, env.registries.clone()) {
        Ok(client) => {
            let (image, store) = (&spec.image, env.store);
            let scanning = scan(
                &client,
                image,
                spec.filters.clone(),
                store,
                &spec.key,
                spec.timeout,
                env.now,
            );
            match &slot {
                Some(slot) => tokio::select! {
                    scanned = scanning => scanned,
                    () = slot.cancelled() => return Err(Stop::Held(
                        Next::After(Duration::ZERO),
                        "scan cancelled: the object is being deleted".into(),
                    )),
                },
                None => scanning.await,
            }
        }
        Err(err) => Err(ScanError::Registry(err)),
    };
    drop(slot);
    scanned.map_err(|err| match err {
        ScanError::Registry(err @ RegistryError::RateLimited { retry_at, .. }) => {
            Stop::RateLimited(format!("scan failed: {err}"), retry_at)
        }
        ScanError::Store(text) => Stop::Failed(
            Reason::ReadOperationFailed,
            format!("scan failed: failed to set tags for \"{canonical}\": {text}"),
        ),
        other => Stop::Failed(Reason::ReadOperationFailed, format!("scan failed: {other}")),
    })
}

/// The scan's result in the status; the summary says whether the tags changed.
fn record_scan(status: &mut ImageRepositoryStatus, result: ScanResult, next_in: &str) -> String {
    let unchanged = status
        .last_scan_result
        .as_ref()
        .is_some_and(|old| old.revision == result.revision);
    status.last_scan_result = Some(result);
    match unchanged {
        true => format!("tags did not change, next scan in {next_in}"),
        false => format!("successful scan, next scan in {next_in}"),
    }
}

/// Ready=True with the last scan's count and checksum; again after the interval.
fn succeeded(
    c: &mut Conditions<'_>,
    status: &ImageRepositoryStatus,
    next: Duration,
    summary: String,
) -> (Outcome, Next, String) {
    c.delete(ConditionType::Ready);
    let scan = status.last_scan_result.clone().unwrap_or_default();
    let message = format!(
        "successful scan: found {} tags with checksum {}",
        scan.tag_count,
        scan.revision.unwrap_or_default()
    );
    (Outcome::Succeeded { message }, Next::After(next), summary)
}

/// `spec.exclusionList`, or the default when it is absent or empty (§1.6).
pub fn effective_exclusions(repo: &ImageRepository) -> Vec<String> {
    match &repo.spec.exclusion_list {
        Some(list) if !list.is_empty() => list.clone(),
        _ => DEFAULT_EXCLUSION_LIST
            .iter()
            .map(|s| s.to_string())
            .collect(),
    }
}

/// Flux's default list, compiled once for the process: nearly every repository has it, and
/// compiling it at every reconcile was part of the 2.7% of a cold start's CPU spent compiling
/// regular expressions (docs/benchmarks-history.md). A list of the tenant's own is compiled each time:
/// kept, such lists (each up to the 10 MiB bound) could hold any amount of memory. With the
/// default, the referrers tag schema is excluded too ([`REFERRERS_TAG_EXCLUSION`]; reported
/// in `observedExclusionList` as Flux reports it, the list alone).
fn default_exclusions(list: &[String]) -> Option<Exclusions> {
    static DEFAULT: std::sync::OnceLock<Exclusions> = std::sync::OnceLock::new();
    let is_default = list
        .iter()
        .map(String::as_str)
        .eq(DEFAULT_EXCLUSION_LIST.iter().copied());
    let compile = || {
        let list: Vec<String> = DEFAULT_EXCLUSION_LIST
            .iter()
            .chain(&[REFERRERS_TAG_EXCLUSION])
            .map(|p| p.to_string())
            .collect();
        compile_exclusions(&list).expect("Flux's default exclusion list compiles")
    };
    is_default.then(|| DEFAULT.get_or_init(compile).clone())
}

fn stored_tag_count(store: &Arc<dyn TagStore>, key: &RepoKey) -> Result<usize, StoreError> {
    store.get(key).map(|(tags, _)| tags.len())
}

#[cfg(test)]
mod tests {
    use super::default_exclusions;

    /// Flux's default list is served compiled; a list of the tenant's own is not kept.
    #[test]
    fn only_fluxs_default_exclusion_list_is_kept_compiled() {
        let default = default_exclusions(&[r"^.*\.sig$".to_string()]).expect("kept");
        assert!(default.excludes("sha256-abc.sig") && !default.excludes("1.0.0"));
        assert_eq!(default.len(), 2, "Flux's rule and the referrers tag schema");
        let digest = "a".repeat(64);
        for referrer in [format!("sha256-{digest}"), format!("sha256-{digest}.att")] {
            assert!(default.excludes(&referrer), "{referrer}");
        }
        for kept in [
            "sha256-abc",
            "sha256-latest",
            "v-sha256-x",
            &format!("sha256-{digest}-1"),
        ] {
            assert!(!default.excludes(kept), "{kept}");
        }
        assert!(default_exclusions(&[r"^.*\.sig$".into(), "^v".into()]).is_none());
        assert!(default_exclusions(&["^v".to_string()]).is_none());
    }
}
