//! The gated election as a step of the policy reconcile: the trusted keys, a registry client
//! with the repository's settings, the walk ([`super::walk`]) over the store's and the
//! registry's facts ([`super::gated`]), and what it comes to in status.
//! A registry error while checking a gate keeps the last `latestRef` (no downgrade to an
//! unchecked tag).

use super::digest::{registry_client, requested};
use super::downgrade::Floor;
use super::env::{PolicyEnv, PolicyReader};
use super::gated::{Known, LazyClient, Looks, StoreAndRegistry};
use super::record::Election;
use super::walk::{walk, Walked, MAX_INSPECTIONS, MAX_WALK};
use crate::api::{ImagePolicy, ImagePolicyStatus, ImageRef, ImageRepository, ReflectionPolicy};
use crate::controller::shared::conditions::Reason;
use crate::controller::shared::credentials::secret_data;
use crate::controller::shared::intervals::intervals;
use crate::controller::shared::stop::Stop;
use crate::policy::{Gates, Policy};
use crate::registry::{ImageReference, TrustedKeys};
use crate::store::{RepoKey, TagList};
use kube::ResourceExt;
use std::time::Duration;

/// The election's subject: the repository, its image and store key, the gates, and the
/// policy's `Always` interval.
pub(super) struct Gated<'a> {
    pub repo: &'a ImageRepository,
    pub image: &'a ImageReference,
    pub key: &'a RepoKey,
    pub gates: &'a Gates,
    pub interval: Option<Duration>,
    /// The downgrade guard, when it holds.
    pub floor: Option<&'a Floor>,
}

/// The candidates of a gated election: the best, and what ranks the rest.
pub(super) struct Candidates {
    pub best: String,
    pub tags: TagList,
    pub ranking: Policy,
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

impl Candidates {
    /// The next best candidates after `best`, best first. Ranked only when `best` was held
    /// back: a steady state whose best passes costs what Flux's election costs.
    async fn rest(self, floor: Option<&Floor>) -> Result<Rest, String> {
        let Candidates {
            best,
            tags,
            ranking,
        } = self;
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
        tokio::task::spawn_blocking(rank)
            .await
            .map_err(|e| e.to_string())
    }
}

/// The best candidate that passes the gates. A registry error while checking a gate fails
/// the reconcile (`GateCheckFailed`): nothing unchecked is elected.
pub(super) async fn elect_gated<R: PolicyReader>(
    policy: &ImagePolicy,
    gated: &Gated<'_>,
    candidates: Candidates,
    status: &ImagePolicyStatus,
    env: &PolicyEnv<'_, R>,
) -> Result<Election, Stop> {
    let check = Stop::failed(Reason::GateCheckFailed);
    if let Some(floor) = gated.floor.filter(|f| f.refuses(&candidates.best)) {
        // Nothing listed ranks as high as the elected tag: no walk, no request.
        return Ok(Election::kept(
            status,
            vec![floor.held(&candidates.best, false)],
        ));
    }
    let keys = match policy
        .spec
        .verify
        .as_ref()
        .and_then(|v| v.secret_ref.as_ref())
    {
        Some(secret) => Some(
            trusted_keys(policy, &secret.name, env)
                .await
                .map_err(check)?,
        ),
        None => None,
    };
    // Built at the first registry request: a steady state reads none of the repository's
    // Secrets.
    let client = LazyClient::new(move || {
        Box::pin(async move {
            let made = registry_client(gated.repo, gated.image, env).await;
            made.map(|(client, _)| client)
        })
    });
    let reflection = policy.spec.digest_reflection_policy.unwrap_or_default();
    let always = reflection == ReflectionPolicy::Always;
    let (scan_interval, _) = intervals(gated.repo).map_err(check)?;
    let name = gated.repo.spec.image.as_str();
    let looks = Looks {
        client: &client,
        image: gated.image,
        key: gated.key,
        store: env.store,
        gates: gated.gates,
        keys: keys.as_ref(),
        now: env.now.as_second(),
        recheck: gated.interval.filter(|_| always).unwrap_or(scan_interval),
        settled: status
            .latest_ref
            .as_ref()
            .filter(|r| !always && r.name == name)
            .map(|r| r.tag.as_str()),
        // Only a request: what a digest names does not change with the spec, and a walk that
        // goes on over reconciles (before its generation is observed) must not start again.
        fresh: requested(policy, status),
    };
    let known = Known::read(env.store, gated.key, env.now.as_second()).await;
    let clock = (looks.now, looks.recheck);
    let mut source = StoreAndRegistry {
        looks: &looks,
        known,
    };
    let mut walked = Walked::default();
    let best = std::slice::from_ref(&candidates.best);
    walk(best, gated.gates, &mut source, &mut walked, clock)
        .await
        .map_err(check)?;
    let mut refused = None;
    if walked.elected.is_none() && !walked.unfinished {
        let rest = candidates.rest(gated.floor).await.map_err(check)?;
        walk(&rest.allowed, gated.gates, &mut source, &mut walked, clock)
            .await
            .map_err(check)?;
        // The guard cut the walk short and the tag it holds at is gone: a downgrade refused.
        refused = rest.refused.filter(|_| !rest.floor_listed);
    }
    let mut held = walked.held;
    if let (Some(floor), Some(refused), None, false) =
        (gated.floor, refused, &walked.elected, walked.unfinished)
    {
        held.push(floor.held(&refused, true));
        return Ok(Election::kept(status, held));
    }
    if let Some((tag, digest)) = walked.elected {
        let digest = (reflection != ReflectionPolicy::Never).then_some(digest);
        let elected = ImageRef {
            name: name.to_string(),
            tag,
            digest,
        };
        let next = match (gated.interval, walked.look_again) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
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

/// The `*.pub` keys of `spec.verify.secretRef`, in the policy's namespace.
async fn trusted_keys<R: PolicyReader>(
    policy: &ImagePolicy,
    name: &str,
    env: &PolicyEnv<'_, R>,
) -> Result<TrustedKeys, String> {
    let namespace = policy.namespace().unwrap_or_default();
    let secret =
        env.reader.secret(&namespace, name).await?.ok_or_else(|| {
            format!("secret '{namespace}/{name}' (spec.verify.secretRef) not found")
        })?;
    TrustedKeys::from_secret(&secret_data(&secret))
        .map_err(|e| format!("secret '{namespace}/{name}' (spec.verify.secretRef): {e}"))
}
