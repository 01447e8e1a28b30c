//! The election as a step of the policy reconcile, with gates or without: the trusted keys, a
//! registry client with the repository's settings (built at its first request), the
//! [`DigestRule`], the walk ([`super::walk`]) over the store's and the registry's facts
//! ([`super::gated`]), and what it comes to ([`Election`]). Without gates the walk looks at
//! the best tag only and asks for its digest as Flux does; with gates, a registry error while
//! checking a gate keeps the last `latestRef` (no downgrade to an unchecked tag).

use super::client::{registry_client, requested};
use super::downgrade::Floor;
use super::env::{PolicyEnv, PolicyReader};
use super::freshness::{DigestRule, Occasion};
use super::gated::{Known, LazyClient, Looks, StoreAndRegistry};
use super::record::Election;
use super::walk::{walk, Judge, LookError, WalkFailure, Walked, MAX_INSPECTIONS, MAX_WALK};
use crate::api::{
    ImagePolicy, ImagePolicyStatus, ImageRef, ImageRepository, ReflectionPolicy, TransparencyLog,
    VerificationProvider,
};
use crate::controller::access::api_read::ReadError;
use crate::controller::access::credentials::secret_data;
use crate::controller::object::intervals::intervals;
use crate::controller::outcome::conditions::Reason;
use crate::controller::outcome::stop::Stop;
use crate::policy::{Gates, Policy};
use crate::registry::{ImageReference, RegistryError};
use crate::store::{RepoKey, TagList};
use crate::verify::TrustedKeys;
use kube::ResourceExt;
use std::time::Duration;
use thiserror::Error;

/// The election's subject: the repository, its image and store key, the gates, and the
/// policy's `Always` interval.
pub(super) struct Subject<'a> {
    pub repo: &'a ImageRepository,
    pub image: &'a ImageReference,
    pub key: &'a RepoKey,
    pub gates: &'a Gates,
    pub interval: Option<Duration>,
    /// The downgrade guard, when it holds.
    pub floor: Option<&'a Floor>,
}

/// The candidates: the best, and with gates, the tags and what ranks them after it.
pub(super) struct Candidates {
    pub best: String,
    pub rest: Option<(TagList, Policy)>,
}

/// The candidates after the best, as far as the downgrade guard lets the walk go.
struct Rest {
    /// Best first, none ranked below the guard's floor.
    allowed: Vec<String>,
    /// The first candidate the guard refused, if it cut the walk short.
    refused: Option<String>,
    /// Whether the tag the guard holds at is still listed.
    floor_listed: bool,
}

/// The next best candidates after `best`, best first. Ranked only when `best` was held back:
/// a steady state whose best passes costs what Flux's election costs.
async fn rank_rest(
    best: String,
    (tags, ranking): (TagList, Policy),
    floor: Option<&Floor>,
) -> Result<Rest, tokio::task::JoinError> {
    let floor = floor.map(|f| (f.tag.clone(), f.refuses_with()));
    let rank = move || {
        let ranked = ranking.ranked(tags.iter(), MAX_WALK);
        let mut allowed: Vec<String> = ranked
            .into_iter()
            .map(|c| c.tag)
            .filter(|t| *t != best)
            .collect();
        let Some((at, refuses)) = floor else {
            return Rest {
                allowed,
                refused: None,
                floor_listed: true,
            };
        };
        let refused = allowed
            .iter()
            .position(|t| refuses(t))
            .map(|cut| allowed.split_off(cut).swap_remove(0));
        Rest {
            allowed,
            refused,
            floor_listed: tags.iter().any(|t| t == at),
        }
    };
    tokio::task::spawn_blocking(rank).await
}

/// The best candidate that passes the gates (without gates: the best), with its digest per
/// `digestReflectionPolicy`.
pub(super) async fn elect<R: PolicyReader>(
    policy: &ImagePolicy,
    subject: &Subject<'_>,
    candidates: Candidates,
    status: &ImagePolicyStatus,
    env: &PolicyEnv<'_, R>,
) -> Result<Election, Stop> {
    let gated = subject.gates.any();
    let name = subject.repo.spec.image.as_str();
    let failed = |failure: WalkFailure| look_failed(gated, name, failure);
    if let Some(floor) = subject.floor.filter(|f| f.refuses(&candidates.best)) {
        // Nothing listed ranks as high as the elected tag: no walk, no request.
        return Ok(Election::kept(
            status,
            vec![floor.held(&candidates.best, false)],
        ));
    }
    let keys = trusted_keys(policy, env).await.map_err(|e| {
        let message = e.to_string();
        Stop::Failed(Reason::GateCheckFailed, message)
    })?;
    let (scan_interval, timeout) = intervals(subject.repo).map_err(|e| {
        let error = LookError::Client(e.into());
        failed(WalkFailure {
            tag: candidates.best.clone(),
            error,
        })
    })?;
    // Built at the first registry request: a steady state reads none of the repository's
    // Secrets.
    let client = LazyClient::new(move || {
        Box::pin(async move {
            let made = registry_client(subject.repo, subject.image, env).await;
            made.map(|(client, _)| client)
        })
    });
    let reflection = policy.spec.digest_reflection_policy.unwrap_or_default();
    let always = reflection == ReflectionPolicy::Always;
    let now = env.now.as_second();
    let requested = requested(policy, status);
    let rule = DigestRule::for_election(&Occasion {
        policy,
        status,
        name,
        gated,
        interval: subject.interval,
        scan_interval,
        first_since_start: env.first_since_start,
        requested,
        now,
    });
    let looks = Looks {
        client: &client,
        image: subject.image,
        key: subject.key,
        store: env.store,
        gates: subject.gates,
        keys: keys.as_ref(),
        now,
        rule,
        recheck: subject.interval.filter(|_| always).unwrap_or(scan_interval),
        fresh: requested,
        skip_gone: gated,
        timeout,
    };
    let judge = Judge {
        gates: subject.gates,
        wants_digest: reflection != ReflectionPolicy::Never,
        now,
        recheck: looks.recheck,
    };
    let mut source = StoreAndRegistry {
        known: Known::read(&looks).await,
        looks: &looks,
    };
    let mut walked = Walked::default();
    let best = std::slice::from_ref(&candidates.best);
    walk(best, judge, &mut source, &mut walked)
        .await
        .map_err(failed)?;
    let mut refused = None;
    if let Some(rest) = candidates
        .rest
        .filter(|_| walked.elected.is_none() && !walked.unfinished)
    {
        let rest = rank_rest(candidates.best.clone(), rest, subject.floor)
            .await
            .map_err(|e| Stop::Failed(Reason::GateCheckFailed, e.to_string()))?;
        walk(&rest.allowed, judge, &mut source, &mut walked)
            .await
            .map_err(failed)?;
        // The guard cut the walk short and the tag it holds at is gone: a downgrade refused.
        refused = rest.refused.filter(|_| !rest.floor_listed);
    }
    let mut held = walked.held;
    if let (Some(floor), Some(refused), None, false) =
        (subject.floor, refused, &walked.elected, walked.unfinished)
    {
        held.push(floor.held(&refused, true));
        return Ok(Election::kept(status, held));
    }
    if let Some((tag, digest)) = walked.elected {
        // The digest of an `Always` policy is due again at its interval, or sooner when the
        // one taken was looked up before.
        let due = source.known.due.filter(|(t, _)| *t == tag).map(|(_, d)| d);
        let next = [subject.interval, walked.look_again, due]
            .into_iter()
            .flatten()
            .min();
        let digest = digest.filter(|_| reflection != ReflectionPolicy::Never);
        let elected = ImageRef {
            name: name.to_string(),
            tag,
            digest,
        };
        return Ok(Election::Elected {
            elected,
            held,
            next,
        });
    }
    if walked.unfinished {
        return Ok(Election::Unfinished {
            held,
            walked: walked.walked,
            inspections: MAX_INSPECTIONS,
        });
    }
    Ok(Election::NoneEligible {
        held,
        walked: walked.walked,
        next: walked.look_again.unwrap_or(env.requeue_dependency),
    })
}

/// What a failed look means. Without gates, Flux's digest failure (`Failed`, its words); with
/// gates, `GateCheckFailed` naming the candidate. A registry that asked us to wait is asked
/// again then, either way.
fn look_failed(gated: bool, name: &str, failure: WalkFailure) -> Stop {
    let retry_at = match &failure.error {
        LookError::Registry(RegistryError::RateLimited { retry_at, .. }) => Some(*retry_at),
        _ => None,
    };
    let (reason, message) = if gated {
        (Reason::GateCheckFailed, failure.to_string())
    } else {
        let reference = format!("{name}:{}", failure.tag);
        let why = match &failure.error {
            LookError::Client(e) => e.to_string(),
            e => format!("failed fetching descriptor for \"{reference}\": {e}"),
        };
        let message = format!("failed fetching digest of {reference}: {why}");
        (Reason::Failed, message)
    };
    match retry_at {
        Some(at) => Stop::RateLimited(message, at),
        None => Stop::Failed(reason, message),
    }
}

/// Why `spec.verify.secretRef`'s keys could not be had.
#[derive(Debug, Error)]
enum KeysError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("secret '{0}' (spec.verify.secretRef) not found")]
    NotFound(String),
    #[error("secret '{secret}' (spec.verify.secretRef): {reason}")]
    Invalid { secret: String, reason: String },
}

/// What `spec.verify` trusts: the `*.pub` keys of its Secret (in the policy's namespace) and,
/// with `matchOIDCIdentity`, the Secret's `trusted_root.json` and those identities.
async fn trusted_keys<R: PolicyReader>(
    policy: &ImagePolicy,
    env: &PolicyEnv<'_, R>,
) -> Result<Option<std::sync::Arc<TrustedKeys>>, KeysError> {
    let Some(verify) = policy.spec.verify.as_ref() else {
        return Ok(None);
    };
    let Some(name) = verify.secret_ref.as_ref().map(|r| r.name.as_str()) else {
        return Ok(None);
    };
    let identities: Vec<(String, String)> = verify
        .match_oidc_identity
        .iter()
        .flatten()
        .map(|id| (id.issuer.clone(), id.subject.clone()))
        .collect();
    let require_tlog = verify.transparency_log.unwrap_or_default() == TransparencyLog::Required;
    let namespace = policy.namespace().unwrap_or_default();
    let secret = env.reader.secret(&namespace, name).await?;
    let secret = secret.ok_or_else(|| KeysError::NotFound(format!("{namespace}/{name}")))?;
    let data = secret_data(&secret);
    let trust = match verify.provider {
        VerificationProvider::Cosign => TrustedKeys::from_secret(&data, &identities, require_tlog),
        VerificationProvider::Notation => TrustedKeys::notation(&data),
    };
    let keys = trust.map_err(|reason| {
        let secret = format!("{namespace}/{name}");
        KeysError::Invalid { secret, reason }
    })?;
    Ok(Some(std::sync::Arc::new(keys)))
}
