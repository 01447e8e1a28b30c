//! The ImagePolicy reconciler through its public entry point, against a mocked API server, a
//! repositories cache fed by hand, the tag store and an in-test registry: the exact status
//! patches, events, notifications and requeues of each row of flux-compat.md §4.9, migration,
//! warm start and the thinning of events.

use crate::support::api_mock::{calls, context, mock, reconcile_settled, Call, Expect};
use crate::support::fault_server::{FaultServer, Reply};
use image_reflector::api::{DowngradePolicy, ImagePolicy, ImageRepository};
use image_reflector::controller::image_policy::PolicyContext;
use image_reflector::controller::object::cache::ObjectCache;
use image_reflector::controller::Settings;
use image_reflector::store::{MemoryStore, RepoKey, TagList, TagStore};
use kube::runtime::controller::Action;
use serde_json::{json, Value};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const NS: &str = "team";

fn repository(namespace: &str, image: &str, extra: Value) -> ImageRepository {
    let mut spec = json!({"image": image, "interval": "5m"});
    for (k, v) in extra.as_object().into_iter().flatten() {
        spec[k] = v.clone();
    }
    serde_json::from_value(json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
        "metadata": {"name": "app", "namespace": namespace, "uid": "r-1", "generation": 1},
        "spec": spec,
    }))
    .unwrap()
}

/// A finalized ImagePolicy `p` in `team` with `spec` and `status`, as the API server serves it
/// under our CRDs (with `spec.downgrade` defaulted).
fn policy(mut spec: Value, status: Value) -> Value {
    if spec.get("downgrade").is_none() {
        spec["downgrade"] = json!("Allow");
    }
    pruned(spec, status)
}

/// The same, as a watch decoding it under Flux's CRDs serves it: nothing defaulted.
fn pruned(spec: Value, status: Value) -> Value {
    json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy",
        "metadata": {"name": "p", "namespace": NS, "uid": "p-1", "generation": 1,
                     "resourceVersion": "3", "finalizers": ["finalizers.fluxcd.io"]},
        "spec": spec,
        "status": status,
    })
}

fn semver(range: &str) -> Value {
    json!({"imageRepositoryRef": {"name": "app"}, "policy": {"semver": {"range": range}}})
}

fn store_with(namespace: &str, tags: &[&str]) -> Arc<dyn TagStore> {
    let store = MemoryStore::new();
    if !tags.is_empty() {
        store
            .set(
                &RepoKey::new(namespace, "app").unwrap(),
                &TagList::new(tags).unwrap(),
            )
            .unwrap();
    }
    Arc::new(store)
}

struct Run {
    result: Result<Action, image_reflector::controller::Error>,
    calls: Vec<Call>,
}

async fn run_with(
    obj: &Value,
    repos: &[ImageRepository],
    script: Vec<Expect>,
    store: Arc<dyn TagStore>,
    settings: impl FnOnce(&mut Settings),
) -> Run {
    let (client, server) = mock(script);
    let reader = Arc::new(ObjectCache::default());
    for repo in repos {
        reader.insert(repo);
    }
    let ctx = PolicyContext::new(
        context(client, store, settings),
        reader,
        Arc::new(AtomicBool::new(true)),
    );
    let policy: ImagePolicy = serde_json::from_value(obj.clone()).unwrap();
    let (result, _) = reconcile_settled(Arc::new(policy), ctx).await;
    Run {
        result,
        calls: calls(server).await,
    }
}

async fn run(
    obj: &Value,
    repos: &[ImageRepository],
    script: Vec<Expect>,
    store: Arc<dyn TagStore>,
) -> Run {
    run_with(obj, repos, script, store, |_| {}).await
}

fn patch(obj: &Value) -> Expect {
    Expect::status_patch("imagepolicies", NS, "p", obj.clone())
}

/// The fresh read that confirms the spec before the first write of it (frame/confirm.rs).
fn get(obj: &Value) -> Expect {
    Expect::get("imagepolicies", NS, "p", obj.clone())
}

fn ready(call: &Call) -> (String, String, String) {
    let c = call.body["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .expect("Ready")
        .clone();
    (
        c["status"].as_str().unwrap().into(),
        c["reason"].as_str().unwrap().into(),
        c["message"].as_str().unwrap().into(),
    )
}

const IMAGE: &str = "registry.example.com/team/app";

fn scanned_repo() -> ImageRepository {
    repository(NS, IMAGE, json!({}))
}

#[tokio::test]
async fn a_new_election_writes_latest_ref_and_one_normal_event() {
    let obj = policy(semver("1.x"), json!({"observedGeneration": -1}));
    let run = run(
        &obj,
        &[scanned_repo()],
        vec![get(&obj), patch(&obj), Expect::event(NS)],
        store_with(NS, &["1.0.0", "1.1.0", "2.0.0"]),
    )
    .await;
    assert_eq!(
        run.result.unwrap(),
        Action::await_change(),
        "no periodic requeue without Always"
    );
    let status = &run.calls[1].body["status"];
    assert_eq!(status["latestRef"], json!({"name": IMAGE, "tag": "1.1.0"}));
    assert!(status.get("observedPreviousRef").is_none());
    assert_eq!(status["observedGeneration"], 1);
    let message = format!("Latest image tag for {IMAGE} resolved to 1.1.0");
    assert_eq!(
        ready(&run.calls[1]),
        ("True".into(), "Succeeded".into(), message.clone())
    );
    assert_eq!(run.calls[2].body["type"], "Normal");
    assert_eq!(run.calls[2].body["message"], message);
    assert_eq!(
        run.calls[2].body["metadata"]["annotations"]["image.toolkit.fluxcd.io/latestTag"],
        "1.1.0"
    );
}

/// Right after our CRDs replaced Flux's, a watch opened before goes on serving objects decoded
/// under Flux's schema, pruned of what it lacks (here, as a stand-in for a gate, the object's
/// range as it was before); the API server holds the whole object. The first write of each
/// spec is confirmed by a GET: when the API server holds another spec nothing is written, the
/// fresh object goes to the policies' cache and is reconciled at once, and its own first
/// write is confirmed too. Once confirmed, a spec costs no read.
#[tokio::test]
async fn an_election_from_an_object_served_under_another_schema_is_decided_from_a_fresh_read() {
    let watched = pruned(semver(">=1.0.0"), json!({"observedGeneration": -1}));
    let fresh = policy(semver("<2.0.0"), json!({"observedGeneration": -1}));
    let (client, server) = mock(vec![
        get(&fresh),
        get(&fresh),
        patch(&fresh),
        Expect::event(NS),
        patch(&fresh),
        Expect::event(NS),
    ]);
    let reader = Arc::new(ObjectCache::default());
    reader.insert(&scanned_repo());
    let shared = context(client, store_with(NS, &["1.0.0", "1.1.0", "2.0.0"]), |_| {});
    let ctx = PolicyContext::new(shared, reader, Arc::new(AtomicBool::new(true)));
    let watched: ImagePolicy = serde_json::from_value(watched).unwrap();
    let (result, _) = reconcile_settled(Arc::new(watched), ctx.clone()).await;
    assert_eq!(
        result.unwrap(),
        Action::requeue(Duration::ZERO),
        "read again at once"
    );
    let cached = ctx.policies.get(NS, "p").expect("the fresh read is cached");
    assert_eq!(cached.spec.downgrade, Some(DowngradePolicy::Allow));
    let (result, _) = reconcile_settled(Arc::new(cached.clone()), ctx.clone()).await;
    assert!(result.is_ok(), "{result:?}");
    // Confirmed: the same spec is written again without a read (the mock's order says so).
    let (result, _) = reconcile_settled(Arc::new(cached), ctx.clone()).await;
    assert!(result.is_ok(), "{result:?}");
    let calls = calls(server).await;
    assert_eq!(
        calls.len(),
        6,
        "nothing written from the watched object: {calls:?}"
    );
    assert_eq!(
        calls[2].body["status"]["latestRef"],
        json!({"name": IMAGE, "tag": "1.1.0"}),
        "decided from the fresh spec, not the watched one's 2.0.0"
    );
}

fn elected_status(tag: &str, digest: Option<&str>, previous: Option<Value>) -> Value {
    let mut latest = json!({"name": IMAGE, "tag": tag});
    if let Some(d) = digest {
        latest["digest"] = json!(d);
    }
    let mut status = json!({
        "observedGeneration": 1,
        "latestRef": latest,
        "conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded",
                        "message": format!("Latest image tag for {IMAGE} resolved to {tag}"),
                        "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    });
    if let Some(p) = previous {
        status["observedPreviousRef"] = p;
    }
    status
}

#[tokio::test]
async fn a_hundred_reconciles_that_change_nothing_make_no_call_and_no_event() {
    let obj = policy(semver("1.x"), elected_status("1.1.0", None, None));
    let store = store_with(NS, &["1.0.0", "1.1.0"]);
    for i in 0..100 {
        let run = run(&obj, &[scanned_repo()], vec![], store.clone()).await;
        assert_eq!(
            run.result.expect("no API call"),
            Action::await_change(),
            "reconcile {i}"
        );
    }
}

#[tokio::test]
async fn deprecated_fields_are_migrated_first_in_their_own_patch() {
    for previous in [Some(format!("{IMAGE}:0.9.0")), None] {
        let mut status = json!({"observedGeneration": 1, "latestImage": format!("{IMAGE}:1.0.0")});
        if let Some(p) = &previous {
            status["observedPreviousImage"] = json!(p);
        }
        let obj = policy(semver("1.x"), status);
        let run = run(
            &obj,
            &[scanned_repo()],
            vec![patch(&obj), get(&obj), patch(&obj), Expect::event(NS)],
            store_with(NS, &["1.0.0", "1.1.0"]),
        )
        .await;
        assert!(run.result.is_ok());
        let migration = &run.calls[0].body["status"];
        assert_eq!(
            migration["latestRef"],
            json!({"name": IMAGE, "tag": "1.0.0"})
        );
        assert!(
            migration.get("latestImage").is_none(),
            "deleted: the guarded JSON patch writes the migrated status whole"
        );
        let ops = run.calls[0].body["jsonPatch"].as_array().unwrap();
        assert_eq!(
            ops[0],
            json!({"op": "test", "path": "/metadata/generation", "value": 1}),
            "written only onto the generation it was read from"
        );
        assert!(
            migration.get("conditions").is_none(),
            "nothing but the migration"
        );
        let expected_previous = previous
            .as_ref()
            .map(|_| json!({"name": IMAGE, "tag": "0.9.0"}))
            .unwrap_or(Value::Null);
        assert_eq!(migration["observedPreviousRef"], expected_previous);
        let status = &run.calls[2].body["status"];
        assert_eq!(status["latestRef"]["tag"], "1.1.0");
        assert_eq!(
            status["observedPreviousRef"],
            json!({"name": IMAGE, "tag": "1.0.0"}),
            "the migrated ref is the previous one"
        );
        let expected =
            format!("Latest image tag for {IMAGE} resolved to 1.1.0 (previously {IMAGE}:1.0.0)");
        assert_eq!(run.calls[3].body["message"], expected);
    }
}

#[tokio::test]
async fn warm_start_keeps_the_last_election_without_a_call() {
    let obj = policy(semver("1.x"), elected_status("1.1.0", None, None));
    let run = run(&obj, &[scanned_repo()], vec![], store_with(NS, &[])).await;
    assert_eq!(
        run.result.unwrap(),
        Action::requeue(Duration::from_secs(30))
    );
}

#[tokio::test]
async fn no_tags_is_dependency_not_ready_retried_after_requeue_dependency() {
    let obj = policy(semver("1.x"), json!({"observedGeneration": -1}));
    // The repository has scanned, and found no tags.
    let mut repo = scanned_repo();
    repo.status = Some(
        serde_json::from_value(
            json!({"lastScanResult": {"tagCount": 0, "revision": "sha256:e3b0"}}),
        )
        .unwrap(),
    );
    let run = run(
        &obj,
        &[repo],
        vec![get(&obj), patch(&obj), Expect::event(NS)],
        store_with(NS, &[]),
    )
    .await;
    assert_eq!(
        run.result.unwrap(),
        Action::requeue(Duration::from_secs(30)),
        "no error: a fixed requeue"
    );
    let expected = (
        "False".into(),
        "DependencyNotReady".into(),
        "retrying in 30s error: no tags in database".into(),
    );
    assert_eq!(ready(&run.calls[1]), expected);
    assert_eq!(
        run.calls[1].body["status"]["conditions"][0]["reason"],
        "ProgressingWithRetry"
    );
    assert_eq!(run.calls[2].body["type"], "Warning");
}

#[tokio::test]
async fn an_invalid_range_or_regex_after_a_good_election_stalls_and_keeps_latest_ref() {
    let bad_range = semver("^^1");
    let mut bad_regex = semver("1.x");
    bad_regex["filterTags"] = json!({"pattern": "(", "extract": ""});
    for (spec, expected) in [
        (
            bad_range,
            "invalid policy: improper constraint: \"^^1\"\nspec.policy.semver.range is not a semver range",
        ),
        (
            bad_regex,
            "failed to filter tags: invalid regular expression pattern '(': ",
        ),
    ] {
        let mut obj = policy(spec, elected_status("1.1.0", None, None));
        obj["metadata"]["generation"] = json!(2);
        let run = run(
            &obj,
            &[scanned_repo()],
            vec![get(&obj), patch(&obj), Expect::event(NS)],
            store_with(NS, &["1.1.0"]),
        )
        .await;
        assert_eq!(run.result.unwrap(), Action::await_change(), "no retry loop");
        let (status, reason, message) = ready(&run.calls[1]);
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("False", "InvalidPolicy")
        );
        assert!(message.starts_with(expected), "{message}");
        assert_eq!(
            run.calls[1].body["status"]["latestRef"],
            json!({"name": IMAGE, "tag": "1.1.0"}),
            "kept"
        );
        assert_eq!(
            run.calls[1].body["status"]["conditions"][0]["type"],
            "Stalled"
        );
        assert_eq!(run.calls[1].body["status"]["observedGeneration"], 2);
    }
}

/// One row of §4.9 that ends with a status patch and a Warning.
async fn failing_row(
    obj: &Value,
    repos: &[ImageRepository],
    store: Arc<dyn TagStore>,
    settings: impl FnOnce(&mut Settings),
) -> (
    Result<Action, image_reflector::controller::Error>,
    (String, String, String),
) {
    let run = run_with(
        obj,
        repos,
        vec![get(obj), patch(obj), Expect::event(NS)],
        store,
        settings,
    )
    .await;
    assert_eq!(run.calls[2].body["type"], "Warning");
    (run.result, ready(&run.calls[1]))
}

#[tokio::test]
async fn the_error_rows_of_the_status_mapping() {
    let tags = || store_with(NS, &["1.0.0"]);
    let fresh = json!({"observedGeneration": -1});
    // Repository missing: DependencyNotReady, retried.
    let (result, (_, reason, message)) =
        failing_row(&policy(semver("1.x"), fresh.clone()), &[], tags(), |_| {}).await;
    assert!(result.is_err());
    assert_eq!(reason, "DependencyNotReady");
    assert_eq!(message, "failed to get the referred ImageRepository: referenced ImageRepository does not exist: ImageRepository.image.toolkit.fluxcd.io \"app\" not found");
    // Cross-namespace reference blocked by the flag.
    let mut spec = semver("1.x");
    spec["imageRepositoryRef"]["namespace"] = json!("repos");
    let (result, (_, reason, message)) = failing_row(
        &policy(spec.clone(), fresh.clone()),
        &[repository("repos", IMAGE, json!({}))],
        store_with("repos", &["1.0.0"]),
        |s| s.no_cross_namespace_refs = true,
    )
    .await;
    assert!(result.is_err());
    assert_eq!((reason.as_str(), message.as_str()), ("AccessDenied", "failed to get the referred ImageRepository: cannot access 'ImageRepository/repos/app', cross-namespace references have been blocked"));
    // No accessFrom on the repository.
    let (_, (_, reason, message)) = failing_row(
        &policy(spec, fresh.clone()),
        &[repository("repos", IMAGE, json!({}))],
        store_with("repos", &["1.0.0"]),
        |_| {},
    )
    .await;
    assert_eq!((reason.as_str(), message.as_str()), ("AccessDenied", "failed to get the referred ImageRepository: access denied: 'repos/app' can't be accessed due to missing ACL labels on 'accessFrom'"));
    // The repository's image does not parse: Stalled.
    let (result, (_, reason, _)) = failing_row(
        &policy(semver("1.x"), fresh.clone()),
        &[repository(NS, "https://x/y", json!({}))],
        tags(),
        |_| {},
    )
    .await;
    assert_eq!(
        (result.unwrap(), reason.as_str()),
        (Action::await_change(), "ImageURLInvalid")
    );
    // Object-level workload identity without the gate: Stalled.
    let gated = repository(
        NS,
        IMAGE,
        json!({"provider": "aws", "serviceAccountName": "sa"}),
    );
    let (result, (_, reason, message)) = failing_row(
        &policy(semver("1.x"), fresh.clone()),
        &[gated],
        tags(),
        |_| {},
    )
    .await;
    assert_eq!(
        (result.unwrap(), reason.as_str()),
        (Action::await_change(), "FeatureGateDisabled")
    );
    assert_eq!(message, "to use spec.serviceAccountName in the ImageRepository for provider authentication please enable the ObjectLevelWorkloadIdentity feature gate in the controller");
    // Always without an interval (CEL normally rejects it): Stalled.
    let mut always = semver("1.x");
    always["digestReflectionPolicy"] = json!("Always");
    let (result, (_, reason, message)) = failing_row(
        &policy(always, fresh.clone()),
        &[scanned_repo()],
        tags(),
        |_| {},
    )
    .await;
    assert_eq!(
        (result.unwrap(), reason.as_str()),
        (Action::await_change(), "IntervalNotConfigured")
    );
    assert_eq!(
        message,
        "spec.interval must be set when spec.digestReflectionPolicy is set to 'Always'"
    );
    // No policy at all: Stalled InvalidPolicy.
    let none = json!({"imageRepositoryRef": {"name": "app"}, "policy": {}});
    let (_, (_, reason, message)) = failing_row(
        &policy(none, fresh.clone()),
        &[scanned_repo()],
        tags(),
        |_| {},
    )
    .await;
    assert_eq!(
        (reason.as_str(), message.as_str()),
        (
            "InvalidPolicy",
            "invalid policy: given ImagePolicyChoice object is invalid\n\
             spec.policy sets none of semver, alphabetical or numerical; set one"
        )
    );
    // Nothing elected: Failure, retried.
    let (result, (_, reason, message)) = failing_row(
        &policy(semver("5.x"), fresh),
        &[scanned_repo()],
        tags(),
        |_| {},
    )
    .await;
    assert!(result.is_err());
    assert_eq!(
        (reason.as_str(), message.as_str()),
        (
            "Failure",
            "unable to determine latest version from provided list"
        )
    );
}

#[tokio::test]
async fn the_acl_admits_a_namespace_whose_labels_match() {
    let repo = repository(
        "repos",
        IMAGE,
        json!({"accessFrom": {"namespaceSelectors": [{"matchLabels": {"team": "b"}}, {"matchLabels": {"team": "a"}}]}}),
    );
    let mut spec = semver("1.x");
    spec["imageRepositoryRef"]["namespace"] = json!("repos");
    let obj = policy(spec, json!({"observedGeneration": -1}));
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": {"team": "a"}}});
    let script = vec![
        Expect::ok("GET", format!("/api/v1/namespaces/{NS}"), move |_| {
            namespace.clone()
        }),
        get(&obj),
        patch(&obj),
        Expect::event(NS),
    ];
    let run = run(&obj, &[repo], script, store_with("repos", &["1.0.0"])).await;
    assert!(run.result.is_ok());
    assert_eq!(ready(&run.calls[2]).0, "True");
}

/// A registry whose tags all point at the digest in `digest`, and answers 404 for `missing`.
async fn digest_registry(digest: Arc<Mutex<String>>) -> FaultServer {
    FaultServer::start(move |seen| {
        if seen.path().contains("/manifests/missing") {
            return Reply::json(404, json!({"errors": [{"code": "MANIFEST_UNKNOWN"}]}));
        }
        Reply::status(200)
            .header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
            .header("Docker-Content-Digest", &digest.lock().unwrap())
    })
    .await
}

const OLD: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const NEW: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

/// An `Always` policy on `image` with `interval`, Ready with 1.1.0 at digest OLD.
fn always_elected_at_old(image: &str, interval: &str) -> (Value, Value) {
    let mut spec = semver("1.x");
    spec["digestReflectionPolicy"] = json!("Always");
    spec["interval"] = json!(interval);
    let mut status = elected_status("1.1.0", Some(OLD), None);
    status["latestRef"]["name"] = json!(image);
    status["conditions"][0]["message"] = json!(format!(
        "Latest image tag for {image} resolved to 1.1.0 with digest {OLD}"
    ));
    (spec, status)
}

#[tokio::test]
async fn a_digest_only_change_sends_one_event_and_one_notification() {
    let digest = Arc::new(Mutex::new(NEW.to_string()));
    let reg = digest_registry(digest.clone()).await;
    let (sent_tx, sent_rx) = std::sync::mpsc::channel::<Value>();
    let sent_tx = Mutex::new(sent_tx);
    let receiver = FaultServer::start(move |seen| {
        let _ = sent_tx.lock().unwrap().send(json!(seen.target));
        Reply::status(200)
    })
    .await;
    let image = format!("{}/team/app", reg.host());
    let repo = repository(NS, &image, json!({}));
    let (spec, status) = always_elected_at_old(&image, "1m");
    let mut obj = policy(spec, status);
    obj["metadata"]["annotations"] = json!({"event.toolkit.fluxcd.io/cluster": "prod-eu"});
    let events_addr = format!("http://{}/", receiver.host());
    let store = store_with(NS, &["1.0.0", "1.1.0"]);
    let script = vec![get(&obj), patch(&obj), Expect::event(NS)];
    let addr = events_addr.clone();
    let run = run_with(
        &obj,
        std::slice::from_ref(&repo),
        script,
        store.clone(),
        move |s| s.events_addr = Some(addr),
    )
    .await;
    assert_eq!(
        run.result.unwrap(),
        Action::requeue(Duration::from_secs(60)),
        "Always requeues at its interval"
    );
    let status = &run.calls[1].body["status"];
    assert_eq!(
        status["latestRef"],
        json!({"name": image, "tag": "1.1.0", "digest": NEW})
    );
    assert_eq!(
        status["observedPreviousRef"],
        json!({"name": image, "tag": "1.1.0", "digest": OLD})
    );
    let message = format!("Latest image tag for {image} resolved to 1.1.0 with digest {NEW} (previously {image}:1.1.0@{OLD})");
    assert_eq!(run.calls[2].body["type"], "Normal");
    assert_eq!(run.calls[2].body["message"], message);

    // Exactly one notification, in Flux's event format.
    tokio::task::spawn_blocking(move || {
        sent_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("a notification")
    })
    .await
    .unwrap();
    let seen = receiver.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].header("Content-Type"), Some("application/json"));
    let body: Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(
        body["involvedObject"],
        json!({"kind": "ImagePolicy", "namespace": NS, "name": "p", "uid": "p-1", "apiVersion": "image.toolkit.fluxcd.io/v1", "resourceVersion": "3"})
    );
    assert_eq!(
        (body["severity"].as_str(), body["reason"].as_str()),
        (Some("info"), Some("Succeeded"))
    );
    assert_eq!(body["message"], message);
    assert_eq!(body["reportingController"], "image-reflector-controller");
    assert_eq!(
        body["metadata"],
        json!({"image.toolkit.fluxcd.io/revision": format!("1.1.0@{NEW}"),
               "image.toolkit.fluxcd.io/latestTag": "1.1.0", "image.toolkit.fluxcd.io/latestDigest": NEW,
               "image.toolkit.fluxcd.io/previousTag": "1.1.0", "image.toolkit.fluxcd.io/previousDigest": OLD,
               "event.toolkit.fluxcd.io/cluster": "prod-eu"})
    );
    // What an Alert gets of it, by notification-controller's rules: both digests, both tags,
    // and a revision of its own, so this digest change is not folded into an earlier event.
    let (alert, dedup) = crate::controller::notify::as_an_alert_sees_it(&body);
    assert_eq!(alert["latestDigest"], NEW);
    assert_eq!(alert["previousDigest"], OLD);
    assert_eq!(
        (alert["latestTag"].as_str(), alert["previousTag"].as_str()),
        ("1.1.0", "1.1.0")
    );
    assert_eq!(alert["event.toolkit.fluxcd.io/cluster"], "prod-eu");
    let tag_change = json!({"involvedObject": body["involvedObject"].clone(), "message": message,
                            "metadata": {"image.toolkit.fluxcd.io/revision": format!("1.1.0@{OLD}")}});
    assert_ne!(
        dedup,
        crate::controller::notify::as_an_alert_sees_it(&tag_change).1,
        "never de-duplicated into the earlier event"
    );

    // The same digest again: no write, no event, no notification.
    let mut settled = obj.clone();
    settled["status"] = run.calls[1].body["status"].clone();
    let run = run_with(&settled, &[repo], vec![], store, move |s| {
        s.events_addr = Some(events_addr)
    })
    .await;
    assert!(run.result.is_ok());
    assert_eq!(receiver.seen().len(), 1);
}

#[tokio::test]
async fn a_digest_that_cannot_be_fetched_fails_the_reconcile() {
    let reg = digest_registry(Arc::new(Mutex::new(NEW.to_string()))).await;
    let image = format!("{}/team/app", reg.host());
    let spec = json!({"imageRepositoryRef": {"name": "app"}, "policy": {"alphabetical": {}}, "digestReflectionPolicy": "IfNotPresent"});
    let obj = policy(spec, json!({"observedGeneration": -1}));
    let run = run_with(
        &obj,
        &[repository(NS, &image, json!({}))],
        vec![get(&obj), patch(&obj), Expect::event(NS)],
        store_with(NS, &["missing"]),
        |_| {},
    )
    .await;
    assert!(run.result.is_err());
    let (status, reason, message) = ready(&run.calls[1]);
    assert_eq!((status.as_str(), reason.as_str()), ("False", "Failed"));
    let prefix = format!("failed fetching digest of {image}:missing: failed fetching descriptor for \"{image}:missing\": HEAD ");
    assert!(message.starts_with(&prefix), "{message}");
    assert!(message.contains("404"), "{message}");
}

/// The repository's namespace reaches a URL (the Namespace read of an `accessFrom` check): a
/// name that is not a Kubernetes name stalls the policy, naming the field, before any call, and
/// the last election is kept.
#[tokio::test]
async fn repository_references_that_are_not_kubernetes_names_stall_before_any_call() {
    for (reference, named) in [
        (
            json!({"name": "app", "namespace": "?watch=true"}),
            "spec.imageRepositoryRef.namespace \"?watch=true\": a lowercase RFC 1123 label",
        ),
        (
            json!({"name": "app/../x"}),
            "spec.imageRepositoryRef.name \"app/../x\": a lowercase RFC 1123 subdomain",
        ),
    ] {
        let mut spec = semver("1.x");
        spec["imageRepositoryRef"] = reference;
        let obj = policy(spec, elected_status("1.1.0", None, None));
        let run = run(
            &obj,
            &[scanned_repo()],
            vec![get(&obj), patch(&obj), Expect::event(NS)],
            store_with(NS, &["1.1.0"]),
        )
        .await;
        assert_eq!(run.result.unwrap(), Action::await_change());
        let (status, reason, message) = ready(&run.calls[1]);
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("False", "InvalidReference")
        );
        assert!(
            message.starts_with(&format!("invalid {named}")),
            "{message}"
        );
        assert_eq!(run.calls[1].body["status"]["latestRef"]["tag"], "1.1.0");
    }
}

/// An ImagePolicy's `interval: 1ms` (digest re-resolution) is floored at 10 s, as scans are:
/// each period costs a manifest request to a shared host.
#[tokio::test]
async fn a_tiny_digest_interval_is_floored_at_ten_seconds() {
    let digest = Arc::new(Mutex::new(OLD.to_string()));
    let reg = digest_registry(digest).await;
    let image = format!("{}/team/app", reg.host());
    let repo = repository(NS, &image, json!({}));
    let (spec, status) = always_elected_at_old(&image, "1ms");
    let obj = policy(spec, status);
    let run = run(&obj, &[repo], vec![], store_with(NS, &["1.0.0", "1.1.0"])).await;
    assert_eq!(
        run.result.unwrap(),
        Action::requeue(Duration::from_secs(10))
    );
}

/// A policy that waited for its repository (Ready=False DependencyNotReady) and is then
/// Stalled when the repository appears (here: its image does not parse) says why it is
/// stalled in Ready too, not the stale wait.
#[tokio::test]
async fn a_stall_after_a_wait_replaces_the_stale_ready_reason() {
    let status = json!({
        "observedGeneration": -1,
        "conditions": [{"type": "Ready", "status": "False", "reason": "DependencyNotReady",
                        "message": "failed to get the referred ImageRepository: imagerepositories \"app\" not found",
                        "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    });
    let obj = policy(semver("1.x"), status);
    let repo = repository(NS, "Not An Image", json!({}));
    let run = run(
        &obj,
        &[repo],
        vec![get(&obj), patch(&obj), Expect::event(NS)],
        store_with(NS, &[]),
    )
    .await;
    assert_eq!(run.result.unwrap(), Action::await_change());
    let (status, reason, message) = ready(&run.calls[1]);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ImageURLInvalid")
    );
    assert_eq!(message, "could not parse reference: Not An Image");
}

/// A new policy whose repository has not finished its first scan waits for it, progressing:
/// Ready Unknown, no Warning event, no error, and nothing written again while it waits (it used
/// to go Ready=False "no tags in database" with a Warning on every cold start).
#[tokio::test]
async fn a_policy_waits_for_its_repositorys_first_scan_without_a_failure() {
    let obj = policy(semver("1.x"), json!({"observedGeneration": -1}));
    let run = run(
        &obj,
        &[scanned_repo()],
        vec![get(&obj), patch(&obj)],
        store_with(NS, &[]),
    )
    .await;
    assert_eq!(
        run.result.unwrap(),
        Action::requeue(Duration::from_secs(30))
    );
    let message = format!("waiting for the first scan of ImageRepository {NS}/app");
    assert_eq!(
        ready(&run.calls[1]),
        ("Unknown".into(), "Progressing".into(), message)
    );
    assert_eq!(run.calls.len(), 2, "a read and the write, no event");
    // Waiting again changes nothing: no write.
    let mut waiting = obj.clone();
    waiting["status"] = run.calls[1].body["status"].clone();
    let again = crate::controller::policy_reconcile::run(
        &waiting,
        &[scanned_repo()],
        vec![],
        store_with(NS, &[]),
    )
    .await;
    assert!(again.result.is_ok());
    assert!(again.calls.is_empty());
}

/// While its repository fails before any scan, the waiting policy names the repository's
/// reason and message (Flux users asked: IRC #449), not only that it waits.
#[tokio::test]
async fn a_waiting_policy_says_why_its_repository_has_not_scanned() {
    let obj = policy(semver("1.x"), json!({"observedGeneration": -1}));
    let mut failing = scanned_repo();
    failing.status = Some(
        serde_json::from_value(json!({"conditions": [{
            "type": "Ready", "status": "False", "reason": "AuthenticationFailed",
            "message": "failed to configure authentication options: secret 'creds' not found",
            "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1
        }]}))
        .unwrap(),
    );
    let run = run(
        &obj,
        &[failing],
        vec![get(&obj), patch(&obj)],
        store_with(NS, &[]),
    )
    .await;
    assert!(run.result.is_ok());
    let (status, reason, message) = ready(&run.calls[1]);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("Unknown", "Progressing")
    );
    assert_eq!(
        message,
        format!(
            "waiting for the first scan of ImageRepository {NS}/app, which is failing: \
             AuthenticationFailed: failed to configure authentication options: secret 'creds' not found"
        )
    );
}

/// The HEADs `reg` answered.
fn heads(reg: &FaultServer) -> usize {
    reg.seen().iter().filter(|s| s.method == "HEAD").count()
}

/// After a restart (the repository not yet scanned by this process), an `Always` policy whose
/// tag's digest the store says was fetched two minutes ago takes it without a request and
/// looks again when its interval is due; a fetch older than the interval, or a requested
/// reconcile, makes the request, and the store then keeps its time.
#[tokio::test]
async fn after_a_restart_an_always_policy_fetches_only_when_due() {
    use image_reflector::store::DigestFact;
    let digest = Arc::new(Mutex::new(NEW.to_string()));
    let reg = digest_registry(digest).await;
    let image = format!("{}/team/app", reg.host());
    let repo = repository(NS, &image, json!({}));
    let (spec, status) = always_elected_at_old(&image, "10m");
    let key = RepoKey::new(NS, "app").unwrap();
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    let store_checked = |seconds_ago: i64| {
        let store = store_with(NS, &["1.0.0", "1.1.0"]);
        let fact = DigestFact {
            digest: OLD.into(),
            checked_at: now - seconds_ago,
        };
        store.record_digest(&key, "1.1.0", fact).unwrap();
        store
    };

    let obj = policy(spec.clone(), status.clone());
    let fresh = run(
        &obj,
        std::slice::from_ref(&repo),
        vec![],
        store_checked(120),
    )
    .await;
    let action = fresh.result.unwrap();
    assert!(
        (470..=480).any(|s| action == Action::requeue(Duration::from_secs(s))),
        "requeued when the 10m interval is due, 8 minutes on: {action:?}"
    );
    assert_eq!(heads(&reg), 0, "a digest fetched 2 minutes ago is not due");
    assert!(fresh.calls.is_empty(), "nothing changed: {:?}", fresh.calls);

    let store = store_checked(660);
    let stale = run(
        &obj,
        std::slice::from_ref(&repo),
        vec![get(&obj), patch(&obj)],
        store.clone(),
    )
    .await;
    assert_eq!(heads(&reg), 1, "a fetch 11 minutes old is due");
    assert_eq!(
        stale.result.unwrap(),
        Action::requeue(Duration::from_secs(600))
    );
    assert!(stale.calls[1].body["status"]["latestRef"]["digest"] == NEW);
    let kept = store.digest_fact(&key, "1.1.0").unwrap().unwrap();
    assert_eq!(kept.digest, NEW);
    assert!(kept.checked_at >= now, "the fetch's time is kept");

    let mut asked = policy(spec, status);
    asked["metadata"]["annotations"] = json!({"reconcile.fluxcd.io/requestedAt": "now"});
    run(
        &asked,
        &[repo],
        vec![get(&asked), patch(&asked)],
        store_checked(120),
    )
    .await;
    assert_eq!(heads(&reg), 2, "a requested reconcile fetches");
}

/// A digest read that outlasts `HANDOFF_AFTER` goes on off the worker, as a scan does: the
/// first reconcile returns after 3 s with nothing written, the policy is woken when the
/// registry answers, and the next reconcile writes the election with the digest read.
#[tokio::test(start_paused = true)]
async fn a_slow_digest_read_goes_on_off_the_worker() {
    let reg = FaultServer::start(move |_| {
        Reply::status(200)
            .header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
            .header("Docker-Content-Digest", NEW)
            .delayed(Duration::from_secs(20))
    })
    .await;
    let image = format!("{}/team/app", reg.host());
    let repo = repository(NS, &image, json!({"timeout": "1m"}));
    let (spec, status) = always_elected_at_old(&image, "1h");
    let obj = policy(spec, status);
    let (client, server) = mock(vec![get(&obj), patch(&obj), Expect::event(NS)]);
    let reader = Arc::new(ObjectCache::default());
    reader.insert(&repo);
    let ctx = PolicyContext::new(
        context(client, store_with(NS, &["1.0.0", "1.1.0"]), |_| {}),
        reader,
        Arc::new(AtomicBool::new(true)),
    );
    let policy: ImagePolicy = serde_json::from_value(obj.clone()).unwrap();
    let started = tokio::time::Instant::now();
    let (result, runs) = reconcile_settled(Arc::new(policy), ctx).await;
    assert_eq!(runs, 2, "handed off once, then taken");
    assert_eq!(started.elapsed(), Duration::from_secs(20), "no second read");
    assert_eq!(result.unwrap(), Action::requeue(Duration::from_secs(3600)));
    let calls = calls(server).await;
    assert_eq!(calls[1].body["status"]["latestRef"]["digest"], NEW);
    assert_eq!(reg.seen().len(), 1);
}

/// What kube's controller is told, through the entry points it runs: only to await changes.
/// The next run, after a success or after an error, waits in our work queue, which releases
/// it when due; kube's scheduler, which keeps what it is given in tables that never shrink,
/// is given nothing (frame/queue.rs).
#[tokio::test]
async fn kube_is_told_to_await_changes_and_the_next_run_waits_in_the_work_queue() {
    use image_reflector::controller::frame::reconcile::{error_policy_queued, reconcile_queued};
    use std::time::Instant;
    let key = format!("ImagePolicy/{NS}/p");
    // A success that runs again in 30 s (a warm start: no call).
    let obj = policy(semver("1.x"), elected_status("1.1.0", None, None));
    let (client, _server) = mock(vec![]);
    let repositories = Arc::new(ObjectCache::default());
    repositories.insert(&scanned_repo());
    let shared = context(client, store_with(NS, &[]), |_| {});
    let queue = shared.policy_queue.clone();
    let ctx = PolicyContext::new(shared, repositories, Arc::new(AtomicBool::new(true)));
    let policy: Arc<ImagePolicy> = Arc::new(serde_json::from_value(obj).unwrap());
    let before = Instant::now();
    let action = reconcile_queued(policy.clone(), ctx.clone()).await.unwrap();
    assert_eq!(action, Action::await_change(), "kube schedules nothing");
    assert_eq!(queue.stats(Instant::now()).depth, 0, "not due yet");
    let due = before + Duration::from_secs(31);
    assert_eq!(
        queue.stats(due).depth,
        1,
        "{key} waits in the queue for 30 s"
    );
    // An error: the retry waits in the queue too (750 ms at first).
    queue.forget(&key);
    let err = image_reflector::controller::Error::Deadline(Duration::from_secs(1));
    let action = error_policy_queued(policy, &err, ctx);
    assert_eq!(action, Action::await_change(), "kube schedules no retry");
    let retried = Instant::now() + Duration::from_secs(5);
    assert_eq!(
        queue.stats(retried).depth,
        1,
        "the retry waits in the queue"
    );
}

/// A policy whose pattern admits one tag and whose digest is not followed can never move
/// (`^latest$`, IRC #932): Ready stays True and says so, and one Normal event says it.
#[tokio::test]
async fn a_policy_that_can_never_move_says_so_once() {
    let mut spec = json!({"imageRepositoryRef": {"name": "app"}, "policy": {"alphabetical": {}}});
    spec["filterTags"] = json!({"pattern": "^latest$"});
    let obj = policy(spec, json!({"observedGeneration": -1}));
    let run = run(
        &obj,
        &[scanned_repo()],
        vec![get(&obj), patch(&obj), Expect::event(NS), Expect::event(NS)],
        store_with(NS, &["latest", "1.0.0", "2.0.0"]),
    )
    .await;
    assert!(run.result.is_ok(), "{:?}", run.result);
    let (status, reason, message) = ready(&run.calls[1]);
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Succeeded"));
    let note = "the election can never change: spec.filterTags.pattern admits only the tag 'latest', and its digest is not followed; to follow what 'latest' points at, set digestReflectionPolicy: Always (with an interval), or use a pattern that admits versions";
    assert_eq!(
        message,
        format!("Latest image tag for {IMAGE} resolved to latest; {note}")
    );
    assert_eq!(run.calls[2].body["reason"], "ElectionFrozen");
    assert_eq!(run.calls[2].body["type"], "Normal");
    assert_eq!(run.calls[2].body["message"], note);
    assert_eq!(run.calls[3].body["reason"], "Succeeded");
    // Reconciled again, nothing changes: no write, no second event.
    let mut settled = obj.clone();
    settled["status"] = run.calls[1].body["status"].clone();
    let again = super::policy_reconcile::run(
        &settled,
        &[scanned_repo()],
        vec![],
        store_with(NS, &["latest"]),
    )
    .await;
    assert!(
        again.result.is_ok() && again.calls.is_empty(),
        "{:?}",
        again.calls
    );
}
