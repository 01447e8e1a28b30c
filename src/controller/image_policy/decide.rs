//! The ImagePolicy reconcile as a function of (policy, cluster objects, stored tags, registry
//! answers, clock): Flux's flow (docs/imagepolicy.md) with docs/compatibility.md's changes (warm
//! start, digest reflection honouring `insecure`, no stale failure message). It returns the
//! status to write and when to run again; the controller and `image-reflector scan` share it.

use super::downgrade::Floor;
use super::election::{elect, Candidates, Mode, Subject};
pub use super::election::{MAX_INSPECTIONS, MAX_WALK};
pub use super::env::{PolicyEnv, PolicyReader};
use super::newest::sightings;
use super::notices;
use super::record::record;
pub use super::record::CONTINUE_WALK;
use super::repository::find_repository;
use crate::api::{
    format_go_duration, parse_go_duration, ImagePolicy, ImagePolicySpec, ImagePolicyStatus,
    ImageRepository, ReflectionPolicy,
};
use crate::controller::frame::reconciled::Decision;
use crate::controller::object::intervals::MIN_INTERVAL;
use crate::controller::outcome::conditions::{Conditions, Reason};
use crate::controller::outcome::next::Next;
use crate::controller::outcome::status::finish_status;
use crate::controller::outcome::stop::Stop;
use crate::controller::outcome::summary::Outcome;
use crate::policy::{Gates, NotElected, Policy, PolicyKind};
use crate::reference::ImageReference;
use crate::store::{RepoKey, StoreError, TagList, TagStore};
use kube::ResourceExt;
use std::sync::Arc;
use std::time::Duration;

/// Flux's `FeatureGateDisabled` message for an ImagePolicy.
pub const FEATURE_GATE_MESSAGE: &str = "to use spec.serviceAccountName in the ImageRepository for provider authentication please enable the ObjectLevelWorkloadIdentity feature gate in the controller";

/// The requeue of an `Always` policy whose interval is zero (§1.6).
const DEFAULT_POLICY_INTERVAL: Duration = Duration::from_secs(600);

/// The status to write and what to do next.
pub type PolicyResult = Decision<ImagePolicyStatus>;

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
    let steps = run_steps(policy, env, &mut conditions, &mut status).await;
    let (outcome, next, summary) = match steps.or_else(|stop| stop.into_steps(&mut conditions)) {
        Ok(done) => done,
        // A warm start keeps the status as it is.
        Err((next, summary)) => {
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

/// The steps of Flux's flow (docs/imagepolicy.md), each ending the reconcile with a [`Stop`].
async fn run_steps<R: PolicyReader>(
    policy: &ImagePolicy,
    env: &PolicyEnv<'_, R>,
    c: &mut Conditions<'_>,
    status: &mut ImagePolicyStatus,
) -> Result<(Outcome, Next, String), Stop> {
    let interval = check_interval(&policy.spec)?;
    c.mark_progress(status.observed_generation);
    // Names reach request URLs.
    policy
        .spec
        .check_references()
        .map_err(Stop::stalled(Reason::InvalidReference))?;
    let repo = find_repository(policy, env).await?;
    let checked = check_spec(policy, &repo, env).await?;
    let (best, tags, ranking) = read_candidates(&checked, &repo, status, env).await?;
    let floor = Floor::of(policy, &repo, status, &ranking);
    let bumps = (policy.spec).bumps(status, Some(&repo.spec.image), &ranking);
    let candidates = match tags {
        Some(tags) => Candidates::ranked(best, tags, ranking, floor.as_ref()),
        None => Candidates::best(best),
    };
    let subject = Subject {
        repo: &repo,
        image: &checked.image,
        key: &checked.key,
        gates: &checked.gates,
        mode: checked.mode,
        interval,
        floor: floor.as_ref(),
        bumps: bumps.as_ref(),
        newest: checked.selection.kind() == PolicyKind::Newest,
    };
    let (election, notice) = elect(policy, &subject, candidates, status, env).await?;
    let recorded = record(status, c, election);
    let notices: Vec<String> = notice
        .into_iter()
        .chain(notices::notes(&policy.spec))
        .collect();
    match notices.is_empty() {
        true => recorded,
        false => noticed(recorded, &notices.join("; ")),
    }
}

/// The election's notice, after what the Ready condition says (elected, or none eligible).
fn noticed(
    recorded: Result<(Outcome, Next, String), Stop>,
    notice: &str,
) -> Result<(Outcome, Next, String), Stop> {
    match recorded {
        Ok((Outcome::Succeeded { message }, next, _)) => {
            let message = format!("{message}; {notice}");
            let outcome = Outcome::Succeeded {
                message: message.clone(),
            };
            Ok((outcome, next, message))
        }
        Err(Stop::Settled(reason, message, next)) => {
            Err(Stop::Settled(reason, format!("{message}; {notice}"), next))
        }
        other => other,
    }
}

/// `spec.interval`, required with `Always` (at least [`MIN_INTERVAL`], zero meaning Flux's
/// default); `None` without `Always`.
fn check_interval(spec: &ImagePolicySpec) -> Result<Option<Duration>, Stop> {
    let always = spec.digest_reflection_policy == Some(ReflectionPolicy::Always);
    match (always, spec.interval.as_deref()) {
        (false, _) => Ok(None),
        (true, None) => Err(Stop::Stalled(
            Reason::IntervalNotConfigured,
            "spec.interval must be set when spec.digestReflectionPolicy is set to 'Always'".into(),
        )),
        (true, Some(text)) => match parse_go_duration(text) {
            Ok(d) if d.is_zero() => Ok(Some(DEFAULT_POLICY_INTERVAL)),
            // Each period costs a manifest request to a shared host: the same floor as scans.
            Ok(d) => Ok(Some(d.max(MIN_INTERVAL))),
            Err(e) => Err(Stop::Stalled(
                Reason::InvalidPolicy,
                format!("invalid spec.interval: {e}"),
            )),
        },
    }
}

/// What the spec says, checked against its repository: what fails here stalls.
struct Checked {
    image: ImageReference,
    selection: crate::policy::Policy,
    gates: Gates,
    /// Whether any gate is on: decided here, once.
    mode: Mode,
    key: RepoKey,
}

/// The repository's image, the feature gate, the policy's pattern and range, its gates and
/// the store key.
async fn check_spec<R: PolicyReader>(
    policy: &ImagePolicy,
    repo: &ImageRepository,
    env: &PolicyEnv<'_, R>,
) -> Result<Checked, Stop> {
    let spec = &policy.spec;
    let image = ImageReference::parse(&repo.spec.image, repo.spec.insecure.unwrap_or(false))
        .map_err(|err| Stop::Stalled(Reason::ImageUrlInvalid, err.to_string()))?;
    if env.workload_identity.refuses(repo) {
        let message = FEATURE_GATE_MESSAGE.into();
        return Err(Stop::Stalled(Reason::FeatureGateDisabled, message));
    }
    // The pattern and range are a tenant's: compiled on the blocking pool (docs/security.md).
    let owned = spec.clone();
    let selection = tokio::task::spawn_blocking(move || owned.selection_policy())
        .await
        .map_err(|err| Stop::Failed(Reason::Failure, err.to_string()))?
        .map_err(|err| Stop::Stalled(Reason::InvalidPolicy, err.to_string()))?;
    let gates = spec.gates().map_err(Stop::stalled(Reason::InvalidPolicy))?;
    let key = RepoKey::new(repo.namespace().unwrap_or_default(), repo.name_any())
        .map_err(|err| Stop::Failed(Reason::Failure, err.to_string()))?;
    let mode = Mode::of(&gates);
    Ok(Checked {
        image,
        selection,
        gates,
        mode,
        key,
    })
}

/// The best stored tag, the tags when a gated election may rank more or a newest order may
/// date them, and the ordering (a newest one with the store's sightings). No tags yet is a
/// wait, not a failure (docs/compatibility.md).
async fn read_candidates<R: PolicyReader>(
    checked: &Checked,
    repo: &ImageRepository,
    status: &ImagePolicyStatus,
    env: &PolicyEnv<'_, R>,
) -> Result<(String, Option<TagList>, Policy), Stop> {
    let newest = checked.selection.kind() == PolicyKind::Newest;
    let read = read_and_elect(
        env.store.clone(),
        checked.key.clone(),
        checked.selection.clone(),
        // A gated election may rank further candidates after the best, and a newest order
        // may date them: it keeps the tags.
        (checked.mode.walks_on() || newest, env.now.as_second()),
    );
    match read.await {
        Ok(Some(Ok(elected))) => Ok(elected),
        Ok(Some(Err(err))) => Err(Stop::Failed(Reason::Failure, err.to_string())),
        Ok(None) => Err(no_tags(&checked.key, repo, status, env)),
        Err(err) => Err(Stop::Failed(Reason::Failure, err.to_string())),
    }
}

/// The repository has no stored tags. After a restart with an election in status, that is not
/// news: the last election stays until the repository's first scan, which re-triggers this
/// policy (warm start). Before a repository's first scan the policy waits, progressing,
/// without a Warning, and says why when the repository fails (Flux users asked, IRC #449).
fn no_tags<R>(
    key: &RepoKey,
    repo: &ImageRepository,
    status: &ImagePolicyStatus,
    env: &PolicyEnv<'_, R>,
) -> Stop {
    let next = env.requeue_dependency;
    if status.latest_ref.is_some() && !(env.repository_scanned)(key) {
        let summary =
            format!("waiting for the first scan of {key} since start; keeping the last election");
        return Stop::Held(Next::After(next), summary);
    }
    if repo
        .status
        .as_ref()
        .is_none_or(|s| s.last_scan_result.is_none())
    {
        let message = match repository_failure(repo) {
            Some(why) => format!(
                "waiting for the first scan of ImageRepository {key}, which is failing: {why}"
            ),
            None => format!("waiting for the first scan of ImageRepository {key}"),
        };
        return Stop::Progressing {
            message,
            next,
            unknown: true,
        };
    }
    let wait = format_go_duration(Duration::from_secs(next.as_secs_f64().round() as u64));
    let message = format!("retrying in {wait} error: no tags in database");
    Stop::Waiting(Reason::DependencyNotReady, message, next)
}

/// A repository's `Ready=False` as `Reason: message` (the message cut short), if it is failing.
fn repository_failure(repo: &ImageRepository) -> Option<String> {
    let conditions = repo.status.as_ref()?.conditions.as_deref()?;
    let ready = conditions.iter().find(|c| c.type_ == "Ready")?;
    (ready.status == crate::api::ConditionStatus::False).then(|| {
        let message = crate::controller::outcome::conditions::cut(&ready.message, 512);
        format!("{}: {message}", ready.reason)
    })
}

/// Why the stored tags could not be read.
#[derive(Debug, thiserror::Error)]
enum ReadTagsError {
    #[error("failed to read tags from database: {0}")]
    Store(#[from] StoreError),
    #[error("failed to read tags from database: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// The stored tags' election, `None` when there are none, and the tags when `keep_tags` (a
/// gated election may rank more candidates). Reading and electing run on the blocking pool: a
/// repository may hold a million tags and the pattern is a tenant's (docs/security.md).
/// The best tag, the tags if kept, and the ordering the best was elected by.
type Read = (String, Option<TagList>, Policy);

async fn read_and_elect(
    store: Arc<dyn TagStore>,
    key: RepoKey,
    selection: Policy,
    (keep_tags, now): (bool, i64),
) -> Result<Option<Result<Read, NotElected>>, ReadTagsError> {
    let span = tracing::info_span!("store read");
    let elect = move || {
        let (tags, _) = span.in_scope(|| store.get(&key))?;
        if tags.is_empty() {
            return Ok::<_, StoreError>(None);
        }
        let selection = match selection.kind() {
            PolicyKind::Newest => selection.with_sightings(sightings(&*store, &key, now)?),
            _ => selection,
        };
        let best = match selection.select_sorted(tags.iter()) {
            Ok(best) => best.to_string(),
            Err(err) => return Ok(Some(Err(err))),
        };
        Ok(Some(Ok((best, keep_tags.then_some(tags), selection))))
    };
    Ok(tokio::task::spawn_blocking(elect).await??)
}
