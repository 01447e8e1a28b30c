//! The ImagePolicy controller: kube plumbing around [`reconcile_policy`]. It reads as Flux's
//! outer flow (§4.2): finalizer, deletion, migration of deprecated fields (its own patch,
//! first), suspend, then the reconcile. Policies are re-triggered when their repository's
//! `lastScanResult.revision` or canonical name changes (docs/compatibility.md), through an index from
//! repository to policies.

pub mod access;
pub mod decide;
pub mod migrate;

use crate::api::{ImagePolicy, ImagePolicyStatus, ImageRepository, API_GROUP};
use crate::controller::image_policy::decide::{reconcile_policy, PolicyEnv, PolicyReader};
use crate::controller::image_policy::migrate::{migrate_status, migration_patch};
use crate::controller::image_repository::feed::Feed;
use crate::controller::shared::context::{ApiReader, Context};
use crate::controller::shared::credentials::ObjectReader;
use crate::controller::shared::error::{log_result, next_requeue, Error};
use crate::controller::shared::reconcile::{reconcile_in_frame, retry, Requeue};
use crate::controller::shared::slim::slim;
use crate::controller::shared::status::{
    is_ready, is_stalled, key_of, object_key, object_labels, patch_status, trigger_hash,
    FIELD_MANAGER,
};
use crate::runtime::http::ReadyPart;
use crate::store::RepoKey;
use crate::telemetry::metrics::Elected;
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use kube::api::{Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::finalizer::Event as Finalizer;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// What the ImagePolicy reconciles share: the common context and the repositories' cache.
pub struct PolicyContext {
    pub shared: Arc<Context>,
    pub repositories: Store<ImageRepository>,
    /// Set once the repositories' cache holds the initial list: before that a policy would
    /// wrongly find its repository missing.
    pub repositories_synced: Arc<AtomicBool>,
}

/// How soon a policy looks again while the repositories' cache is still loading.
const CACHE_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

const CONTROLLER: &str = "imagepolicy";

/// One reconcile: finalizer first, then apply or clean up.
pub async fn reconcile(policy: Arc<ImagePolicy>, ctx: Arc<PolicyContext>) -> Result<Action, Error> {
    let api = Api::<ImagePolicy>::namespaced(
        ctx.shared.client.clone(),
        &policy.namespace().unwrap_or_default(),
    );
    let shared = &ctx.shared;
    reconcile_in_frame(
        CONTROLLER,
        policy,
        &api,
        shared,
        &shared.policy_queue,
        |event| async {
            match event {
                Finalizer::Apply(policy) => apply(&policy, &api, &ctx).await,
                Finalizer::Cleanup(policy) => cleanup(&policy, shared),
            }
        },
    )
    .await
}

/// Migrate, suspend, reconcile, write the status, send the event, decide the next run.
async fn apply(
    policy: &ImagePolicy,
    api: &Api<ImagePolicy>,
    ctx: &PolicyContext,
) -> Result<Requeue, Error> {
    let shared = &ctx.shared;
    if !ctx.repositories_synced.load(Ordering::SeqCst) {
        return Ok(Some(CACHE_WAIT));
    }
    let mut policy = policy.clone();
    if let Some(migrated) = policy.status.as_ref().and_then(migrate_status) {
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        api.patch_status(
            &policy.name_any(),
            &params,
            &Patch::Merge(&migration_patch(&migrated)),
        )
        .await?;
        tracing::info!("migrated the deprecated status fields latestImage/observedPreviousImage");
        policy.status = Some(migrated);
    }
    let old = policy.status.clone().unwrap_or_default();
    if policy.spec.suspend == Some(true) {
        // Suspend returns before anything else (after the migration), as Flux does.
        tracing::info!("reconciliation is suspended for this object");
        return Ok(None);
    }
    let now = (shared.clock)();
    let reader = ClusterReader {
        api: ApiReader(shared.client.clone()),
        repositories: ctx.repositories.clone(),
    };
    let scanned = |key: &RepoKey| shared.was_scanned(key);
    let env = PolicyEnv {
        reader: &reader,
        registries: &shared.registries,
        store: &shared.store,
        now,
        workload_identity: shared.settings.workload_identity(),
        no_cross_namespace_refs: shared.settings.no_cross_namespace_refs,
        requeue_dependency: shared.settings.requeue_dependency,
        repository_scanned: &scanned,
        first_since_start: shared.first_policy_reconcile(&object_key(&policy)),
    };
    let result = reconcile_policy(&policy, &env).await;
    let stalled = is_stalled(result.status.conditions.as_deref().unwrap_or_default());
    log_result(&result.next, stalled, &result.summary);
    patch_status(api, &policy, &old, &result.status).await?;
    record_metrics(&policy, &result.status, shared);
    shared
        .recorder
        .publish_transition(
            &policy,
            old.conditions.as_deref().unwrap_or_default(),
            result.status.conditions.as_deref().unwrap_or_default(),
            now,
            ref_metadata(&result.status),
        )
        .await;
    next_requeue(
        result.next,
        result.summary,
        &object_key(&policy),
        &shared.backoff,
    )
}

/// Ready, and what the policy elects now.
fn record_metrics(policy: &ImagePolicy, status: &ImagePolicyStatus, ctx: &Context) {
    let labels = object_labels("ImagePolicy", policy);
    ctx.metrics.set_ready(
        &labels,
        is_ready(status.conditions.as_deref().unwrap_or_default()),
    );
    let info = status.latest_ref.as_ref().map(|latest| Elected {
        image: latest.name.clone(),
        tag: latest.tag.clone(),
        digest: latest.digest.clone().unwrap_or_default(),
    });
    ctx.metrics
        .set_policy(&labels.namespace, &labels.name, info);
}

/// Deletion: nothing is stored per policy; per-object state goes.
fn cleanup(policy: &ImagePolicy, ctx: &Context) -> Result<Requeue, Error> {
    let key = object_key(policy);
    ctx.backoff.reset(&key);
    ctx.recorder.repeats.forget(&key);
    ctx.forget_policy(&key);
    Ok(None)
}

/// When to try again after an error: decided by its kind.
pub fn error_policy(policy: Arc<ImagePolicy>, err: &Error, ctx: Arc<PolicyContext>) -> Action {
    let shared = &ctx.shared;
    retry(
        CONTROLLER,
        policy.as_ref(),
        err,
        shared,
        &shared.policy_queue,
    )
}

/// The Alert metadata of a policy event, under keys Flux's notification-controller keeps: it
/// passes on only `<involved object's group>/<key>` (prefix removed) and
/// `event.toolkit.fluxcd.io/<key>`, drops `<group>/digest` and `<group>/checksum`, and
/// de-duplicates events by message plus `<group>/revision`. So the revision is `tag@digest`
/// (a digest change under the same tag is never folded into the tag change), and the digests
/// travel as `latestDigest` and `previousDigest`.
pub fn ref_metadata(status: &ImagePolicyStatus) -> BTreeMap<String, String> {
    let mut metadata = BTreeMap::new();
    let mut put = |key: &str, value: Option<&String>| {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            metadata.insert(format!("{API_GROUP}/{key}"), value.clone());
        }
    };
    if let Some(latest) = &status.latest_ref {
        let revision = match &latest.digest {
            Some(digest) if !digest.is_empty() => format!("{}@{digest}", latest.tag),
            _ => latest.tag.clone(),
        };
        put(REVISION_KEY, Some(&revision));
        put("latestTag", Some(&latest.tag));
        put("latestDigest", latest.digest.as_ref());
    }
    if let Some(previous) = &status.observed_previous_ref {
        put("previousTag", Some(&previous.tag));
        put("previousDigest", previous.digest.as_ref());
    }
    metadata
}

/// notification-controller's de-duplication key (with the message).
pub const REVISION_KEY: &str = "revision";

/// Repositories from the watch cache (as Flux reads them), namespaces and Secrets live.
struct ClusterReader {
    api: ApiReader,
    repositories: Store<ImageRepository>,
}

impl ObjectReader for ClusterReader {
    async fn secret(&self, namespace: &str, name: &str) -> Result<Option<Secret>, String> {
        self.api.secret(namespace, name).await
    }

    async fn service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ServiceAccount>, String> {
        self.api.service_account(namespace, name).await
    }

    fn service_account_source(
        &self,
        namespace: &str,
        name: &str,
    ) -> std::sync::Arc<dyn crate::registry::cloud::ServiceAccountSource> {
        self.api.service_account_source(namespace, name)
    }
}

impl PolicyReader for ClusterReader {
    async fn image_repository(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ImageRepository>, String> {
        let key = ObjectRef::<ImageRepository>::new(name).within(namespace);
        Ok(self.repositories.get(&key).map(|r| r.as_ref().clone()))
    }

    async fn namespace_labels(
        &self,
        namespace: &str,
    ) -> Result<Option<BTreeMap<String, String>>, String> {
        crate::api::check_namespace_name(namespace)
            .map_err(|why| format!("invalid namespace {namespace:?}: {why}"))?;
        let api = Api::<Namespace>::all(self.api.0.clone());
        crate::controller::shared::context::read_named(namespace, api.get_opt(namespace))
            .await
            .map(|ns| ns.map(|ns| ns.labels().clone()))
    }
}

/// Which policies refer to which repository, kept from the policies' watch.
#[derive(Clone, Default)]
pub struct PolicyIndex(Arc<RwLock<IndexMaps>>);

#[derive(Default)]
struct IndexMaps {
    repository_of: HashMap<ObjectRef<ImagePolicy>, (String, String)>,
    policies_of: HashMap<(String, String), HashSet<ObjectRef<ImagePolicy>>>,
}

impl PolicyIndex {
    /// Follows one event of the policies' watch.
    pub fn observe(&self, event: &watcher::Event<ImagePolicy>) {
        match event {
            watcher::Event::Apply(policy) | watcher::Event::InitApply(policy) => self.apply(policy),
            watcher::Event::Delete(policy) => self.remove(&ObjectRef::from_obj(policy)),
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }

    fn apply(&self, policy: &ImagePolicy) {
        // Name and namespace only: an ObjectRef's uid and resourceVersion take no part in its
        // equality, and kept twice for every policy they were about 2 MB at 10,000.
        let mut key = ObjectRef::new(&policy.name_any());
        if let Some(namespace) = policy.metadata.namespace.as_deref() {
            key = key.within(namespace);
        }
        let reference = &policy.spec.image_repository_ref;
        let repository = (
            reference
                .namespace
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| policy.namespace().unwrap_or_default()),
            reference.name.clone(),
        );
        self.remove(&key);
        let mut maps = self.0.write().expect("policy index lock");
        maps.policies_of
            .entry(repository.clone())
            .or_default()
            .insert(key.clone());
        maps.repository_of.insert(key, repository);
    }

    fn remove(&self, key: &ObjectRef<ImagePolicy>) {
        let mut maps = self.0.write().expect("policy index lock");
        if let Some(repository) = maps.repository_of.remove(key) {
            if let Some(set) = maps.policies_of.get_mut(&repository) {
                set.remove(key);
                if set.is_empty() {
                    maps.policies_of.remove(&repository);
                }
            }
        }
    }

    /// Every repository some policy refers to.
    pub fn referenced_repositories(&self) -> Vec<RepoKey> {
        let maps = self.0.read().expect("policy index lock");
        maps.policies_of
            .keys()
            .filter_map(|(namespace, name)| RepoKey::new(namespace.as_str(), name.as_str()).ok())
            .collect()
    }

    /// The policies in `namespace` that refer to a repository in another namespace: what
    /// that namespace's labels decide (the repository's `accessFrom`).
    pub fn cross_namespace_policies_in(&self, namespace: &str) -> Vec<ObjectRef<ImagePolicy>> {
        let maps = self.0.read().expect("policy index lock");
        maps.repository_of
            .iter()
            .filter(|(policy, (repo_ns, _))| {
                policy.namespace.as_deref() == Some(namespace) && repo_ns != namespace
            })
            .map(|(policy, _)| policy.clone())
            .collect()
    }

    /// The policies that refer to `repository`.
    pub fn policies_for(&self, repository: &ImageRepository) -> Vec<ObjectRef<ImagePolicy>> {
        let key = (
            repository.namespace().unwrap_or_default(),
            repository.name_any(),
        );
        let maps = self.0.read().expect("policy index lock");
        maps.policies_of
            .get(&key)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }
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
/// Repositories come from the repository controller's watch (`repository_feed`).
pub fn controller(
    policies: Api<ImagePolicy>,
    repositories: Feed,
    watch: watcher::Config,
    ctx: Arc<Context>,
    concurrency: u16,
    shutdown: CancellationToken,
    policies_synced: ReadyPart,
) -> impl std::future::Future<Output = ()> {
    let index = PolicyIndex::default();
    let queue = ctx.policy_queue.clone();
    let (enqueued, mapped) = (queue.clone(), queue.clone());
    let (policy_reader, policy_writer) = reflector::store();
    let observed = index.clone();
    let order_ctx = ctx.clone();
    let policy_triggers = watcher(policies, watch)
        .default_backoff()
        .modify(slim)
        .reflect(policy_writer)
        .inspect_ok(move |event| {
            observed.observe(event);
            if matches!(event, watcher::Event::InitDone) {
                order_ctx
                    .scan_order
                    .prioritize(observed.referenced_repositories());
                policies_synced.set_ready();
            }
        })
        .applied_objects()
        .predicate_filter(trigger_hash, Default::default())
        .inspect_ok(move |policy| enqueued.add(object_key(policy), Instant::now()));
    let (repo_reader, synced, changes) = repositories.into_parts();
    let repository_changes = changes.predicate_filter(repository_change_hash, Default::default());
    // A namespace's labels decide a cross-namespace policy (accessFrom): their changes are
    // watched (metadata only) and re-evaluate that namespace's cross-namespace policies.
    let namespace_changes = watcher(
        Api::<PartialObjectMeta<Namespace>>::all(ctx.client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .touched_objects()
    .predicate_filter(labels_hash, Default::default());
    let (namespace_index, relabelled) = (index.clone(), queue.clone());
    let ctx = Arc::new(PolicyContext {
        shared: ctx,
        repositories: repo_reader,
        repositories_synced: synced,
    });
    let run = Controller::for_stream(policy_triggers, policy_reader)
        .watches_stream(namespace_changes, move |namespace| {
            let policies = namespace_index.cross_namespace_policies_in(&namespace.name_any());
            for policy in &policies {
                let key = key_of("ImagePolicy", &namespace.name_any(), &policy.name);
                relabelled.add(key, Instant::now());
            }
            policies
        })
        .watches_stream(repository_changes, move |repo| {
            let policies = index.policies_for(&repo);
            for policy in &policies {
                let namespace = policy.namespace.as_deref().unwrap_or_default();
                let key = key_of("ImagePolicy", namespace, &policy.name);
                mapped.add(key, Instant::now());
            }
            policies
        })
        .with_config(Config::default().concurrency(concurrency))
        .graceful_shutdown_on(shutdown.cancelled_owned())
        .run(reconcile, error_policy, ctx);
    queue.run_loop(run)
}

/// A namespace's labels, the only part of it a policy reads.
fn labels_hash(namespace: &PartialObjectMeta<Namespace>) -> Option<u64> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    namespace.labels().hash(&mut h);
    Some(h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ImagePolicySpec, ImageRef, NamespacedObjectReference};

    fn policy(ns: &str, name: &str, repo_ns: Option<&str>, repo: &str) -> ImagePolicy {
        let mut p = ImagePolicy::new(
            name,
            ImagePolicySpec {
                image_repository_ref: NamespacedObjectReference {
                    name: repo.into(),
                    namespace: repo_ns.map(String::from),
                },
                policy: Default::default(),
                filter_tags: None,
                digest_reflection_policy: None,
                interval: None,
                suspend: None,
            },
        );
        p.metadata.namespace = Some(ns.into());
        p
    }

    fn repository(ns: &str, name: &str) -> ImageRepository {
        let mut r: ImageRepository = serde_json::from_value(serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"image": "a/b", "interval": "5m"}
        }))
        .unwrap();
        r.metadata.namespace = Some(ns.into());
        r
    }

    fn names(refs: Vec<ObjectRef<ImagePolicy>>) -> Vec<String> {
        let mut names: Vec<String> = refs
            .into_iter()
            .map(|r| format!("{}/{}", r.namespace.unwrap(), r.name))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_index_maps_repositories_to_their_policies() {
        let index = PolicyIndex::default();
        index.observe(&watcher::Event::InitApply(policy(
            "apps", "p1", None, "app",
        )));
        index.observe(&watcher::Event::Apply(policy(
            "team",
            "p2",
            Some("apps"),
            "app",
        )));
        index.observe(&watcher::Event::Apply(policy(
            "apps",
            "p3",
            Some(""),
            "other",
        )));
        assert_eq!(
            names(index.policies_for(&repository("apps", "app"))),
            ["apps/p1", "team/p2"]
        );
        assert_eq!(
            names(index.policies_for(&repository("apps", "other"))),
            ["apps/p3"]
        );
        // A policy that moves to another repository, and one deleted.
        index.observe(&watcher::Event::Apply(policy("apps", "p1", None, "other")));
        index.observe(&watcher::Event::Delete(policy(
            "team",
            "p2",
            Some("apps"),
            "app",
        )));
        assert!(index.policies_for(&repository("apps", "app")).is_empty());
        assert_eq!(
            names(index.policies_for(&repository("apps", "other"))),
            ["apps/p1", "apps/p3"]
        );
    }

    #[test]
    fn alert_metadata_names_tags_and_digests() {
        let status = ImagePolicyStatus {
            latest_ref: Some(ImageRef {
                name: "a/b".into(),
                tag: "1.1".into(),
                digest: Some("sha256:new".into()),
            }),
            observed_previous_ref: Some(ImageRef {
                name: "a/b".into(),
                tag: "1.0".into(),
                digest: None,
            }),
            ..Default::default()
        };
        let metadata = ref_metadata(&status);
        let expected: BTreeMap<String, String> = [
            ("revision", "1.1@sha256:new"),
            ("latestTag", "1.1"),
            ("latestDigest", "sha256:new"),
            ("previousTag", "1.0"),
        ]
        .iter()
        .map(|(k, v)| (format!("image.toolkit.fluxcd.io/{k}"), v.to_string()))
        .collect();
        assert_eq!(metadata, expected);
    }
}
