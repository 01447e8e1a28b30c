//! flux-compat.md §6.1's digest-reflection transition table, against a real Distribution
//! registry: semver `v1.x` over `v1.0.0 v1.1.0 v1.1.1 v2.0.0`; a first reconcile, then every tag
//! is re-pushed with new content (new digests) and a second reconcile with the second policy.
//! Runs the ImagePolicy reconcile itself (no API server: the status is carried by hand).

use crate::support::distribution::{Distribution, Variant};
use image_reflector::api::{ImagePolicy, ImageRef, ImageRepository};
use image_reflector::controller::image_policy::decide::{
    reconcile_policy, PolicyEnv, PolicyReader,
};
use image_reflector::controller::lookup::api_read::ReadError;
use image_reflector::controller::lookup::credentials::ObjectReader;
use image_reflector::controller::outcome::next::Next;
use image_reflector::registry::Registries;
use image_reflector::store::{MemoryStore, RepoKey, TagList, TagStore};
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

struct Repositories(Vec<ImageRepository>);

impl ObjectReader for Repositories {
    async fn secret(&self, _: &str, _: &str) -> Result<Option<Secret>, ReadError> {
        Ok(None)
    }
    async fn service_account(&self, _: &str, _: &str) -> Result<Option<ServiceAccount>, ReadError> {
        Ok(None)
    }
}

impl PolicyReader for Repositories {
    async fn image_repository(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ImageRepository>, ReadError> {
        Ok(self
            .0
            .iter()
            .find(|r| {
                r.metadata.namespace.as_deref() == Some(namespace)
                    && r.metadata.name.as_deref() == Some(name)
            })
            .cloned())
    }
    async fn namespace_labels(
        &self,
        _: &str,
    ) -> Result<Option<BTreeMap<String, String>>, ReadError> {
        Ok(Some(BTreeMap::new()))
    }
}

fn policy(reflection: Option<&str>, range: &str) -> ImagePolicy {
    let mut spec =
        json!({"imageRepositoryRef": {"name": "app"}, "policy": {"semver": {"range": range}}});
    if let Some(r) = reflection {
        spec["digestReflectionPolicy"] = json!(r);
        if r == "Always" {
            spec["interval"] = json!("10m");
        }
    }
    serde_json::from_value(json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy",
        "metadata": {"name": "p", "namespace": "team", "generation": 1},
        "spec": spec,
    }))
    .unwrap()
}

/// One reconcile of `policy` now, every repository scanned.
async fn decide(
    policy: &ImagePolicy,
    reader: &Repositories,
    store: &Arc<dyn TagStore>,
    registries: &Arc<Registries>,
) -> image_reflector::controller::image_policy::decide::PolicyResult {
    let scanned = |_: &RepoKey| true;
    let env = PolicyEnv {
        reader,
        registries,
        store,
        now: k8s_openapi::jiff::Timestamp::now(),
        workload_identity: Default::default(),
        no_cross_namespace_refs: false,
        requeue_dependency: Duration::from_secs(30),
        repository_scanned: &scanned,
        first_since_start: false,
        sigstore_root: &crate::support::policy_bench::no_mirror(),
    };
    reconcile_policy(policy, &env).await
}

/// Reconciles `policy` (with `status` carried over) and returns it with its new status.
async fn reconcile(
    mut policy: ImagePolicy,
    status: Option<image_reflector::api::ImagePolicyStatus>,
    reader: &Repositories,
    store: &Arc<dyn TagStore>,
    registries: &Arc<Registries>,
) -> (ImagePolicy, Next) {
    policy.status = status;
    let result = decide(&policy, reader, store, registries).await;
    let ready = result
        .status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(
        ready.status,
        image_reflector::api::ConditionStatus::True,
        "{}",
        ready.message
    );
    policy.status = Some(result.status);
    (policy, result.next)
}

/// First policy, second policy, second range, second digest (`old`/`new`/none), the
/// observedPreviousRef after the second pass (tag, digest), and the two requeues.
type Row<'a> = (
    Option<&'a str>,
    Option<&'a str>,
    &'a str,
    &'a str,
    Option<(&'a str, &'a str)>,
    (Next, Next),
);

#[tokio::test]
async fn the_digest_reflection_transition_table() {
    let registry = Distribution::start(Variant::default());
    let tags: Vec<String> = ["v1.0.0", "v1.1.0", "v1.1.1", "v2.0.0"]
        .iter()
        .map(|t| t.to_string())
        .collect();
    let registries = Registries::new(Default::default());
    const TEN_MINUTES: Next = Next::After(Duration::from_secs(600));
    // (first policy, second policy, second range, second digest, previous ref after the second, requeues)
    let rows: [Row<'_>; 11] = [
        (
            None,
            None,
            "v1.x",
            "",
            None,
            (Next::AwaitChange, Next::AwaitChange),
        ),
        (
            Some("Never"),
            Some("Never"),
            "v1.x",
            "",
            None,
            (Next::AwaitChange, Next::AwaitChange),
        ),
        (
            Some("Always"),
            Some("Always"),
            "v1.x",
            "new",
            Some(("v1.1.1", "old")),
            (TEN_MINUTES, TEN_MINUTES),
        ),
        (
            Some("IfNotPresent"),
            Some("IfNotPresent"),
            "v2.x",
            "new",
            Some(("v1.1.1", "old")),
            (Next::AwaitChange, Next::AwaitChange),
        ),
        (
            Some("IfNotPresent"),
            Some("IfNotPresent"),
            "v1.x",
            "old",
            None,
            (Next::AwaitChange, Next::AwaitChange),
        ),
        (
            Some("Never"),
            Some("IfNotPresent"),
            "v1.x",
            "new",
            Some(("v1.1.1", "")),
            (Next::AwaitChange, Next::AwaitChange),
        ),
        (
            Some("Always"),
            Some("Never"),
            "v1.x",
            "",
            Some(("v1.1.1", "old")),
            (TEN_MINUTES, Next::AwaitChange),
        ),
        (
            Some("IfNotPresent"),
            Some("Never"),
            "v1.x",
            "",
            Some(("v1.1.1", "old")),
            (Next::AwaitChange, Next::AwaitChange),
        ),
        (
            Some("IfNotPresent"),
            Some("Always"),
            "v1.x",
            "new",
            Some(("v1.1.1", "old")),
            (Next::AwaitChange, TEN_MINUTES),
        ),
        (
            Some("Always"),
            Some("IfNotPresent"),
            "v1.x",
            "old",
            None,
            (TEN_MINUTES, Next::AwaitChange),
        ),
        (
            Some("IfNotPresent"),
            Some("IfNotPresent"),
            "=v1.1.1",
            "old",
            None,
            (Next::AwaitChange, Next::AwaitChange),
        ),
    ];
    for (i, (first, second, range, expected_digest, expected_previous, (requeue1, requeue2))) in
        rows.into_iter().enumerate()
    {
        let repository = format!("row{i}/app");
        let old = registry.push_image_variant(&repository, &tags, "old").await;
        let image = format!("{}/{repository}", registry.host);
        let repo: ImageRepository = serde_json::from_value(json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
            "metadata": {"name": "app", "namespace": "team"},
            "spec": {"image": image, "interval": "5m"}
        }))
        .unwrap();
        let reader = Repositories(vec![repo]);
        let store: Arc<dyn TagStore> = Arc::new(MemoryStore::new());
        store
            .set(
                &RepoKey::new("team", "app").unwrap(),
                &TagList::new(&tags).unwrap(),
            )
            .unwrap();

        let (after_first, next) =
            reconcile(policy(first, "v1.x"), None, &reader, &store, &registries).await;
        assert_eq!(next, requeue1, "row {i}: first requeue");
        let first_ref = after_first
            .status
            .as_ref()
            .unwrap()
            .latest_ref
            .clone()
            .unwrap();
        assert_eq!(first_ref.tag, "v1.1.1", "row {i}");
        let first_digest = if first.is_some_and(|f| f != "Never") {
            Some(old.clone())
        } else {
            None
        };
        assert_eq!(first_ref.digest, first_digest, "row {i}: first digest");

        let new = registry.push_image_variant(&repository, &tags, "new").await;
        assert_ne!(old, new);
        let (after_second, next) = reconcile(
            policy(second, range),
            after_first.status.clone(),
            &reader,
            &store,
            &registries,
        )
        .await;
        assert_eq!(next, requeue2, "row {i}: second requeue");
        let status = after_second.status.unwrap();
        let digest_of = |which: &str| match which {
            "old" => Some(old.clone()),
            "new" => Some(new.clone()),
            _ => None,
        };
        let latest = status.latest_ref.unwrap();
        let expected_tag = if range == "v2.x" { "v2.0.0" } else { "v1.1.1" };
        assert_eq!(
            (latest.tag.as_str(), latest.digest.clone()),
            (expected_tag, digest_of(expected_digest)),
            "row {i}: second ref"
        );
        let expected_previous = expected_previous.map(|(tag, digest)| ImageRef {
            name: image.clone(),
            tag: tag.into(),
            digest: digest_of(digest),
        });
        assert_eq!(
            status.observed_previous_ref.map(|r| *r),
            expected_previous,
            "row {i}: observedPreviousRef"
        );
    }
}

/// A digest fetch the registry answers with 429 and `Retry-After`: Ready=False `RateLimited`,
/// and the policy is asked again when the registry said, not at the next backoff step.
#[tokio::test]
async fn a_rate_limited_digest_fetch_waits_for_retry_after() {
    use crate::support::fault_server::{FaultServer, Reply};
    let registry = FaultServer::start(|_| Reply::status(429).header("Retry-After", "120")).await;
    let repository: ImageRepository = serde_json::from_value(json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
        "metadata": {"name": "app", "namespace": "team"},
        "spec": {"image": format!("{}/demo/app", registry.host()), "interval": "5m"},
        "status": {"lastScanResult": {"tagCount": 1, "scanTime": "2026-01-01T00:00:00Z"}},
    }))
    .unwrap();
    let reader = Repositories(vec![repository]);
    let store: Arc<dyn TagStore> = Arc::new(MemoryStore::new());
    let key = RepoKey::new("team", "app").unwrap();
    store.set(&key, &TagList::new(["v1.0.0"]).unwrap()).unwrap();
    let registries = Registries::new(Default::default());
    let started = std::time::SystemTime::now();
    let ifnotpresent = policy(Some("IfNotPresent"), ">=1.0.0");
    let result = decide(&ifnotpresent, &reader, &store, &registries).await;
    let ready = result
        .status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(
        (ready.status, ready.reason.as_str()),
        (image_reflector::api::ConditionStatus::False, "RateLimited")
    );
    assert!(
        ready.message.starts_with("failed fetching digest of ") && ready.message.contains("v1.0.0"),
        "{}",
        ready.message
    );
    let Next::RetryAt(at) = result.next else {
        panic!("{:?}", result.next)
    };
    let wait = at.duration_since(started).unwrap().as_secs();
    assert!(
        (115..=121).contains(&wait),
        "asked again at Retry-After: {wait}s"
    );
    assert_eq!(
        registry.seen().len(),
        1,
        "no retry against a 120s Retry-After"
    );

    // With a gate, the same answer to the walk is `RateLimited` too, naming the candidate,
    // not a `GateCheckFailed` retried at the next backoff step.
    let mut gated = ifnotpresent.clone();
    gated.spec.platforms = Some(vec!["linux/amd64".into()]);
    let registries = Registries::new(Default::default());
    let result = decide(&gated, &reader, &store, &registries).await;
    let ready = result.status.conditions.iter().flatten();
    let ready = ready.clone().find(|c| c.type_ == "Ready").unwrap();
    assert_eq!(ready.reason, "RateLimited", "{}", ready.message);
    assert!(
        ready.message.starts_with("checking the gates of v1.0.0: "),
        "{}",
        ready.message
    );
    assert!(matches!(result.next, Next::RetryAt(_)), "{:?}", result.next);
    assert_eq!(registry.seen().len(), 2, "one request for the walk");
}
