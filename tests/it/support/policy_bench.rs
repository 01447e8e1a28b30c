//! A bench for the ImagePolicy reconcile against a real registry: the stored tags (a scan's
//! listing, set by hand), the repository and Secrets as the cluster holds them, the registry's
//! request counts; the status is carried from one reconcile to the next by hand.

use super::distribution::Distribution;
use super::policy_cluster::Cluster;
use image_reflector::api::{ConditionStatus, ImagePolicy, ImagePolicyStatus};
use image_reflector::controller::image_policy::decide::{reconcile_policy, PolicyEnv};
use image_reflector::controller::outcome::next::Next;
use image_reflector::registry::Registries;
use image_reflector::store::{MemoryStore, RepoKey, TagList, TagStore};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

pub const NS: &str = "team";

/// A test bench: the registry, the stored tags, the cluster, the request counts.
pub struct Bench {
    pub registry: Distribution,
    pub store: Arc<dyn TagStore>,
    pub registries: Arc<Registries>,
    pub cluster: Cluster,
}

impl Bench {
    pub fn new(registry: Distribution, tags: &[&str]) -> Bench {
        let store: Arc<dyn TagStore> = Arc::new(MemoryStore::new());
        let key = RepoKey::new(NS, "app").unwrap();
        store.set(&key, &TagList::new(tags).unwrap()).unwrap();
        Bench::with_store(registry, store, tags.len())
    }

    /// On `store` as it is (a controller restarted on its store).
    pub fn with_store(registry: Distribution, store: Arc<dyn TagStore>, tags: usize) -> Bench {
        let repository = serde_json::from_value(json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
            "metadata": {"name": "app", "namespace": NS},
            "spec": {"image": format!("{}/app", registry.host), "interval": "5m",
                     "secretRef": {"name": "creds"}},
            "status": {"lastScanResult": {"tagCount": tags, "scanTime": "2026-01-01T00:00:00Z"}},
        }))
        .unwrap();
        Bench {
            registry,
            store,
            registries: Registries::new(Default::default()),
            cluster: Cluster::new(vec![repository]),
        }
    }

    pub fn requests(&self) -> u64 {
        self.registries.scheduler().request_counts().values().sum()
    }

    /// One reconcile of `policy` at `now`; the policy comes back with the new status.
    pub async fn reconcile(&self, policy: &mut ImagePolicy, now: Timestamp) -> Next {
        let scanned = |_: &RepoKey| true;
        let env = PolicyEnv {
            reader: &self.cluster,
            registries: &self.registries,
            store: &self.store,
            now,
            workload_identity: Default::default(),
            no_cross_namespace_refs: false,
            requeue_dependency: Duration::from_secs(30),
            repository_scanned: &scanned,
            first_since_start: false,
            sigstore_root: &no_mirror(),
        };
        let result = reconcile_policy(policy, &env).await;
        policy.status = Some(result.status);
        // What the API server would do with the observed generation.
        result.next
    }
}

pub fn policy(spec: Value) -> ImagePolicy {
    let mut full = json!({"imageRepositoryRef": {"name": "app"},
                          "policy": {"semver": {"range": ">=0.0.0"}}});
    for (k, v) in spec.as_object().unwrap() {
        full[k] = v.clone();
    }
    serde_json::from_value(json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy",
        "metadata": {"name": "p", "namespace": NS, "generation": 1},
        "spec": full,
    }))
    .unwrap()
}

pub fn status(policy: &ImagePolicy) -> &ImagePolicyStatus {
    policy.status.as_ref().unwrap()
}

pub fn ready(policy: &ImagePolicy) -> (ConditionStatus, String, String) {
    let c = status(policy)
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .expect("Ready")
        .clone();
    (c.status, c.reason, c.message)
}

pub fn elected(policy: &ImagePolicy) -> (String, Option<String>) {
    let latest = status(policy).latest_ref.clone().expect("latestRef");
    (latest.tag, latest.digest)
}

/// (tag, gate, reason) of status.heldBack.
pub fn held(policy: &ImagePolicy) -> Vec<(String, String, String)> {
    status(policy)
        .held_back
        .iter()
        .flatten()
        .map(|h| (h.tag.clone(), h.gate.clone(), h.reason.clone()))
        .collect()
}

pub fn ago(now: Timestamp, hours: i64) -> String {
    (now - SignedDuration::from_hours(hours)).to_string()
}

impl Bench {
    /// What a scan that listed `tags` leaves in the store.
    pub fn list(&self, tags: &[&str]) {
        let key = RepoKey::new(NS, "app").unwrap();
        self.store.set(&key, &TagList::new(tags).unwrap()).unwrap();
    }
}

/// Sigstore's public-good root without a mirror: the embedded one, never fetched.
pub fn no_mirror() -> Arc<image_reflector::registry::sigstore_root::PublicGoodRoot> {
    Arc::new(image_reflector::registry::sigstore_root::PublicGoodRoot::new(Default::default()))
}
