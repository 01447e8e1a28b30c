//! The election's one context, built once per reconcile: what the walk judges by and what its
//! fact source reads with (the registry client, built at its first request; the store; the
//! trusted keys; the [`DigestRule`]; the clock and the intervals).

use super::super::downgrade::Floor;
use super::super::env::{PolicyEnv, PolicyReader};
use super::attested::Trust;
use super::client::{registry_client, ClientError};
use super::freshness::{requested, DigestRule, Occasion};
use super::mode::Mode;
use super::walk::{Cut, Judge};
use crate::api::{ImagePolicy, ImagePolicyStatus, ImageRepository, ReflectionPolicy};
use crate::controller::object::intervals::{intervals, IntervalError};
use crate::policy::{Bumps, Gates};
use crate::reference::ImageReference;
use crate::registry::RegistryClient;
use crate::store::{RepoKey, TagStore};
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;

/// The election's subject: the repository, its image and store key, the gates and whether any
/// is on, the policy's `Always` interval, and the downgrade guard.
pub struct Subject<'a> {
    pub repo: &'a ImageRepository,
    pub image: &'a ImageReference,
    pub key: &'a RepoKey,
    pub gates: &'a Gates,
    pub mode: Mode,
    pub interval: Option<Duration>,
    /// The downgrade guard, when it holds.
    pub floor: Option<&'a Floor>,
    /// `minAgeByBump`'s bumps, when it is set.
    pub bumps: Option<&'a Bumps>,
    /// A newest order: the walk keeps first sightings (a re-pushed tag is seen again when its
    /// digest is resolved) and the images it reads.
    pub newest: bool,
}

/// What every step of the election reads besides the candidates.
pub(super) struct Context<'a> {
    pub client: LazyClient<'a>,
    pub image: &'a ImageReference,
    pub key: &'a RepoKey,
    pub store: &'a Arc<dyn TagStore>,
    pub gates: &'a Gates,
    pub mode: Mode,
    pub newest: bool,
    pub bumps: Option<&'a Bumps>,
    pub keys: Option<&'a Arc<Trust>>,
    /// `digestReflectionPolicy`.
    pub reflection: ReflectionPolicy,
    /// `Always`'s `spec.interval`.
    pub interval: Option<Duration>,
    /// Unix seconds.
    pub now: i64,
    /// When a tag's known digest is current.
    pub rule: DigestRule<'a>,
    /// How old a verdict of "not signed" may be before it is looked up again, and when a hold
    /// that time alone does not open is looked at again.
    pub recheck: Duration,
    /// A reconcile was requested: a verdict of "not signed" is looked up again.
    pub fresh: bool,
    /// The repository's `spec.timeout`, for each digest lookup.
    pub timeout: Duration,
}

impl<'a> Context<'a> {
    /// The context of `policy`'s election over `subject`, or why the repository's intervals
    /// cannot be read.
    pub fn new<R: PolicyReader>(
        policy: &'a ImagePolicy,
        subject: &'a Subject<'a>,
        status: &'a ImagePolicyStatus,
        env: &'a PolicyEnv<'a, R>,
        keys: Option<&'a Arc<Trust>>,
    ) -> Result<Context<'a>, IntervalError> {
        let (scan_interval, timeout) = intervals(subject.repo)?;
        // Built at the first registry request: a steady state reads none of the repository's
        // Secrets.
        let client = LazyClient::new(move || {
            Box::pin(registry_client(subject.repo, subject.image, timeout, env))
        });
        let reflection = policy.spec.digest_reflection_policy.unwrap_or_default();
        let always = reflection == ReflectionPolicy::Always;
        let now = env.now.as_second();
        let fresh = requested(policy, status);
        let rule = DigestRule::for_election(&Occasion {
            policy,
            status,
            name: subject.repo.spec.image.as_str(),
            mode: subject.mode,
            interval: subject.interval,
            scan_interval,
            first_since_start: env.first_since_start,
            requested: fresh,
            now,
        });
        Ok(Context {
            client,
            image: subject.image,
            key: subject.key,
            store: env.store,
            gates: subject.gates,
            mode: subject.mode,
            bumps: subject.bumps,
            newest: subject.newest,
            keys,
            reflection,
            interval: subject.interval,
            now,
            rule,
            recheck: subject.interval.filter(|_| always).unwrap_or(scan_interval),
            fresh,
            timeout,
        })
    }

    /// What the walk judges candidates by.
    pub fn judge(&self) -> Judge<'a> {
        Judge {
            gates: self.gates,
            mode: self.mode,
            wants_digest: self.reflection != ReflectionPolicy::Never,
            now: self.now,
            recheck: self.recheck,
            bumps: self.bumps,
        }
    }
}

/// The registry client, built at the first request: a walk answered from the store reads no
/// Secret and builds nothing.
pub(super) struct LazyClient<'a> {
    cell: tokio::sync::OnceCell<RegistryClient>,
    make: Box<dyn Fn() -> BoxFuture<'a, Result<RegistryClient, ClientError>> + Send + Sync + 'a>,
}

impl<'a> LazyClient<'a> {
    pub fn new(
        make: impl Fn() -> BoxFuture<'a, Result<RegistryClient, ClientError>> + Send + Sync + 'a,
    ) -> Self {
        LazyClient {
            cell: tokio::sync::OnceCell::new(),
            make: Box::new(make),
        }
    }

    pub(super) async fn get(&self) -> Result<&RegistryClient, Cut> {
        let made = self.cell.get_or_try_init(|| (self.make)()).await;
        made.map_err(Cut::from)
    }
}
