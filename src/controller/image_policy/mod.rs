//! The ImagePolicy controller: its watches and the reconcile it runs, the shared one
//! ([`crate::controller::frame::reconcile`]) with what [`reconcile`](mod@reconcile) adds,
//! deciding in [`decide`]. Policies are re-triggered when their repository's
//! `lastScanResult.revision` or canonical name changes (docs/compatibility.md), through
//! [`index`], from the repository watch's [`Feed`]; when a namespace's labels change, for
//! the policies they admit; and when a Secret a policy trusts changes, for those policies.

pub mod decide;
pub mod downgrade;
mod election;
pub mod env;
pub mod index;
pub mod may_read;
pub mod migrate;
pub mod newest;
pub mod notices;
pub mod reader;
pub mod reconcile;
mod record;
pub mod report;
mod repository;
mod serving;

use crate::api::{ImagePolicy, ImageRepository};
use crate::controller::door::{sharded_door, told, Door};
use crate::controller::feed::repository_feed::{is_baseline, Feed};
use crate::controller::frame::reconcile as shared_reconcile;
use crate::controller::frame::stage::Stage;
use crate::controller::frame::wiring::{Wiring, LIST_PAGE_SIZE};
use crate::controller::object::cache::ObjectCache;
use crate::controller::object::changed::changed;
use crate::controller::object::keys::{key_of, trigger_hash};
use crate::controller::object::slim::slim;
use crate::controller::outcome::error::Error;
use crate::controller::schema::restart::restarting_watch;
use futures::TryStreamExt;
use index::PolicyIndex;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::Instant;

pub use reconcile::PolicyContext;

/// One reconcile (kube's signature): the shared reconcile of
/// [`Reconciled`](crate::controller::frame::reconciled::Reconciled).
pub async fn reconcile(policy: Arc<ImagePolicy>, ctx: Arc<PolicyContext>) -> Result<Action, Error> {
    shared_reconcile::reconcile(policy, ctx).await
}

/// When to try again after an error: decided by its kind.
pub fn error_policy(policy: Arc<ImagePolicy>, err: &Error, ctx: Arc<PolicyContext>) -> Action {
    shared_reconcile::error_policy(policy, err, ctx)
}

/// What re-triggers a repository's policies: a new scan revision or canonical name, and
/// deletion (docs/compatibility.md: Flux looks at the revision only).
fn repository_change_hash(repo: &ImageRepository) -> Option<u64> {
    let mut h = DefaultHasher::new();
    let status = repo.status.as_ref();
    status
        .and_then(|s| s.last_scan_result.as_ref())
        .and_then(|r| r.revision.as_ref())
        .hash(&mut h);
    status
        .and_then(|s| s.canonical_image_name.as_ref())
        .hash(&mut h);
    repo.metadata.deletion_timestamp.is_some().hash(&mut h);
    Some(h.finish())
}

/// The running controller; `policies_synced` is marked once its cache has the initial list.
/// Repositories come from the repository controller's watch (`repository_feed`); `secrets`
/// (watched by their metadata only) are the scope trusted Secrets are watched in.
pub fn controller(
    policies: Api<ImagePolicy>,
    secrets: Api<PartialObjectMeta<Secret>>,
    repositories: Feed,
    wiring: Wiring,
) -> impl std::future::Future<Output = ()> {
    let Wiring {
        watch,
        ctx,
        shutdown,
        synced: policies_synced,
    } = wiring;
    let index = PolicyIndex::default();
    let queue = ctx.policy_queue.clone();
    let mapped = queue.clone();
    let policies_cache = Arc::new(ObjectCache::default());
    let stage = Stage::new(policies_cache.clone());
    // The door's keeper: each namespace's VerifiedDigests, from the same cache; a shard's
    // from every policy, whichever shard elects it.
    let scope = ctx.settings.watched_namespace.clone();
    let door = match watch.label_selector {
        None => Door::open(&ctx.client, scope, &policies_cache, &shutdown),
        Some(_) => sharded_door(&ctx.client, scope, policies.clone(), &shutdown),
    };
    let watched = Watched {
        stage: stage.clone(),
        index: index.clone(),
        ctx: ctx.clone(),
        synced: policies_synced,
        door,
    };
    let policy_triggers = watched.triggers(policies, watch);
    let (repo_reader, synced, changes) = repositories.into_parts();
    let repository_changes = changed(changes, repository_change_hash);
    let namespace_changes = namespace_changes(ctx.client.clone());
    let (namespace_index, relabelled) = (index.clone(), queue.clone());
    let secret_changes = secret_changes(secrets, index.clone());
    let (trust_index, retrusted) = (index.clone(), queue.clone());
    rejudge_on_root_change(&ctx, index.clone(), queue.clone(), shutdown.clone());
    let ctx = PolicyContext::with_cache(ctx, repo_reader, synced, policies_cache);
    // The kind's own triggers beside its watch: each only queues its policies.
    let watches = move |controller: Controller<ImagePolicy>| {
        controller
            .watches_stream(namespace_changes, move |namespace| {
                let policies = namespace_index.cross_namespace_policies_in(&namespace.name_any());
                for policy in &policies {
                    let key = key_of("ImagePolicy", &namespace.name_any(), &policy.name);
                    relabelled.add(key, Instant::now());
                }
                std::iter::empty()
            })
            .watches_stream(secret_changes, move |secret| {
                let namespace = secret.namespace().unwrap_or_default();
                for policy in trust_index.trusting(&namespace, &secret.name_any()) {
                    let key = key_of("ImagePolicy", &namespace, &policy.name);
                    retrusted.add(key, Instant::now());
                }
                std::iter::empty()
            })
            .watches_stream(repository_changes, move |repo| {
                if !is_baseline(&repo) {
                    for policy in index.policies_for(&repo) {
                        let namespace = policy.namespace.as_deref().unwrap_or_default();
                        let key = key_of("ImagePolicy", namespace, &policy.name);
                        mapped.add(key, Instant::now());
                    }
                }
                std::iter::empty()
            })
    };
    shared_reconcile::run_queued(stage, policy_triggers, watches, ctx, shutdown)
}

/// What the policy watch feeds as it goes: the stage kube's controller reads, the index of
/// repositories to policies, the door (which namespaces' policies changed), and, once listed,
/// the scan order and readiness.
struct Watched {
    stage: Arc<Stage<ImagePolicy>>,
    index: PolicyIndex,
    ctx: Arc<crate::controller::Context>,
    synced: crate::runtime::http::ReadyPart,
    door: Arc<Door>,
}

impl Watched {
    /// The policies that changed in a way that asks for a reconcile, listed again whenever
    /// the served schema of ImagePolicy changes (controller/schema/).
    fn triggers(
        self,
        policies: Api<ImagePolicy>,
        watch: watcher::Config,
    ) -> impl futures::Stream<Item = Result<ImagePolicy, watcher::Error>> {
        let restarts = self.ctx.schema.policy_restarts();
        let epoch = restarts.clone();
        let triggers = restarting_watch(policies, watch, restarts)
            .modify(slim)
            .inspect_ok(move |event| {
                self.stage.apply(event);
                self.index.observe(event);
                told(&self.door, event);
                if matches!(event, watcher::Event::InitDone) {
                    let referenced = self.index.referenced_repositories();
                    self.ctx.scan_order.prioritize(referenced);
                    self.synced.set_ready();
                }
            })
            .applied_objects();
        // Each policy is news once after the served schema changes: one read pruned before
        // the change was seen was judged by the schema known then (issue 87: held as an
        // annotation that did not match, and never judged again once the change was seen).
        changed(triggers, move |policy| {
            let mut h = DefaultHasher::new();
            (trigger_hash(policy), *epoch.borrow()).hash(&mut h);
            Some(h.finish())
        })
    }
}

/// A namespace's labels decide a cross-namespace policy (accessFrom): their changes are
/// watched (metadata only) and re-evaluate that namespace's cross-namespace policies.
fn namespace_changes(
    client: kube::Client,
) -> impl futures::Stream<Item = Result<PartialObjectMeta<Namespace>, watcher::Error>> {
    let changes = watcher(
        Api::<PartialObjectMeta<Namespace>>::all(client),
        watcher::Config::default().page_size(LIST_PAGE_SIZE),
    )
    .default_backoff()
    .touched_objects();
    changed(changes, labels_hash)
}

/// The changes of the Secrets some policy trusts (`spec.verify.secretRef`,
/// `trustedRootSecretRef`): a key rotated or revoked is judged at once, not at the next timer
/// (issue 87). Metadata only: a change shows as a new `resourceVersion` (a deletion too), and
/// the data is read, as before, by the reconcile's `get` of the Secrets it names.
fn secret_changes(
    secrets: Api<PartialObjectMeta<Secret>>,
    index: PolicyIndex,
) -> impl futures::Stream<Item = Result<PartialObjectMeta<Secret>, watcher::Error>> {
    let changes = watcher(
        secrets,
        watcher::Config::default().page_size(LIST_PAGE_SIZE),
    )
    .default_backoff()
    .touched_objects()
    .try_filter(move |secret| {
        let namespace = secret.namespace().unwrap_or_default();
        futures::future::ready(index.is_trusted(&namespace, &secret.name_any()))
    });
    changed(changes, |secret| {
        let mut h = DefaultHasher::new();
        secret.metadata.resource_version.hash(&mut h);
        Some(h.finish())
    })
}

/// Each time another public-good root is put in use (or none), the keyless policies are
/// queued: a root rotated or revoked by Sigstore's TUF repository counts at once.
fn rejudge_on_root_change(
    ctx: &crate::controller::Context,
    index: PolicyIndex,
    queue: Arc<crate::controller::frame::queue::WorkQueue>,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let mut changes = ctx.settings.sigstore_root.changes();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = shutdown.cancelled() => return,
            }
            for policy in index.keyless() {
                let namespace = policy.namespace.as_deref().unwrap_or_default();
                queue.add(
                    key_of("ImagePolicy", namespace, &policy.name),
                    Instant::now(),
                );
            }
        }
    });
}

/// A namespace's labels, the only part of it a policy reads.
fn labels_hash(namespace: &PartialObjectMeta<Namespace>) -> Option<u64> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    namespace.labels().hash(&mut h);
    Some(h.finish())
}
