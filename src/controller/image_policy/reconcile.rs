//! What a reconcile of an ImagePolicy adds to the shared one ([`Reconciled`]): it waits for
//! the repositories' cache, migrates deprecated status fields first (its own patch), decides
//! in [`super::decide`], and reports its election in metrics and events.

use super::decide::{reconcile_policy, PolicyEnv};
use super::migrate::migrate_status;
use super::reader::ClusterReader;
use super::report::{held_events, newly_held, ref_metadata};
use super::serving;
use crate::api::{HeldBackTag, ImagePolicy, ImagePolicyStatus, ImageRepository};
use crate::controller::events::transition::EventSpec;
use crate::controller::frame::confirm::after_refusal;
use crate::controller::frame::context::{ApiReader, Context};
use crate::controller::frame::queue::WorkQueue;
use crate::controller::frame::reconciled::{Decision, KindHandoffs, Prepared, Reconciled, Serving};
use crate::controller::object::cache::ObjectCache;
use crate::controller::object::keys::object_labels;
use crate::controller::object::seen::SeenSet;
use crate::controller::object::slim::slim;
use crate::controller::outcome::error::Error;
use crate::controller::outcome::next::Next;
use crate::controller::outcome::status::{is_ready, patch_status, Patched};
use crate::controller::schema::marker;
use crate::store::RepoKey;
use crate::telemetry::metrics::{Elected, Metrics};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How soon a policy looks again while the repositories' cache is still loading.
const CACHE_WAIT: Duration = Duration::from_millis(200);

/// What the ImagePolicy reconciles share: the common context and the repositories' cache.
pub struct PolicyContext {
    pub shared: Arc<Context>,
    pub repositories: Arc<ObjectCache<ImageRepository>>,
    /// Set once the repositories' cache holds the initial list: before that a policy would
    /// wrongly find its repository missing.
    pub repositories_synced: Arc<AtomicBool>,
    /// Policies (`Kind/namespace/name`) reconciled since start: a digest fetched before a
    /// restart may still be fresh for their first reconcile (docs/imagepolicy.md).
    seen: Mutex<SeenSet>,
    /// Reconciles that went on off the workers.
    pub handoffs: KindHandoffs<ImagePolicy>,
    /// The policies' watch cache, which a fresh read updates (frame/confirm.rs).
    pub policies: Arc<ObjectCache<ImagePolicy>>,
}

impl PolicyContext {
    pub fn new(
        shared: Arc<Context>,
        repositories: Arc<ObjectCache<ImageRepository>>,
        repositories_synced: Arc<AtomicBool>,
    ) -> Arc<Self> {
        let policies = Arc::default();
        Self::with_cache(shared, repositories, repositories_synced, policies)
    }

    /// [`PolicyContext::new`] over the policies' watch cache.
    pub fn with_cache(
        shared: Arc<Context>,
        repositories: Arc<ObjectCache<ImageRepository>>,
        repositories_synced: Arc<AtomicBool>,
        policies: Arc<ObjectCache<ImagePolicy>>,
    ) -> Arc<Self> {
        Arc::new(PolicyContext {
            shared,
            repositories,
            repositories_synced,
            seen: Mutex::default(),
            handoffs: KindHandoffs::default(),
            policies,
        })
    }

    /// Whether this is the first reconcile of the policy `key` since start; records it.
    fn first_reconcile(&self, key: &str) -> bool {
        self.seen.lock().expect("policies lock").insert(key)
    }
}

impl AsRef<Context> for PolicyContext {
    fn as_ref(&self) -> &Context {
        &self.shared
    }
}

impl Reconciled for ImagePolicy {
    type Status = ImagePolicyStatus;
    type Ctx = PolicyContext;
    const CONTROLLER: &'static str = "imagepolicy";

    fn queue(ctx: &Context) -> &Arc<WorkQueue> {
        &ctx.policy_queue
    }

    fn handoffs(ctx: &PolicyContext) -> &KindHandoffs<Self> {
        &ctx.handoffs
    }

    fn status(&self) -> Option<&ImagePolicyStatus> {
        self.status.as_ref()
    }

    fn suspended(&self) -> bool {
        self.spec.suspend == Some(true)
    }

    /// Every write confirmed, once per spec, and guarded: a served schema may prune gates.
    const CONFIRMS_SPEC: bool = true;

    fn write_guards(&self) -> Vec<serde_json::Value> {
        marker::guards(self)
    }

    fn refreshed(ctx: &PolicyContext, mut fresh: Self) {
        slim(&mut fresh);
        ctx.policies.insert(&fresh);
    }

    fn serving(&self, ctx: &PolicyContext) -> Serving {
        serving::serving(self, &ctx.shared.schema)
    }

    /// The cache first, then the migration of deprecated fields, before anything else (even
    /// suspend), in its own patch.
    async fn prepare<'a>(
        &'a self,
        key: &str,
        api: &Api<Self>,
        ctx: &PolicyContext,
    ) -> Result<Prepared<'a, Self>, Error> {
        if !ctx.repositories_synced.load(Ordering::SeqCst) {
            return Ok(Prepared::Stop(Next::After(CACHE_WAIT)));
        }
        if let Some(marking) = marker::marking(self) {
            if let Err(refused) = serving::mark(api, self, marking).await {
                // The API server holds another spec, or serves this one pruned: read again.
                after_refusal(self, key, refused, api, ctx).await?;
                return Ok(Prepared::Stop(Next::After(Duration::ZERO)));
            }
        }
        let Some(migrated) = self.status.as_ref().and_then(migrate_status) else {
            return Ok(Prepared::Go(Cow::Borrowed(self)));
        };
        // Only the migration: the refs, and `null` for the deprecated fields.
        let current = self.status.clone().unwrap_or_default();
        let guards = marker::guards(self);
        patch_status(api, self, &current, &migrated, Patched::Changes, &guards).await?;
        tracing::info!("migrated the deprecated status fields latestImage/observedPreviousImage");
        let mut policy = self.clone();
        policy.status = Some(migrated);
        Ok(Prepared::Go(Cow::Owned(policy)))
    }

    async fn decide(
        &self,
        key: &str,
        ctx: &PolicyContext,
        now: Timestamp,
    ) -> Decision<ImagePolicyStatus> {
        let shared = &ctx.shared;
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
            first_since_start: ctx.first_reconcile(key),
            sigstore_root: &shared.settings.sigstore_root,
        };
        reconcile_policy(self, &env).await
    }

    /// Ready, and what the policy elects now.
    fn record_metrics(
        &self,
        old: &ImagePolicyStatus,
        status: &ImagePolicyStatus,
        metrics: &Metrics,
    ) {
        let labels = object_labels("ImagePolicy", self);
        let held = status.held_back.as_deref().unwrap_or_default();
        let gates = held.iter().flat_map(|h| h.holds().map(|(gate, _)| gate));
        metrics.set_held_back(&labels.namespace, &labels.name, gates);
        for (gate, _) in newly_held(old, status).flat_map(HeldBackTag::holds) {
            metrics.held_back(&labels.namespace, gate);
        }
        metrics.set_ready(
            &labels,
            is_ready(status.conditions.as_deref().unwrap_or_default()),
        );
        let elected = status.latest_ref.as_ref().map(|latest| Elected {
            image: latest.name.clone(),
            tag: latest.tag.clone(),
            digest: latest.digest.clone().unwrap_or_default(),
        });
        metrics.set_policy(&labels.namespace, &labels.name, elected);
    }

    fn event_metadata(status: &ImagePolicyStatus) -> BTreeMap<String, String> {
        ref_metadata(status)
    }

    fn notes(old: &ImagePolicyStatus, new: &ImagePolicyStatus) -> Vec<EventSpec> {
        let mut events = held_events(old, new);
        events.extend(super::notices::events(old, new));
        events
    }

    /// Nothing is stored per policy; per-object state goes.
    async fn cleanup(&self, key: &str, ctx: &PolicyContext) -> Result<Next, Error> {
        ctx.shared.backoff.reset(key);
        ctx.shared.recorder.repeats.forget(key);
        ctx.shared.recorder.limits.forget(key);
        ctx.seen.lock().expect("policies lock").remove(key);
        ctx.shared.confirmed.forget(key);
        ctx.shared.schema.forget(key);
        Ok(Next::AwaitChange)
    }
}
