//! The ImagePolicy reconcile as a function of (policy, cluster objects, stored tags, registry
//! answers, clock): Flux's flow (docs/imagepolicy.md) with docs/compatibility.md's changes (warm
//! start, digest reflection honouring `insecure`, no stale failure message). It returns the
//! status to write and when to run again; the controller and `image-reflector scan` share it.

use super::access::{check_acl, check_cross_namespace};
use super::digest::{reflected_digest, Wanted};
pub use super::env::{PolicyEnv, PolicyReader};
pub use super::gated::{MAX_INSPECTIONS, MAX_WALK};
pub use super::gated_step::CONTINUE_WALK;
use super::gated_step::{
    elect_gated, held_note, no_eligible_message, Candidates, Gated, GatedOutcome,
};
use super::report::ready_message;
use crate::api::{
    format_go_duration, parse_go_duration, ImagePolicy, ImagePolicyStatus, ImageRef,
    ImageRepository, ReflectionPolicy,
};
use crate::controller::shared::apply::Decision;
use crate::controller::shared::conditions::{ConditionType, Conditions, Reason};
use crate::controller::shared::next::Next;
use crate::controller::shared::status::finish_status;
use crate::controller::shared::summary::{fail, stall, Outcome};
use crate::policy::NotElected;
use crate::registry::ImageReference;
use crate::store::{RepoKey, StoreError, TagList, TagStore};
use kube::ResourceExt;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Flux's `FeatureGateDisabled` message for an ImagePolicy.
pub const FEATURE_GATE_MESSAGE: &str = "to use spec.serviceAccountName in the ImageRepository for provider authentication please enable the ObjectLevelWorkloadIdentity feature gate in the controller";

/// The requeue of an `Always` policy whose interval is zero (§1.6).
const DEFAULT_POLICY_INTERVAL: Duration = Duration::from_secs(600);

/// The status to write and what to do next.
pub type PolicyResult = Decision<ImagePolicyStatus>;

/// How the steps ended: with an outcome, or holding the status as it is (warm start).
enum Step {
    Done(Outcome, Next, String),
    Hold(Next, String),
}

/// Runs one reconcile of `policy` and returns its status.
pub async fn reconcile_policy<R: PolicyReader>(
    policy: &ImagePolicy,
    env: &PolicyEnv<'_, R>,
) -> PolicyResult {
    let old = policy.status.clone().unwrap_or_default();
    let generation = policy.metadata.generation.unwrap_or(0);
    let mut status = old.clone();
    let mut list = old.conditions.clone().unwrap_or_default();
    let mut conditions = Conditions::new(&mut list, generation, env.now);
    let (outcome, next, summary) = match run_steps(policy, env, &mut conditions, &mut status).await
    {
        Step::Done(outcome, next, summary) => (outcome, next, summary),
        Step::Hold(next, summary) => {
            return PolicyResult {
                status: old,
                next,
                summary,
                held: true,
            }
        }
    };
    finish_status(policy, &old, &mut status, list, &outcome, env.now);
    PolicyResult {
        status,
        next,
        summary,
        held: false,
    }
}

fn stalled(c: &mut Conditions<'_>, reason: Reason, message: String) -> Step {
    let (outcome, next, message) = stall(c, reason, message);
    Step::Done(outcome, next, message)
}

fn failed(c: &mut Conditions<'_>, reason: Reason, message: String) -> Step {
    let (outcome, next, message) = fail(c, reason, message);
    Step::Done(outcome, next, message)
}

/// The steps of §4.2, each ending the reconcile on failure.
async fn run_steps<R: PolicyReader>(
    policy: &ImagePolicy,
    env: &PolicyEnv<'_, R>,
    c: &mut Conditions<'_>,
    status: &mut ImagePolicyStatus,
) -> Step {
    let spec = &policy.spec;
    let always = spec.digest_reflection_policy == Some(ReflectionPolicy::Always);
    let interval = match (always, spec.interval.as_deref()) {
        (true, None) => {
            let message =
                "spec.interval must be set when spec.digestReflectionPolicy is set to 'Always'";
            return stalled(c, Reason::IntervalNotConfigured, message.into());
        }
        (true, Some(text)) => match parse_go_duration(text) {
            Ok(d) if d.is_zero() => Some(DEFAULT_POLICY_INTERVAL),
            // Each period costs a manifest request to a shared host: the same floor as scans.
            Ok(d) => Some(d.max(crate::controller::shared::intervals::MIN_INTERVAL)),
            Err(e) => {
                return stalled(
                    c,
                    Reason::InvalidPolicy,
                    format!("invalid spec.interval: {e}"),
                )
            }
        },
        (false, _) => None,
    };
    c.mark_progress(status.observed_generation);
    if let Err(message) = spec.check_references() {
        return stalled(c, Reason::InvalidReference, message);
    }
    let repo = match find_repository(policy, env).await {
        Ok(repo) => repo,
        Err((reason, err)) => {
            let message = format!("failed to get the referred ImageRepository: {err}");
            return failed(c, reason, message);
        }
    };
    let image = match ImageReference::parse(&repo.spec.image, repo.spec.insecure.unwrap_or(false)) {
        Ok(image) => image,
        Err(err) => return stalled(c, Reason::ImageUrlInvalid, err.to_string()),
    };
    if env.workload_identity.refuses(&repo) {
        return stalled(c, Reason::FeatureGateDisabled, FEATURE_GATE_MESSAGE.into());
    }
    // The pattern and range are a tenant's: compiled on the blocking pool (docs/security.md).
    let owned = spec.clone();
    let compiled = tokio::task::spawn_blocking(move || owned.selection_policy()).await;
    let selection = match compiled {
        Ok(Ok(selection)) => selection,
        Ok(Err(err)) => return stalled(c, Reason::InvalidPolicy, err.to_string()),
        Err(err) => return failed(c, Reason::Failure, err.to_string()),
    };
    let gates = match spec.gates() {
        Ok(gates) => gates,
        Err(message) => return stalled(c, Reason::InvalidPolicy, message),
    };
    let repo_namespace = repo.namespace().unwrap_or_default();
    let key = match RepoKey::new(repo_namespace.as_str(), repo.name_any()) {
        Ok(key) => key,
        Err(err) => return failed(c, Reason::Failure, err.to_string()),
    };
    // A gated election may rank further candidates after the best: it keeps the policy and tags.
    let ranking = gates.any().then(|| selection.clone());
    let keep_tags = ranking.is_some();
    let elected = match read_and_elect(env.store.clone(), key.clone(), selection, keep_tags).await {
        Ok(elected) => elected,
        Err(message) => return failed(c, Reason::Failure, message),
    };
    let Some(elected) = elected else {
        // Warm start (docs/compatibility.md): an empty store after a restart is not news; keep the last
        // election until the repository's first scan, which re-triggers this policy.
        if status.latest_ref.is_some() && !(env.repository_scanned)(&key) {
            let summary = format!(
                "waiting for the first scan of {key} since start; keeping the last election"
            );
            return Step::Hold(Next::After(env.requeue_dependency), summary);
        }
        // A repository that has not finished its first scan is not a failure: the policy
        // waits, progressing, without a Warning; the scan landing re-triggers it.
        if repo
            .status
            .as_ref()
            .is_none_or(|s| s.last_scan_result.is_none())
        {
            let message = match repository_failure(&repo) {
                // Say why, as the repository says it (Flux users asked, IRC #449).
                Some(why) => format!(
                    "waiting for the first scan of ImageRepository {key}, which is failing: {why}"
                ),
                None => format!("waiting for the first scan of ImageRepository {key}"),
            };
            c.mark_reconciling(Reason::Progressing, &message);
            c.set(
                ConditionType::Ready,
                crate::api::ConditionStatus::Unknown,
                Reason::Progressing,
                &message,
            );
            return Step::Done(
                Outcome::Waiting,
                Next::After(env.requeue_dependency),
                message,
            );
        }
        let wait = format_go_duration(Duration::from_secs(
            env.requeue_dependency.as_secs_f64().round() as u64,
        ));
        let message = format!("retrying in {wait} error: no tags in database");
        c.mark_false(Reason::DependencyNotReady, &message);
        return Step::Done(
            Outcome::Waiting,
            Next::After(env.requeue_dependency),
            message,
        );
    };
    let (tag, tags) = match elected {
        Ok(elected) => elected,
        Err(err) => return failed(c, Reason::Failure, err.to_string()),
    };
    let name = repo.spec.image.clone();
    if let Some(ranking) = ranking {
        let candidates = Candidates {
            best: tag,
            tags: tags.unwrap_or_default(),
            ranking,
        };
        let gated = Gated {
            repo: &repo,
            image: &image,
            key: &key,
            gates: &gates,
            interval,
        };
        return match elect_gated(policy, &gated, candidates, status, env).await {
            Ok(GatedOutcome::Elected { held, look_again }) => {
                status.held_back = (!held.is_empty()).then_some(held);
                c.delete(ConditionType::Ready);
                let message = ready_message(status) + &held_note(status);
                let next = match (interval, look_again) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                let next = next.map_or(Next::AwaitChange, Next::After);
                let outcome = Outcome::Succeeded {
                    message: message.clone(),
                };
                Step::Done(outcome, next, message)
            }
            Ok(GatedOutcome::Unfinished { held, walked }) => {
                status.held_back = (!held.is_empty()).then_some(held);
                let message = format!(
                    "looked at {walked} candidates; going on in the next reconcile (at most {MAX_INSPECTIONS} registry inspections each)"
                );
                c.mark_reconciling(Reason::Progressing, &message);
                Step::Done(Outcome::Waiting, Next::After(CONTINUE_WALK), message)
            }
            Ok(GatedOutcome::NoneEligible {
                held,
                walked,
                look_again,
            }) => {
                status.held_back = (!held.is_empty()).then_some(held);
                let message = no_eligible_message(status, walked);
                c.mark_false(Reason::NoEligibleTag, &message);
                let next = look_again.unwrap_or(env.requeue_dependency);
                Step::Done(Outcome::Waiting, Next::After(next), message)
            }
            Err((reason, message)) => failed(c, reason, message),
        };
    }
    status.held_back = None;
    let wanted = Wanted {
        image: &image,
        key: &key,
        name: &name,
        tag: &tag,
        interval,
    };
    let (digest, due_in) = match reflected_digest(policy, &repo, &wanted, status, env).await {
        Ok(reflected) => reflected,
        Err(message) => return failed(c, Reason::Failed, message),
    };
    let elected = ImageRef { name, tag, digest };
    if status.latest_ref.as_ref() != Some(&elected) {
        status.observed_previous_ref = status.latest_ref.replace(elected);
    }
    c.delete(ConditionType::Ready);
    let message = ready_message(status);
    let next = due_in.or(interval).map_or(Next::AwaitChange, Next::After);
    Step::Done(
        Outcome::Succeeded {
            message: message.clone(),
        },
        next,
        message,
    )
}

/// The stored tags' election, `None` when there are none, and the tags when `keep_tags` (a
/// gated election may rank more candidates). Reading and electing run on the blocking pool: a
/// repository may hold a million tags and the pattern is a tenant's (docs/security.md).
/// A repository's `Ready=False` as `Reason: message` (the message cut short), if it is failing.
fn repository_failure(repo: &ImageRepository) -> Option<String> {
    let conditions = repo.status.as_ref()?.conditions.as_deref()?;
    let ready = conditions.iter().find(|c| c.type_ == "Ready")?;
    (ready.status == crate::api::ConditionStatus::False).then(|| {
        let message = crate::controller::shared::conditions::cut(&ready.message, 512);
        format!("{}: {message}", ready.reason)
    })
}

async fn read_and_elect(
    store: Arc<dyn TagStore>,
    key: RepoKey,
    selection: crate::policy::Policy,
    keep_tags: bool,
) -> Result<Option<Result<(String, Option<TagList>), NotElected>>, String> {
    let span = tracing::info_span!("store read");
    let elect = move || {
        let (tags, _) = span.in_scope(|| store.get(&key))?;
        if tags.is_empty() {
            return Ok::<_, StoreError>(None);
        }
        let best = match selection.select_sorted(tags.iter()) {
            Ok(best) => best.to_string(),
            Err(err) => return Ok(Some(Err(err))),
        };
        Ok(Some(Ok((best, keep_tags.then_some(tags)))))
    };
    let read = tokio::task::spawn_blocking(elect).await;
    read.map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()))
        .map_err(|e| format!("failed to read tags from database: {e}"))
}

/// The repository, after the cross-namespace flag and the ACL (§4.3); on failure the Ready
/// reason and the error.
async fn find_repository<R: PolicyReader>(
    policy: &ImagePolicy,
    env: &PolicyEnv<'_, R>,
) -> Result<ImageRepository, (Reason, String)> {
    let policy_namespace = policy.namespace().unwrap_or_default();
    let reference = &policy.spec.image_repository_ref;
    let namespace = policy.repository_namespace();
    let denied = |e: super::access::AccessError| (Reason::AccessDenied, e.to_string());
    check_cross_namespace(
        &policy_namespace,
        &namespace,
        &reference.name,
        env.no_cross_namespace_refs,
    )
    .map_err(denied)?;
    let repo = env
        .reader
        .image_repository(&namespace, &reference.name)
        .await
        // docs/compatibility.md: a read error is reported and retried (Flux swallows it).
        .map_err(|e| (Reason::Failure, e))?
        .ok_or_else(|| {
            let err = format!(
                "referenced ImageRepository does not exist: ImageRepository.image.toolkit.fluxcd.io \"{}\" not found",
                reference.name
            );
            (Reason::DependencyNotReady, err)
        })?;
    let labels = if namespace != policy_namespace && repo.spec.access_from.is_some() {
        match env.reader.namespace_labels(&policy_namespace).await {
            Ok(Some(labels)) => Ok(labels),
            Ok(None) => Err(format!("namespaces \"{policy_namespace}\" not found")),
            Err(e) => Err(e),
        }
    } else {
        Ok(BTreeMap::new())
    };
    check_acl(
        &policy_namespace,
        &namespace,
        &reference.name,
        repo.spec.access_from.as_ref(),
        || labels,
    )
    .map_err(denied)?;
    Ok(repo)
}
