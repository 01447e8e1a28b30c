//! The ImageRepository reconcile as a function of (object, cluster objects, registry answers,
//! tag store, clock): Flux's inner flow (docs/imagerepository.md) with docs/compatibility.md's changes,
//! returning the status to write and what to do next. No API-server writes happen here, so
//! the controller and `image-reflector scan` share it, and tests call it directly.

use super::running_scans::{RunningScans, SLOT_RETRY};
use super::should_scan::{should_scan, ScanInputs, ScanReason};
use crate::api::{
    format_go_duration, ImageRepository, ImageRepositoryStatus, Provider, ScanResult,
    DEFAULT_EXCLUSION_LIST,
};
use crate::controller::shared::conditions::{whole_seconds, ConditionType, Conditions, Reason};
use crate::controller::shared::credentials::{client_options, ObjectReader, WorkloadIdentity};
use crate::controller::shared::intervals::intervals;
use crate::controller::shared::keys::REQUESTED_AT_ANNOTATION;
pub use crate::controller::shared::next::Next;
use crate::controller::shared::reconcile::Decision;
use crate::controller::shared::status::finish_status;
use crate::controller::shared::summary::Outcome;
use crate::policy::{compile_exclusions, Exclusions};
use crate::registry::{ImageReference, Registries, RegistryClient, RegistryError};
use crate::store::{RepoKey, TagList, TagStore};
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

/// How the steps ended: done, or held without a status change (`Err`: when next, and why).
type Steps = Result<(Outcome, Next, String), (Next, String)>;

/// The steps of §3.3, each ending the reconcile on failure.
async fn run_steps<R: ObjectReader>(
    repo: &ImageRepository,
    env: &RepositoryEnv<'_, R>,
    c: &mut Conditions<'_>,
    status: &mut ImageRepositoryStatus,
) -> Steps {
    let stalled = |c: &mut Conditions<'_>, reason: Reason, message: String| {
        c.mark_stalled(reason, &message);
        Ok((Outcome::Stalled, Next::AwaitChange, message))
    };
    let failed = |c: &mut Conditions<'_>, reason: Reason, message: String| {
        c.mark_false(reason, &message);
        let outcome = Outcome::Failed {
            error: message.clone(),
        };
        Ok((outcome, Next::Retry(message.clone()), message))
    };
    let spec = &repo.spec;
    if needs_workload_identity_gate(repo) && !env.workload_identity.enabled {
        return stalled(c, Reason::FeatureGateDisabled, FEATURE_GATE_MESSAGE.into());
    }
    c.mark_progress(status.observed_generation);
    // Names reach request URLs: checked before any read (docs/security.md).
    if let Err(message) = spec.check_references() {
        return stalled(c, Reason::InvalidReference, message);
    }
    let image = match ImageReference::parse(&spec.image, spec.insecure.unwrap_or(false)) {
        Ok(image) => image,
        Err(err) => return stalled(c, Reason::ImageUrlInvalid, err.to_string()),
    };
    c.delete(ConditionType::Stalled);
    let exclusions = effective_exclusions(repo);
    // A tenant's list: compiled on the blocking pool, within one size bound (docs/security.md).
    let list = exclusions.clone();
    let compiled = tokio::task::spawn_blocking(move || compile_exclusions(&list)).await;
    let filters = match compiled.unwrap_or_else(|e| Err(e.to_string())) {
        Ok(filters) => filters,
        Err(message) => return stalled(c, Reason::InvalidExclusionList, message),
    };
    let (interval, timeout) = match intervals(repo) {
        Ok(pair) => pair,
        Err(message) => return stalled(c, Reason::Failed, message),
    };
    let canonical = image.canonical();
    let namespace = repo.namespace().unwrap_or_default();
    let options = match client_options(
        repo,
        &namespace,
        &canonical,
        env.reader,
        timeout,
        env.workload_identity,
    )
    .await
    {
        Ok(options) => options,
        Err(err) => {
            let message = format!("failed to configure authentication options: {err}");
            return failed(c, Reason::AuthenticationFailed, message);
        }
    };
    let key = match RepoKey::new(namespace.as_str(), repo.name_any()) {
        Ok(key) => key,
        Err(err) => return stalled(c, Reason::Failed, err.to_string()),
    };
    let inputs = ScanInputs {
        requested_at: repo
            .annotations()
            .get(REQUESTED_AT_ANNOTATION)
            .map(String::as_str),
        canonical: &canonical,
        exclusions: &exclusions,
        interval,
        now: env.now,
    };
    let decision = match should_scan(status, &inputs, || stored_tag_count(env.store, &key)) {
        Ok(decision) => decision,
        Err(err) => {
            let message = format!("failed to determine if it's scan time: {err}");
            return failed(c, Reason::Failure, message);
        }
    };
    let next_in = format_go_duration(decision.next);
    let summary = match decision.reason {
        None => {
            format!("no change in repository configuration since last scan, next scan in {next_in}")
        }
        Some(reason) => {
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
            // A slow host or a busy tenant leaves a worker to the others: no slot, no wait.
            let slot = match env.running {
                Some(running) => match running.try_start(&key, image.registry()) {
                    Ok(slot) => Some(slot),
                    Err(busy) => {
                        return Err((Next::After(SLOT_RETRY), format!("waiting to scan: {busy}")))
                    }
                },
                None => None,
            };
            let client = RegistryClient::new(options, env.registries.clone());
            let scanned = match client {
                Ok(client) => {
                    let scanning =
                        scan(&client, &image, filters, env.store, &key, timeout, env.now);
                    match &slot {
                        Some(slot) => tokio::select! {
                            scanned = scanning => scanned,
                            () = slot.cancelled() => return Err((
                                Next::After(std::time::Duration::ZERO),
                                "scan cancelled: the object is being deleted".into(),
                            )),
                        },
                        None => scanning.await,
                    }
                }
                Err(err) => Err(ScanError::Registry(err)),
            };
            drop(slot);
            let result = match scanned {
                Ok(result) => result,
                Err(ScanError::Registry(err @ RegistryError::RateLimited { retry_at, .. })) => {
                    let message = format!("scan failed: {err}");
                    c.mark_false(Reason::RateLimited, &message);
                    let outcome = Outcome::Failed {
                        error: message.clone(),
                    };
                    return Ok((outcome, Next::RetryAt(retry_at), message));
                }
                Err(err) => {
                    let message = match err {
                        ScanError::Store(text) => {
                            format!("scan failed: failed to set tags for \"{canonical}\": {text}")
                        }
                        other => format!("scan failed: {other}"),
                    };
                    return failed(c, Reason::ReadOperationFailed, message);
                }
            };
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
    };
    status.canonical_image_name = Some(canonical);
    status.observed_exclusion_list = Some(exclusions);
    c.delete(ConditionType::Ready);
    let scan = status.last_scan_result.clone().unwrap_or_default();
    let message = format!(
        "successful scan: found {} tags with checksum {}",
        scan.tag_count,
        scan.revision.unwrap_or_default()
    );
    Ok((
        Outcome::Succeeded { message },
        Next::After(decision.next),
        summary,
    ))
}

/// A cloud provider with a ServiceAccount is object-level workload identity. Unlike Flux
/// (§7 item 11), an absent provider counts as `generic`, as everywhere else.
fn needs_workload_identity_gate(repo: &ImageRepository) -> bool {
    repo.spec.provider.is_some_and(|p| p != Provider::Generic)
        && repo
            .spec
            .service_account_name
            .as_deref()
            .is_some_and(|s| !s.is_empty())
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

fn stored_tag_count(store: &Arc<dyn TagStore>, key: &RepoKey) -> Result<usize, String> {
    store
        .get(key)
        .map(|(tags, _)| tags.len())
        .map_err(|e| e.to_string())
}

#[derive(Debug, thiserror::Error)]
enum ScanError {
    #[error(transparent)]
    Registry(RegistryError),
    #[error("{0}")]
    Store(String),
    #[error("the scan did not finish within {0} (spec.timeout)")]
    Timeout(String),
}

/// Lists, excludes, sorts and stores the tags under one deadline (§3.8).
async fn scan(
    client: &RegistryClient,
    image: &ImageReference,
    filters: Exclusions,
    store: &Arc<dyn TagStore>,
    key: &RepoKey,
    timeout: Duration,
    now: Timestamp,
) -> Result<ScanResult, ScanError> {
    let listing = tokio::time::timeout(
        timeout,
        client.list_tags_with(image, move |tag| !filters.excludes(tag)),
    )
    .await
    .map_err(|_| ScanError::Timeout(format_go_duration(timeout)))?
    .map_err(ScanError::Registry)?;
    let (store, key) = (store.clone(), key.clone());
    // Sorting up to a million tags, fsync and rename: off the async workers.
    let span = tracing::info_span!("store write", tags = listing.tags.len());
    let write = move || {
        span.in_scope(|| {
            let tags = TagList::new(&listing.tags)?;
            let revision = store.set(&key, &tags)?;
            Ok::<_, crate::store::StoreError>((tags.first(10), tags.len(), revision))
        })
    };
    let (latest_tags, count, revision) = tokio::task::spawn_blocking(write)
        .await
        .map_err(|e| ScanError::Store(e.to_string()))?
        .map_err(|e| ScanError::Store(e.to_string()))?;
    Ok(ScanResult {
        revision: Some(revision.as_str().to_string()),
        tag_count: count as i64,
        scan_time: Some(whole_seconds(now)),
        latest_tags: (!latest_tags.is_empty()).then_some(latest_tags),
    })
}
