//! No panic reachable from a registry or a token server, and a panic in one reconcile fails
//! that object alone (docs/security.md, "A panic fails one object"): a token server's endless
//! `expires_in` panicked the token cache and, re-raised in the reconcile, stopped every
//! tenant's reconciles. Through the reconciler's public entry points, over a mocked API server.

use crate::support::api_mock::{calls, mock, reconcile_settled, Expect};
use crate::support::fault_server::{FaultServer, Reply, Seen};
use image_reflector::api::ImageRepository;
use image_reflector::controller::image_repository::{error_policy, RepositoryContext};
use image_reflector::store::{
    DigestFact, DigestFacts, FirstSeen, ImageFacts, ImageFactsFile, MemoryStore, RepoKey, Revision,
    StoreError, TagList, TagStore,
};
use serde_json::{json, Value};
use std::sync::Arc;

fn object(namespace: &str, image: &str, status: Value) -> Arc<ImageRepository> {
    Arc::new(serde_json::from_value(object_json(namespace, image, status)).unwrap())
}

fn object_json(namespace: &str, image: &str, status: Value) -> Value {
    json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1",
            "kind": "ImageRepository",
            "metadata": {
                "name": "app", "namespace": namespace, "uid": format!("u-{namespace}"),
                "generation": 1, "resourceVersion": "7", "finalizers": ["finalizers.fluxcd.io"]
            },
            "spec": {"image": image, "interval": "5m"},
            "status": status,
    })
}

fn ready(body: &Value) -> (String, String, String) {
    let conditions = body["status"]["conditions"].as_array().unwrap();
    let c = conditions.iter().find(|c| c["type"] == "Ready").unwrap();
    let text = |k: &str| c[k].as_str().unwrap().to_string();
    (text("status"), text("reason"), text("message"))
}

/// A token server answering `expires_in: u64::MAX`: stored and used, no panic.
#[tokio::test]
async fn a_token_servers_endless_token_life_panics_nothing() {
    let registry = FaultServer::start_with(|addr| {
        let realm = format!("http://{addr}/token");
        move |seen: &Seen| match seen.path() {
            "/token" => Reply::json(
                200,
                json!({"token": "t", "expires_in": 18446744073709551615u64}),
            ),
            _ if seen.header("Authorization") == Some("Bearer t") => {
                Reply::json(200, json!({"name": "team/app", "tags": ["1.0.0"]}))
            }
            _ => Reply::status(401).header(
                "WWW-Authenticate",
                &format!(r#"Bearer realm="{realm}",service="r""#),
            ),
        }
    })
    .await;
    let image = format!("{}/team/app", registry.host());
    let json = object_json("team", &image, json!({"observedGeneration": -1}));
    let obj = object("team", &image, json!({"observedGeneration": -1}));
    let (client, server) = mock(vec![
        Expect::status_patch("imagerepositories", "team", "app", json),
        Expect::event("team"),
    ]);
    let store: Arc<dyn TagStore> = Arc::new(MemoryStore::new());
    let ctx = RepositoryContext::new(crate::support::api_mock::context(client, store, |_| {}));
    let (result, _) = reconcile_settled(obj, ctx).await;
    assert!(result.is_ok(), "{result:?}");
    let calls = calls(server).await;
    assert_eq!(ready(&calls[0].body).0, "True", "{}", calls[0].body);
    assert_eq!(calls[0].body["status"]["lastScanResult"]["tagCount"], 1);
}

/// A store that panics when one namespace's tags are read: a stand-in for any bug that a
/// tenant's object reaches.
struct PanicsFor(&'static str, MemoryStore);

impl PanicsFor {
    fn check(&self, key: &RepoKey) {
        if key.namespace() == self.0 {
            panic!("planted panic for {}/{}", key.namespace(), key.name());
        }
    }
}

impl TagStore for PanicsFor {
    fn set(&self, key: &RepoKey, tags: &TagList) -> Result<Revision, StoreError> {
        self.1.set(key, tags)
    }
    fn get(&self, key: &RepoKey) -> Result<(TagList, Revision), StoreError> {
        self.check(key);
        self.1.get(key)
    }
    fn delete(&self, key: &RepoKey) -> Result<(), StoreError> {
        self.1.delete(key)
    }
    fn keys(&self) -> Result<Vec<RepoKey>, StoreError> {
        self.1.keys()
    }
    fn digest_facts(&self, key: &RepoKey) -> Result<DigestFacts, StoreError> {
        self.1.digest_facts(key)
    }
    fn record_digest(&self, key: &RepoKey, tag: &str, fact: DigestFact) -> Result<(), StoreError> {
        self.1.record_digest(key, tag, fact)
    }
    fn all_image_facts(&self, key: &RepoKey) -> Result<ImageFactsFile, StoreError> {
        self.1.all_image_facts(key)
    }
    fn record_image_facts(&self, key: &RepoKey, facts: ImageFacts) -> Result<(), StoreError> {
        self.1.record_image_facts(key, facts)
    }
    fn first_seen(&self, key: &RepoKey) -> Result<FirstSeen, StoreError> {
        self.1.first_seen(key)
    }
    fn update_first_seen(
        &self,
        key: &RepoKey,
        change: &mut dyn FnMut(&mut FirstSeen) -> bool,
    ) -> Result<(), StoreError> {
        self.1.update_first_seen(key, change)
    }
}

/// A reconcile panics on purpose: its object gets Ready=False `Failed` naming the panic, its
/// last scan result kept, a Warning, and a retry with backoff; another namespace's object
/// reconciled by the same context right after is scanned as usual.
#[tokio::test]
async fn a_panicking_reconcile_fails_its_object_alone() {
    let registry = FaultServer::start(|_| {
        Reply::json(200, json!({"name": "team/app", "tags": ["1.0.0", "2.0.0"]}))
    })
    .await;
    let image = format!("{}/team/app", registry.host());
    // Scanned before, so the reconcile reads the store to see whether tags are kept.
    let scanned = json!({
        "observedGeneration": 1,
        "canonicalImageName": image,
        "observedExclusionList": ["^.*\\.sig$"],
        "lastScanResult": {"revision": "sha256:x", "tagCount": 2,
                           "scanTime": "2026-11-27T00:00:00Z"},
        "conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded",
                        "message": "successful scan: found 2 tags with checksum sha256:x",
                        "lastTransitionTime": "2026-11-27T00:00:00Z", "observedGeneration": 1}],
    });
    let fresh = json!({"observedGeneration": -1});
    let (client, server) = mock(vec![
        Expect::status_patch(
            "imagerepositories",
            "evil",
            "app",
            object_json("evil", &image, scanned.clone()),
        ),
        Expect::event("evil"),
        Expect::status_patch(
            "imagerepositories",
            "team",
            "app",
            object_json("team", &image, fresh.clone()),
        ),
        Expect::event("team"),
    ]);
    let store: Arc<dyn TagStore> = Arc::new(PanicsFor("evil", MemoryStore::new()));
    let ctx = RepositoryContext::new(crate::support::api_mock::context(client, store, |_| {}));

    let evil = object("evil", &image, scanned.clone());
    let (result, _) = reconcile_settled(evil.clone(), ctx.clone()).await;
    let err = result.expect_err("the panicking object fails");
    let delay = format!("{:?}", error_policy(evil, &err, ctx.clone()));
    assert!(
        delay.contains("750ms"),
        "retried with the object's backoff: {delay}"
    );

    let team = object("team", &image, fresh);
    let (result, _) = reconcile_settled(team, ctx.clone()).await;
    assert!(result.is_ok(), "the other namespace goes on: {result:?}");

    let calls = calls(server).await;
    let (status, reason, message) = ready(&calls[0].body);
    assert_eq!((status.as_str(), reason.as_str()), ("False", "Failed"));
    assert!(
        message.contains("the reconcile panicked (planted panic for evil/app)")
            && message.contains("no other object is affected"),
        "{message}"
    );
    assert_eq!(
        calls[0].body["status"]["lastScanResult"]["revision"], "sha256:x",
        "the last scan is kept"
    );
    assert_eq!(calls[1].body["type"], "Warning");
    assert_eq!(ready(&calls[2].body).0, "True", "{}", calls[2].body);
}
