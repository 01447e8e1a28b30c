//! The elected tag's digest, per `digestReflectionPolicy` (docs/imagepolicy.md): kept, fetched
//! from the registry, or, at the first reconcile after a restart, taken from the store while
//! it is fresh.

use super::env::{PolicyEnv, PolicyReader};
use crate::api::{
    format_go_duration, ImagePolicy, ImagePolicyStatus, ImageRepository, ReflectionPolicy,
};
use crate::controller::shared::conditions::Reason;
use crate::controller::shared::credentials::client_options;
use crate::controller::shared::intervals::intervals;
use crate::controller::shared::stop::Stop;
use crate::registry::{ImageReference, RegistryClient, RegistryError};
use crate::store::{DigestFact, RepoKey, TagStore};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use std::sync::Arc;
use std::time::Duration;

/// The elected tag whose digest is wanted, and the policy's interval (`Always` only).
pub(super) struct Wanted<'a> {
    pub image: &'a ImageReference,
    pub key: &'a RepoKey,
    pub name: &'a str,
    pub tag: &'a str,
    pub interval: Option<Duration>,
}

/// The digest per `digestReflectionPolicy` (§4.7): `Never` none, `IfNotPresent` the recorded
/// one when name and tag are unchanged, `Always` (and the rest of `IfNotPresent`) fetched with
/// the repository's credentials, TLS, proxy, `insecure` and timeout. At its first reconcile
/// after a restart, an `Always` policy whose tag's digest was fetched less than its interval
/// ago (the store keeps when) takes that digest and says when the next fetch is due, unless a
/// reconcile was requested or the spec changed (docs/imagepolicy.md).
pub(super) async fn reflected_digest<R: PolicyReader>(
    policy: &ImagePolicy,
    repo: &ImageRepository,
    wanted: &Wanted<'_>,
    status: &ImagePolicyStatus,
    env: &PolicyEnv<'_, R>,
) -> Result<(Option<String>, Option<Duration>), Stop> {
    let Wanted {
        image,
        key,
        name,
        tag,
        interval,
    } = *wanted;
    let recorded = status
        .latest_ref
        .as_ref()
        .filter(|r| r.name == name && r.tag == tag)
        .and_then(|r| r.digest.clone())
        .filter(|d| !d.is_empty());
    match policy.spec.digest_reflection_policy.unwrap_or_default() {
        ReflectionPolicy::Never => return Ok((None, None)),
        ReflectionPolicy::IfNotPresent if recorded.is_some() => return Ok((recorded, None)),
        ReflectionPolicy::Always => {
            // Only the first reconcile after a restart: from then on every reconcile
            // fetches, as Flux's do.
            let warm = env.first_since_start && !asked_anew(policy, status);
            if let Some(interval) = interval.filter(|_| warm) {
                if let Some(fresh) = fresh_fact(env.store, key, tag, interval, env.now).await {
                    return Ok(fresh);
                }
            }
        }
        ReflectionPolicy::IfNotPresent => {}
    }
    let fail = |err: String| format!("failed fetching digest of {name}:{tag}: {err}");
    let (client, timeout) = registry_client(repo, image, env)
        .await
        .map_err(|err| Stop::Failed(Reason::Failed, fail(err)))?;
    let reference = format!("{name}:{tag}");
    let descriptor = |err: String| {
        fail(format!(
            "failed fetching descriptor for \"{reference}\": {err}"
        ))
    };
    match tokio::time::timeout(timeout, client.digest(image, tag)).await {
        Ok(Ok(digest)) => {
            remember_digest(env.store, key, tag, &digest, env.now).await;
            Ok((Some(digest), None))
        }
        // The registry said when: asked again then, not at the next backoff step.
        Ok(Err(err @ RegistryError::RateLimited { retry_at, .. })) => {
            Err(Stop::RateLimited(descriptor(err.to_string()), retry_at))
        }
        Ok(Err(err)) => Err(Stop::Failed(Reason::Failed, descriptor(err.to_string()))),
        Err(_) => Err(Stop::Failed(
            Reason::Failed,
            descriptor(format!(
                "no answer within {} (the ImageRepository's spec.timeout)",
                format_go_duration(timeout)
            )),
        )),
    }
}

/// A client with the repository's credentials, TLS, proxy, `insecure` and timeout, and that
/// timeout.
pub(super) async fn registry_client<R: PolicyReader>(
    repo: &ImageRepository,
    image: &ImageReference,
    env: &PolicyEnv<'_, R>,
) -> Result<(RegistryClient, Duration), String> {
    let (_, timeout) = intervals(repo)?;
    let namespace = repo.namespace().unwrap_or_default();
    let options = client_options(
        repo,
        &namespace,
        &image.canonical(),
        env.reader,
        timeout,
        env.workload_identity,
    )
    .await
    .map_err(|e| format!("failed to configure authentication options: {e}"))?;
    let client = RegistryClient::new(options, env.registries.clone()).map_err(|e| e.to_string())?;
    Ok((client, timeout))
}

/// Whether the policy asks for a fresh look: a `requestedAt` not yet handled, or a spec not yet
/// observed.
fn asked_anew(policy: &ImagePolicy, status: &ImagePolicyStatus) -> bool {
    requested(policy, status) || status.observed_generation != policy.metadata.generation
}

/// Whether a `requestedAt` not yet handled asks for a fresh look.
pub(super) fn requested(policy: &ImagePolicy, status: &ImagePolicyStatus) -> bool {
    let requested = policy
        .annotations()
        .get(crate::controller::shared::keys::REQUESTED_AT_ANNOTATION);
    requested.is_some_and(|r| status.last_handled_reconcile_at.as_ref() != Some(r))
}

/// The digest of `tag` fetched less than `interval` ago, and when the next fetch is due.
async fn fresh_fact(
    store: &Arc<dyn TagStore>,
    key: &RepoKey,
    tag: &str,
    interval: Duration,
    now: Timestamp,
) -> Option<(Option<String>, Option<Duration>)> {
    let (store, key, owned) = (store.clone(), key.clone(), tag.to_string());
    let fact = tokio::task::spawn_blocking(move || store.digest_fact(&key, &owned))
        .await
        .ok()?
        .ok()??;
    let age = u64::try_from(now.as_second() - fact.checked_at).ok()?;
    let due_in = interval.checked_sub(Duration::from_secs(age))?;
    // Nearly due is due: whole seconds and requeue delays must not add a reconcile.
    let slack = (interval / 20).max(Duration::from_secs(2));
    (due_in > slack).then_some((Some(fact.digest), Some(due_in)))
}

/// Keeps when `tag`'s digest was fetched; a failure only costs an earlier fetch after a restart.
async fn remember_digest(
    store: &Arc<dyn TagStore>,
    key: &RepoKey,
    tag: &str,
    digest: &str,
    now: Timestamp,
) {
    let (store, key, tag) = (store.clone(), key.clone(), tag.to_string());
    let fact = DigestFact {
        digest: digest.to_string(),
        checked_at: now.as_second(),
    };
    let recorded = tokio::task::spawn_blocking(move || store.record_digest(&key, &tag, fact)).await;
    if let Ok(Err(err)) = recorded {
        tracing::debug!(%err, "the digest's fetch time was not kept");
    }
}
