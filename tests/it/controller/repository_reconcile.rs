//! The ImageRepository reconciler through its public entry points (`reconcile`,
//! `error_policy`), against a mocked API server and an in-test registry: the exact status
//! patches, events and requeues of each scenario.

use crate::support::api_mock::{calls, mock, reconcile_settled, Call, Expect};
use crate::support::fault_server::{FaultServer, Reply};
use image_reflector::api::ImageRepository;
use image_reflector::controller::image_repository::{error_policy, reconcile, RepositoryContext};
use image_reflector::store::{MemoryStore, RepoKey, TagList, TagStore};
use kube::runtime::controller::Action;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const NS: &str = "team";
const STATUS_PATH: &str = "imagerepositories";

/// An ImageRepository named `app` in `team` that already carries the finalizer.
fn object(spec: Value) -> Value {
    json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1",
        "kind": "ImageRepository",
        "metadata": {
            "name": "app", "namespace": NS, "uid": "u-1", "generation": 1,
            "resourceVersion": "7", "finalizers": ["finalizers.fluxcd.io"]
        },
        "spec": spec,
        "status": {"observedGeneration": -1}
    })
}

fn context(client: kube::Client, store: Arc<dyn TagStore>) -> Arc<RepositoryContext> {
    RepositoryContext::new(crate::support::api_mock::context(client, store, |_| {}))
}

/// A registry listing `tags` for every repository.
async fn registry(tags: &[&str]) -> FaultServer {
    let tags: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
    FaultServer::start(move |_| Reply::json(200, json!({ "name": "demo/app", "tags": tags }))).await
}

/// Reconciles `obj` against `script`; returns the result and the calls.
async fn run(
    obj: &Value,
    script: Vec<Expect>,
    store: Arc<dyn TagStore>,
) -> (
    Result<Action, image_reflector::controller::Error>,
    Vec<Call>,
    Arc<RepositoryContext>,
) {
    let (client, server) = mock(script);
    let ctx = context(client, store);
    let repo: ImageRepository = serde_json::from_value(obj.clone()).unwrap();
    let (result, _) = reconcile_settled(Arc::new(repo), ctx.clone()).await;
    (result, calls(server).await, ctx)
}

fn patch(obj: &Value) -> Expect {
    Expect::status_patch(STATUS_PATH, NS, "app", obj.clone())
}

/// The Ready condition of a status patch body.
fn ready(call: &Call) -> (String, String, String) {
    let conditions = call.body["status"]["conditions"].as_array().unwrap();
    let c = conditions
        .iter()
        .find(|c| c["type"] == "Ready")
        .expect("Ready");
    (
        c["status"].as_str().unwrap().into(),
        c["reason"].as_str().unwrap().into(),
        c["message"].as_str().unwrap().into(),
    )
}

fn condition_types(call: &Call) -> Vec<String> {
    call.body["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap().to_string())
        .collect()
}

/// The delay of a requeue (kube's `Action` shows it only through `Debug`).
fn requeue_secs(action: &Action) -> f64 {
    let text = format!("{action:?}");
    let inner = text
        .split("Some(")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .unwrap_or_else(|| panic!("a requeue: {text}"));
    let (number, unit) = inner.split_at(inner.find(|c: char| c.is_alphabetic()).unwrap());
    let value: f64 = number.parse().unwrap();
    match unit {
        "s" => value,
        "ms" => value / 1e3,
        other => panic!("unit {other} in {text}"),
    }
}

fn memory() -> Arc<dyn TagStore> {
    Arc::new(MemoryStore::new())
}

#[tokio::test]
async fn first_scan_writes_the_scan_result_and_one_normal_event() {
    let reg = registry(&["1.0.0", "2.0.0", "1.0.0.sig", "latest"]).await;
    let obj = object(json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m"}));
    let store = memory();
    let (result, calls, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], store.clone()).await;
    assert_eq!(result.unwrap(), Action::requeue(Duration::from_secs(300)));
    let status = &calls[0].body["status"];
    assert!(
        calls[0]
            .query
            .contains("fieldManager=image-reflector-controller"),
        "{}",
        calls[0].query
    );
    let revision = status["lastScanResult"]["revision"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(status["lastScanResult"]["tagCount"], 3);
    assert_eq!(
        status["lastScanResult"]["latestTags"],
        json!(["latest", "2.0.0", "1.0.0"])
    );
    assert_eq!(
        status["canonicalImageName"],
        format!("{}/demo/app", reg.host())
    );
    assert_eq!(status["observedExclusionList"], json!(["^.*\\.sig$"]));
    assert_eq!(status["observedGeneration"], 1);
    let message = format!("successful scan: found 3 tags with checksum {revision}");
    assert_eq!(
        ready(&calls[0]),
        ("True".into(), "Succeeded".into(), message.clone())
    );
    assert_eq!(condition_types(&calls[0]), ["Ready"]);
    assert_eq!(calls[1].body["type"], "Normal");
    assert_eq!(calls[1].body["reason"], "Succeeded");
    assert_eq!(calls[1].body["message"], message);
    // A core/v1 Event, as Flux's controllers write them (Flux's RBAC grants no other).
    assert_eq!(
        calls[1].body["source"]["component"],
        "image-reflector-controller"
    );
    assert_eq!(
        calls[1].body["reportingComponent"],
        "image-reflector-controller"
    );
    assert_eq!(calls[1].body["involvedObject"]["name"], "app");
    assert_eq!(calls[1].body["count"], 1);
    let (stored, stored_revision) = store.get(&RepoKey::new(NS, "app").unwrap()).unwrap();
    assert_eq!(
        stored.iter().collect::<Vec<_>>(),
        ["latest", "2.0.0", "1.0.0"]
    );
    assert_eq!(stored_revision.as_str(), revision);
}

/// The object as the first scan left it, `ago` seconds after its scan.
async fn scanned(spec: Value, tags: &[&str], ago: i64) -> (Value, Arc<dyn TagStore>) {
    let store = memory();
    let list = TagList::new(tags).unwrap();
    let revision = store.set(&RepoKey::new(NS, "app").unwrap(), &list).unwrap();
    let image = spec["image"].as_str().unwrap().to_string();
    let scan_time = k8s_openapi::jiff::Timestamp::now()
        .checked_sub(k8s_openapi::jiff::SignedDuration::from_secs(ago))
        .unwrap();
    let scan_time = format!("{}", scan_time.strftime("%Y-%m-%dT%H:%M:%SZ"));
    let message = format!(
        "successful scan: found {} tags with checksum {}",
        tags.len(),
        revision.as_str()
    );
    let mut obj = object(spec);
    obj["status"] = json!({
        "observedGeneration": 1,
        "canonicalImageName": image,
        "observedExclusionList": ["^.*\\.sig$"],
        "lastScanResult": {"revision": revision.as_str(), "tagCount": tags.len(), "scanTime": scan_time},
        "conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded", "message": message,
                        "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    });
    (obj, store)
}

#[tokio::test]
async fn a_reconcile_that_changes_nothing_writes_nothing() {
    let reg = registry(&["1.0.0"]).await;
    let spec = json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m"});
    let (obj, store) = scanned(spec, &["1.0.0"], 60).await;
    let (result, calls, _) = run(&obj, vec![], store).await;
    let secs = requeue_secs(&result.expect("no API call was made"));
    assert!(
        (235.0..=240.0).contains(&secs),
        "the remaining interval: {secs}"
    );
    assert!(calls.is_empty());
    assert!(reg.seen().is_empty(), "no registry call: {:?}", reg.seen());
}

#[tokio::test]
async fn an_elapsed_interval_rescans_without_an_event_when_tags_are_unchanged() {
    let reg = registry(&["1.0.0"]).await;
    let spec = json!({"image": format!("{}/demo/app", reg.host()), "interval": "1m"});
    let (obj, store) = scanned(spec, &["1.0.0"], 120).await;
    let (result, calls, _) = run(&obj, vec![patch(&obj)], store).await;
    assert_eq!(result.unwrap(), Action::requeue(Duration::from_secs(60)));
    let status = &calls[0].body["status"];
    assert_ne!(
        status["lastScanResult"]["scanTime"],
        obj["status"]["lastScanResult"]["scanTime"]
    );
    assert_eq!(
        status["conditions"][0]["lastTransitionTime"], "2026-01-01T00:00:00Z",
        "an unchanged Ready keeps its transition time"
    );
}

#[tokio::test]
async fn a_reconcile_request_rescans_and_records_the_token() {
    let reg = registry(&["1.0.0", "1.1.0"]).await;
    let spec = json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m"});
    let (mut obj, store) = scanned(spec, &["1.0.0"], 10).await;
    obj["metadata"]["annotations"] = json!({"reconcile.fluxcd.io/requestedAt": "now-1"});
    let (result, calls, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], store).await;
    assert_eq!(result.unwrap(), Action::requeue(Duration::from_secs(300)));
    assert_eq!(calls[0].body["status"]["lastHandledReconcileAt"], "now-1");
    assert_eq!(calls[0].body["status"]["lastScanResult"]["tagCount"], 2);
    assert_eq!(
        calls[1].body["type"], "Normal",
        "the message changed: one event"
    );
}

#[tokio::test]
async fn an_image_or_exclusion_change_rescans() {
    let reg = registry(&["1.0.0", "1.0.0-alpha"]).await;
    let old = json!({"image": "ghcr.io/old/name", "interval": "5m"});
    let (mut obj, store) = scanned(old, &["1.0.0"], 10).await;
    obj["metadata"]["generation"] = json!(2);
    obj["spec"]["image"] = json!(format!("{}/demo/app", reg.host()));
    obj["spec"]["exclusionList"] = json!(["-alpha$"]);
    let (result, calls, _) = run(&obj, vec![patch(&obj)], store).await;
    assert_eq!(result.unwrap(), Action::requeue(Duration::from_secs(300)));
    let status = &calls[0].body["status"];
    assert_eq!(
        status["canonicalImageName"],
        format!("{}/demo/app", reg.host())
    );
    assert_eq!(status["observedExclusionList"], json!(["-alpha$"]));
    assert_eq!(status["lastScanResult"]["tagCount"], 1);
    assert_eq!(status["observedGeneration"], 2);
    assert_eq!(
        reg.seen()
            .iter()
            .filter(|s| s.path().ends_with("/tags/list"))
            .count(),
        1
    );
}

#[tokio::test]
async fn a_suspended_repository_is_not_scanned_and_keeps_its_status() {
    let reg = registry(&["1.0.0"]).await;
    let spec =
        json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m", "suspend": true});
    let obj = object(spec);
    let (result, calls, _) = run(&obj, vec![], memory()).await;
    assert_eq!(result.unwrap(), Action::await_change());
    assert!(calls.is_empty() && reg.seen().is_empty());
    // Suspend returns before anything else, as Flux does: a reconcile request is not even
    // recorded (no write at all).
    let mut asked = obj.clone();
    asked["metadata"]["annotations"] = json!({"reconcile.fluxcd.io/requestedAt": "t"});
    let (result, calls, _) = run(&asked, vec![], memory()).await;
    assert_eq!(result.unwrap(), Action::await_change());
    assert!(calls.is_empty() && reg.seen().is_empty());
}

#[tokio::test]
async fn invalid_images_stall_without_a_registry_call() {
    let cases = [
        (
            "https://example.com/app",
            "image 'https://example.com/app' should not include URL scheme; remove 'https://'",
        ),
        (
            "example.com/app:1.0",
            "image 'example.com/app:1.0' should not include a tag; remove ':1.0'",
        ),
        ("Not An Image", "could not parse reference: Not An Image"),
        // Beyond Flux: `..` would request /tags/tags/list, outside /v2/, with the credentials.
        (
            "example.com/a/../../../tags",
            "could not parse reference: example.com/a/../../../tags (the path component '..' \
             is not allowed: each component is lower case letters and digits, joined by single \
             '.' or '_', '__', or dashes)",
        ),
        // A password in spec.image is never echoed into status or the Event.
        (
            "user:s3cret@example.com/app",
            "could not parse reference: ****@example.com/app",
        ),
    ];
    for (image, message) in cases {
        let obj = object(json!({"image": image, "interval": "5m"}));
        let (result, calls, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], memory()).await;
        assert_eq!(result.unwrap(), Action::await_change(), "{image}");
        let expected = ("False".into(), "ImageURLInvalid".into(), message.into());
        assert_eq!(ready(&calls[0]), expected, "{image}");
        assert_eq!(condition_types(&calls[0]), ["Stalled", "Ready"], "{image}");
        assert_eq!(calls[0].body["status"]["observedGeneration"], 1);
        assert_eq!(
            (
                calls[1].body["type"].as_str(),
                calls[1].body["reason"].as_str()
            ),
            (Some("Warning"), Some("ImageURLInvalid"))
        );
        assert!(!calls[1].body.to_string().contains("s3cret"), "{image}");
    }
}

#[tokio::test]
async fn an_invalid_exclusion_stalls_before_any_registry_call() {
    let reg = registry(&["1.0.0"]).await;
    let obj = object(
        json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m", "exclusionList": ["("]}),
    );
    let (result, calls, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], memory()).await;
    assert_eq!(result.unwrap(), Action::await_change());
    let (status, reason, message) = ready(&calls[0]);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "InvalidExclusionList")
    );
    assert!(
        message.starts_with("failed to compile regex (: error parsing regexp: "),
        "{message}"
    );
    assert!(reg.seen().is_empty());

    // A pattern only Go refuses (the regex crate would take it) stalls the same way.
    let obj = object(
        json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m",
        "exclusionList": ["^.*\\.sig$", "-rc\\d**$"]}),
    );
    let (_, calls, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], memory()).await;
    let (_, reason, message) = ready(&calls[0]);
    assert_eq!(reason, "InvalidExclusionList");
    assert_eq!(
        message,
        "failed to compile regex -rc\\d**$: error parsing regexp: \
         invalid nested repetition operator: `**`"
    );
    assert!(reg.seen().is_empty());
}

fn secret_path(name: &str) -> String {
    format!("/api/v1/namespaces/{NS}/secrets/{name}")
}

#[tokio::test]
async fn a_missing_secret_fails_authentication_and_retries() {
    let reg = registry(&["1.0.0"]).await;
    let obj = object(
        json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m", "secretRef": {"name": "creds"}}),
    );
    let script = vec![
        Expect::not_found("GET", secret_path("creds"), "secrets", "creds"),
        patch(&obj),
        Expect::event(NS),
    ];
    let (result, calls, ctx) = run(&obj, script, memory()).await;
    let err = result.unwrap_err();
    let expected = (
        "False".into(),
        "AuthenticationFailed".into(),
        "failed to configure authentication options: secrets \"creds\" not found".into(),
    );
    assert_eq!(ready(&calls[1]), expected);
    assert_eq!(condition_types(&calls[1]), ["Reconciling", "Ready"]);
    assert_eq!(
        calls[1].body["status"]["conditions"][0]["reason"],
        "ProgressingWithRetry"
    );
    assert_eq!(calls[1].body["status"]["observedGeneration"], -1);
    assert_eq!(calls[2].body["type"], "Warning");
    assert!(reg.seen().is_empty());
    // Backoff: 750ms, then doubling.
    let repo: Arc<ImageRepository> = Arc::new(serde_json::from_value(obj).unwrap());
    let first = error_policy(repo.clone(), &err, ctx.clone());
    let second = error_policy(repo, &err, ctx);
    assert_eq!(first, Action::requeue(Duration::from_millis(750)));
    assert_eq!(second, Action::requeue(Duration::from_millis(1500)));
}

/// A registry that wants Basic credentials `user:right`.
async fn basic_registry() -> FaultServer {
    FaultServer::start(|seen| match seen.header("Authorization") {
        Some("Basic dXNlcjpyaWdodA==") => Reply::json(200, json!({"tags": ["1.0.0"]})),
        _ => Reply::json(
            401,
            json!({"errors": [{"code": "UNAUTHORIZED", "message": "authentication required"}]}),
        )
        .header("WWW-Authenticate", "Basic realm=\"test\""),
    })
    .await
}

fn docker_secret(host: &str, password: &str) -> Value {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let config = json!({"auths": {host: {"auth": b64(&format!("user:{password}"))}}}).to_string();
    json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "creds", "namespace": NS},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": b64(&config)}
    })
}

#[tokio::test]
async fn credentials_from_the_secret_are_used_and_a_wrong_password_is_named() {
    let reg = basic_registry().await;
    let spec = json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m", "secretRef": {"name": "creds"}});
    let obj = object(spec);
    let right = docker_secret(&reg.host(), "right");
    let script = vec![
        Expect::ok("GET", secret_path("creds"), move |_| right.clone()),
        patch(&obj),
        Expect::event(NS),
    ];
    let (result, calls, _) = run(&obj, script, memory()).await;
    assert!(result.is_ok());
    assert_eq!(ready(&calls[1]).0, "True");

    let wrong = docker_secret(&reg.host(), "wrong");
    let script = vec![
        Expect::ok("GET", secret_path("creds"), move |_| wrong.clone()),
        patch(&obj),
        Expect::event(NS),
    ];
    let (result, calls, _) = run(&obj, script, memory()).await;
    assert!(result.is_err());
    let (status, reason, message) = ready(&calls[1]);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ReadOperationFailed")
    );
    assert!(message.starts_with("scan failed: GET "), "{message}");
    assert!(message.contains("401 Unauthorized"), "{message}");
    assert!(message.contains("rejected the credentials"), "{message}");
    assert!(
        !message.contains("wrong") && !message.contains("d3Jvbmc"),
        "no secret in {message}"
    );
}

#[tokio::test]
async fn a_missing_repository_is_a_read_failure_with_the_registry_status() {
    let reg = FaultServer::start(|_| {
        Reply::json(404, json!({"errors": [{"code": "NAME_UNKNOWN", "message": "repository name not known to registry"}]}))
    })
    .await;
    let obj = object(json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m"}));
    let (result, calls, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], memory()).await;
    assert!(matches!(
        result,
        Err(image_reflector::controller::Error::Finalizer(_))
    ));
    let (_, reason, message) = ready(&calls[0]);
    assert_eq!(reason, "ReadOperationFailed");
    assert!(
        message.contains("404 Not Found") && message.contains("NAME_UNKNOWN"),
        "{message}"
    );
}

#[tokio::test]
async fn a_rate_limited_registry_sets_rate_limited_and_requeues_at_retry_after() {
    let reg = FaultServer::start(|_| Reply::status(429).header("Retry-After", "120")).await;
    let obj = object(json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m"}));
    let (result, calls, ctx) = run(&obj, vec![patch(&obj), Expect::event(NS)], memory()).await;
    let err = result.unwrap_err();
    let (status, reason, message) = ready(&calls[0]);
    assert_eq!((status.as_str(), reason.as_str()), ("False", "RateLimited"));
    assert!(message.contains("rate limiting"), "{message}");
    let repo = Arc::new(serde_json::from_value(obj).unwrap());
    let secs = requeue_secs(&error_policy(repo, &err, ctx));
    assert!(
        (115.0..=120.0).contains(&secs),
        "requeued at Retry-After, not sooner: {secs}"
    );
    let list_calls = reg
        .seen()
        .iter()
        .filter(|s| s.path().ends_with("/tags/list"))
        .count();
    assert_eq!(list_calls, 1, "no retry against a 120s Retry-After");
}

#[tokio::test]
async fn a_registry_that_does_not_answer_in_time_fails_the_scan() {
    let reg = FaultServer::start(|_| {
        Reply::json(200, json!({"tags": ["1"]})).delayed(Duration::from_secs(5))
    })
    .await;
    let obj = object(
        json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m", "timeout": "1s"}),
    );
    let (result, calls, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], memory()).await;
    assert!(result.is_err());
    let (_, reason, message) = ready(&calls[0]);
    assert_eq!(reason, "ReadOperationFailed");
    assert!(message.contains("1s"), "{message}");
}

#[tokio::test]
async fn a_new_object_gets_the_finalizer_first() {
    let mut obj = object(json!({"image": "ghcr.io/a/b", "interval": "5m"}));
    obj["metadata"]["finalizers"] = json!(null);
    let answered = obj.clone();
    let script = vec![Expect::ok(
        "PATCH",
        format!("/apis/image.toolkit.fluxcd.io/v1/namespaces/{NS}/imagerepositories/app"),
        move |_| answered.clone(),
    )];
    let (result, calls, _) = run(&obj, script, memory()).await;
    assert_eq!(result.unwrap(), Action::await_change());
    assert_eq!(
        calls[0].body,
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["finalizers.fluxcd.io"]}
        ])
    );
}

#[tokio::test]
async fn deletion_removes_the_stored_tags_and_the_finalizer() {
    let (mut obj, store) = scanned(
        json!({"image": "ghcr.io/a/b", "interval": "5m"}),
        &["1.0.0"],
        10,
    )
    .await;
    obj["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    let answered = obj.clone();
    let script = vec![Expect::ok(
        "PATCH",
        format!("/apis/image.toolkit.fluxcd.io/v1/namespaces/{NS}/imagerepositories/app"),
        move |_| answered.clone(),
    )];
    let (result, calls, _) = run(&obj, script, store.clone()).await;
    assert_eq!(result.unwrap(), Action::await_change());
    assert_eq!(
        calls[0].body,
        json!([
            {"op": "test", "path": "/metadata/finalizers/0", "value": "finalizers.fluxcd.io"},
            {"op": "remove", "path": "/metadata/finalizers/0"}
        ])
    );
    assert!(store.keys().unwrap().is_empty(), "the store entry is gone");
}

#[tokio::test]
async fn service_account_pull_secrets_supply_the_credentials() {
    let reg = basic_registry().await;
    let spec = json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m", "serviceAccountName": "puller"});
    let obj = object(spec);
    let account = json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "puller", "namespace": NS},
        "imagePullSecrets": [{"name": "creds"}]
    });
    let secret = docker_secret(&reg.host(), "right");
    let script = vec![
        Expect::ok(
            "GET",
            format!("/api/v1/namespaces/{NS}/serviceaccounts/puller"),
            move |_| account.clone(),
        ),
        Expect::ok("GET", secret_path("creds"), move |_| secret.clone()),
        patch(&obj),
        Expect::event(NS),
    ];
    let (result, calls, _) = run(&obj, script, memory()).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(ready(&calls[2]).0, "True");
    let listed = reg
        .seen()
        .into_iter()
        .rev()
        .find(|s| s.path().ends_with("/tags/list"))
        .unwrap();
    assert_eq!(
        listed.header("Authorization"),
        Some("Basic dXNlcjpyaWdodA==")
    );

    // A pull secret the ServiceAccount names but that does not exist.
    let account = json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "puller", "namespace": NS},
        "imagePullSecrets": [{"name": "gone"}]
    });
    let script = vec![
        Expect::ok(
            "GET",
            format!("/api/v1/namespaces/{NS}/serviceaccounts/puller"),
            move |_| account.clone(),
        ),
        Expect::not_found("GET", secret_path("gone"), "secrets", "gone"),
        patch(&obj),
        Expect::event(NS),
    ];
    let (_, calls, _) = run(&obj, script, memory()).await;
    let expected =
        "failed to configure authentication options: failed to get image pull secret 'gone' \
                    for serviceaccount 'team/puller': secrets \"gone\" not found";
    assert_eq!(
        ready(&calls[2]),
        (
            "False".into(),
            "AuthenticationFailed".into(),
            expected.into()
        )
    );
}

#[tokio::test]
async fn anonymous_access_to_a_private_registry_says_credentials_are_wanted() {
    let reg = basic_registry().await;
    let obj = object(json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m"}));
    let (result, calls, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], memory()).await;
    assert!(result.is_err());
    let (_, reason, message) = ready(&calls[0]);
    assert_eq!(reason, "ReadOperationFailed");
    assert!(
        message.contains("401 Unauthorized")
            && message.contains("wants credentials: set spec.secretRef"),
        "{message}"
    );
}

#[tokio::test]
async fn cloud_providers_refuse_hosts_they_do_not_serve_as_a_scan_failure_without_a_registry_call()
{
    let reg = registry(&["1.0.0"]).await;
    // secretRef is ignored for a cloud provider (no Secret is read: the script has no GET).
    let obj = object(
        json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m",
        "provider": "aws", "secretRef": {"name": "ignored"}}),
    );
    let (result, calls, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], memory()).await;
    assert!(result.is_err());
    let (_, reason, message) = ready(&calls[0]);
    assert_eq!(
        reason, "ReadOperationFailed",
        "the login is lazy: a scan failure, as in Flux"
    );
    let expected = format!(
        "scan failed: invalid AWS registry: '{}'. must match {}",
        reg.host(),
        image_reflector::registry::cloud::ECR_PATTERN
    );
    assert_eq!(message, expected);
    assert!(reg.seen().is_empty());
    // With a ServiceAccount, it is object-level workload identity: Stalled behind the gate.
    let obj = object(
        json!({"image": "ghcr.io/a/b", "interval": "5m", "provider": "aws", "serviceAccountName": "sa"}),
    );
    let (result, calls, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], memory()).await;
    assert_eq!(result.unwrap(), Action::await_change());
    let expected = "to use spec.serviceAccountName for provider authentication please enable the ObjectLevelWorkloadIdentity feature gate in the controller";
    assert_eq!(
        ready(&calls[0]),
        (
            "False".into(),
            "FeatureGateDisabled".into(),
            expected.into()
        )
    );
}

/// Names a tenant writes end up in request URLs: `?x=1` would turn the GET of one Secret into a
/// LIST of every Secret in the namespace, `?watch=true&timeoutSeconds=3600` into an hour-long
/// watch on a worker. Each is Stalled, naming the field, before any API or registry call (the
/// mock API server fails the test on any call not scripted).
#[tokio::test]
async fn names_that_are_not_kubernetes_names_stall_before_any_call() {
    let reg = registry(&["1.0.0"]).await;
    let hostile = [
        (
            "secretRef",
            json!({"name": "?x=1"}),
            "spec.secretRef.name \"?x=1\"",
        ),
        (
            "certSecretRef",
            json!({"name": "?watch=true&timeoutSeconds=3600"}),
            "spec.certSecretRef.name \"?watch=true&timeoutSeconds=3600\"",
        ),
        (
            "proxySecretRef",
            json!({"name": "../configmaps/x"}),
            "spec.proxySecretRef.name \"../configmaps/x\"",
        ),
        (
            "serviceAccountName",
            json!("a/b?c"),
            "spec.serviceAccountName \"a/b?c\"",
        ),
    ];
    for (field, value, named) in hostile {
        let mut spec = json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m"});
        spec[field] = value;
        let obj = object(spec);
        let (result, calls, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], memory()).await;
        assert_eq!(result.unwrap(), Action::await_change(), "{field}");
        let (status, reason, message) = ready(&calls[0]);
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("False", "InvalidReference"),
            "{field}"
        );
        assert!(
            message.starts_with(&format!("invalid {named}: a lowercase RFC 1123 subdomain")),
            "{message}"
        );
        assert_eq!(condition_types(&calls[0]), ["Stalled", "Ready"], "{field}");
    }
    assert!(reg.seen().is_empty());
}

/// A ServiceAccount's imagePullSecrets are names too, from an object the tenant wrote: a bad one
/// fails the read without a request.
#[tokio::test]
async fn a_pull_secret_name_that_is_not_a_kubernetes_name_is_never_requested() {
    let reg = basic_registry().await;
    let obj = object(
        json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m", "serviceAccountName": "puller"}),
    );
    let account = json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "puller", "namespace": NS},
        "imagePullSecrets": [{"name": "?labelSelector=x"}]
    });
    let script = vec![
        Expect::ok(
            "GET",
            format!("/api/v1/namespaces/{NS}/serviceaccounts/puller"),
            move |_| account.clone(),
        ),
        patch(&obj),
        Expect::event(NS),
    ];
    let (_, calls, _) = run(&obj, script, memory()).await;
    let (_, reason, message) = ready(&calls[1]);
    assert_eq!(reason, "AuthenticationFailed");
    assert!(
        message.contains("failed to get image pull secret '?labelSelector=x'")
            && message.contains("invalid name \"?labelSelector=x\": a lowercase RFC 1123"),
        "{message}"
    );
}

/// `interval: 1ms` is admitted by the schema (as in Flux); it is scanned every 10 s at most,
/// so three such objects no longer send hundreds of requests a second to a shared host.
#[tokio::test]
async fn a_tiny_interval_is_floored_at_ten_seconds() {
    let reg = registry(&["1.0.0"]).await;
    let spec = json!({"image": format!("{}/demo/app", reg.host()), "interval": "1ms"});
    let obj = object(spec.clone());
    let (result, _, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], memory()).await;
    assert_eq!(result.unwrap(), Action::requeue(Duration::from_secs(10)));
    // Scanned a second ago: not due, the remaining 9 s; no request.
    let (obj, store) = scanned(spec, &["1.0.0"], 1).await;
    let before = reg.seen().len();
    let (result, calls, _) = run(&obj, vec![], store).await;
    let secs = requeue_secs(&result.expect("no API call"));
    assert!((8.0..=9.0).contains(&secs), "{secs}");
    assert!(calls.is_empty());
    assert_eq!(reg.seen().len(), before, "not due: no registry request");
}

/// A registry that never answers holds a scan no longer than 5 minutes, whatever spec.timeout
/// says (it used to hold a worker for all of `timeout: 20m`). Paused time: no real waiting.
#[tokio::test(start_paused = true)]
async fn a_scan_is_cut_at_five_minutes_whatever_spec_timeout_says() {
    let reg = FaultServer::start(|_| Reply::status(200).delayed(Duration::from_secs(3600))).await;
    let obj = object(
        json!({"image": format!("{}/demo/app", reg.host()), "interval": "6h", "timeout": "20m"}),
    );
    let (result, calls, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], memory()).await;
    assert!(result.is_err());
    let (_, reason, message) = ready(&calls[0]);
    assert_eq!(reason, "ReadOperationFailed");
    assert!(
        message.contains("within 300s; raise spec.timeout (at most 5m, the controller's cap)"),
        "{message}"
    );
}

/// A slow host (or namespace) already running `--concurrent - 1` scans leaves the last worker
/// to the others: a scan of it, from a namespace holding its fair share of the host, does not
/// wait on a worker, it is tried again in 2 s, with no write and no request; once a slot is
/// free it scans.
#[tokio::test]
async fn a_busy_host_or_namespace_requeues_without_holding_a_worker() {
    // Scans that have run past SLOW_AFTER: their host and namespace count as slow.
    let slow = std::time::Instant::now() - Duration::from_secs(11);
    let reg = registry(&["1.0.0"]).await;
    let obj = object(json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m"}));
    let (client, server) = mock(vec![]);
    let ctx = context(client, memory());
    // Another namespace's one and two of this namespace's: over its share (3 over 2: 1).
    let busy: Vec<_> = ["other", NS, NS]
        .iter()
        .enumerate()
        .map(|(i, namespace)| {
            ctx.running
                .try_start_since(
                    &RepoKey::new(*namespace, format!("r{i}")).unwrap(),
                    &reg.host(),
                    slow,
                )
                .unwrap()
        })
        .collect();
    let repo: ImageRepository = serde_json::from_value(obj.clone()).unwrap();
    let action = reconcile(Arc::new(repo.clone()), ctx.clone())
        .await
        .unwrap();
    assert_eq!(action, Action::requeue(Duration::from_secs(2)));
    assert!(calls(server).await.is_empty(), "no status write");
    assert!(reg.seen().is_empty(), "no registry request");
    assert!(
        !ctx.shared.was_scanned(&RepoKey::new(NS, "app").unwrap()),
        "a held reconcile is not a scan (warm start)"
    );
    drop(busy);

    // The namespace's limit, on another host.
    let busy: Vec<_> = (0..3)
        .map(|i| {
            ctx.running
                .try_start_since(
                    &RepoKey::new(NS, format!("r{i}")).unwrap(),
                    "elsewhere.example",
                    slow,
                )
                .unwrap()
        })
        .collect();
    let action = reconcile(Arc::new(repo.clone()), ctx.clone())
        .await
        .unwrap();
    assert_eq!(action, Action::requeue(Duration::from_secs(2)));
    drop(busy);

    let (result, calls, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], memory()).await;
    assert_eq!(result.unwrap(), Action::requeue(Duration::from_secs(300)));
    assert_eq!(ready(&calls[0]).0, "True");
}

/// Deleting an object cancels its running scan: the reconcile returns at once (to run the
/// finalizer) instead of waiting out a registry that never answers.
#[tokio::test]
async fn deleting_an_object_cancels_its_running_scan() {
    let reg = FaultServer::start(|_| Reply::status(200).delayed(Duration::from_secs(3600))).await;
    let obj = object(json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m"}));
    let (client, server) = mock(vec![]);
    let ctx = context(client, memory());
    let repo: ImageRepository = serde_json::from_value(obj).unwrap();
    let running = tokio::spawn(reconcile(Arc::new(repo), ctx.clone()));
    // The scan has started once its request reached the registry.
    while reg.seen().is_empty() {
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(ctx.running.cancel(&RepoKey::new(NS, "app").unwrap()));
    let action = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the reconcile ends at once")
        .unwrap()
        .unwrap();
    assert_eq!(action, Action::requeue(Duration::ZERO));
    assert!(
        calls(server).await.is_empty(),
        "nothing written for a cancelled scan"
    );
}

/// An API server that never answers a Secret read holds the reconcile 30 s at most; one that
/// never answers the status write, 6 minutes at most (the scan's cap plus a minute): no worker
/// is held longer, whatever the API server does. Paused time: no real waiting.
#[tokio::test(start_paused = true)]
async fn api_calls_of_a_reconcile_are_under_a_deadline() {
    let reg = registry(&["1.0.0"]).await;
    let obj = object(
        json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m", "secretRef": {"name": "creds"}}),
    );
    let script = vec![
        Expect::hang("GET", secret_path("creds")),
        patch(&obj),
        Expect::event(NS),
    ];
    let (result, calls, _) = run(&obj, script, memory()).await;
    assert!(result.is_err());
    let (_, reason, message) = ready(&calls[1]);
    assert_eq!(reason, "AuthenticationFailed");
    assert!(
        message.ends_with("the API server did not answer within 30s"),
        "{message}"
    );

    let obj = object(json!({"image": "Not An Image", "interval": "5m"}));
    let (client, server) = mock(vec![Expect::hang(
        "PATCH",
        format!("/apis/image.toolkit.fluxcd.io/v1/namespaces/{NS}/imagerepositories/app/status"),
    )]);
    let ctx = context(client, memory());
    let repo: ImageRepository = serde_json::from_value(obj).unwrap();
    let started = tokio::time::Instant::now();
    let err = reconcile(Arc::new(repo), ctx).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the reconcile did not finish within 360s; it is retried"
    );
    assert_eq!(started.elapsed(), Duration::from_secs(360));
    drop(server);
}

/// A hostile registry's tags that are not OCI tags (here 1 000 bytes long, or with a slash)
/// never reach the store: the scan keeps the valid ones.
#[tokio::test]
async fn tags_that_are_not_oci_tags_never_reach_the_store() {
    let long = "a".repeat(1000);
    let reg = FaultServer::start(move |_| {
        Reply::json(200, json!({"tags": ["1.0.0", long, "../../etc", "2.0.0"]}))
    })
    .await;
    let obj = object(json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m"}));
    let store = memory();
    let (result, calls, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], store.clone()).await;
    assert!(result.is_ok());
    assert_eq!(calls[0].body["status"]["lastScanResult"]["tagCount"], 2);
    let (stored, _) = store.get(&RepoKey::new(NS, "app").unwrap()).unwrap();
    assert_eq!(stored.iter().collect::<Vec<_>>(), ["2.0.0", "1.0.0"]);
}

/// A failure is logged once: one error line from the reconcile (with its span's fields), not
/// also an info line and a warning from the retry.
#[tokio::test]
async fn a_failure_is_logged_once() {
    let (lines, _guard) = crate::support::LogLines::capture();

    let reg = registry(&["1.0.0"]).await;
    let obj = object(
        json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m", "secretRef": {"name": "creds"}}),
    );
    let script = vec![
        Expect::not_found("GET", secret_path("creds"), "secrets", "creds"),
        patch(&obj),
        Expect::event(NS),
    ];
    let (result, _, ctx) = run(&obj, script, memory()).await;
    let err = result.unwrap_err();
    let repo: Arc<ImageRepository> = Arc::new(serde_json::from_value(obj).unwrap());
    error_policy(repo, &err, ctx);
    let text = lines.text();
    let failure: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("secrets \"creds\" not found"))
        .collect();
    assert_eq!(failure.len(), 1, "{text}");
    assert!(failure[0].contains("ERROR"), "{}", failure[0]);
    assert!(failure[0].contains("name=app"), "{}", failure[0]);
}

/// The start-up order never stalls on a repository that cannot scan: a policy naming a missing
/// one does not hold the others back (it used to, for the whole 60 s window, with every other
/// repository requeued every 500 ms).
#[tokio::test]
async fn a_policy_naming_a_missing_repository_does_not_hold_the_others_at_start() {
    let reg = registry(&["1.0.0"]).await;
    let obj = object(json!({"image": format!("{}/demo/app", reg.host()), "interval": "5m"}));
    let (client, server) = mock(vec![patch(&obj), Expect::event(NS)]);
    let ctx = context(client, memory());
    ctx.shared
        .scan_order
        .prioritize([RepoKey::new(NS, "missing").unwrap()]);
    ctx.shared
        .scan_order
        .existing([RepoKey::new(NS, "app").unwrap()]);
    let repo: ImageRepository = serde_json::from_value(obj).unwrap();
    let action = reconcile(Arc::new(repo), ctx).await.unwrap();
    assert_eq!(
        action,
        Action::requeue(Duration::from_secs(300)),
        "scanned, not stepped back"
    );
    assert_eq!(ready(&calls(server).await[0]).0, "True");
}

/// A scan that outlasts `HANDOFF_AFTER` leaves the worker: the reconcile returns after 3 s
/// with nothing written, the scan goes on in the background, and when it ends (here, cut at
/// 5 minutes) its object is woken and the next reconcile writes what it found. A reconcile
/// asked for meanwhile neither waits nor starts a second scan. Paused time: no real waiting.
#[tokio::test(start_paused = true)]
async fn a_slow_scan_leaves_the_worker_and_wakes_its_object_when_it_ends() {
    use futures::StreamExt;
    use image_reflector::controller::frame::handoff::HANDOFF_AFTER;
    use image_reflector::controller::frame::reconcile::RECONCILE_DEADLINE;
    let reg = FaultServer::start(|_| Reply::status(200).delayed(Duration::from_secs(3600))).await;
    let obj = object(
        json!({"image": format!("{}/demo/app", reg.host()), "interval": "6h", "timeout": "20m"}),
    );
    let (client, server) = mock(vec![patch(&obj), Expect::event(NS)]);
    let ctx = context(client, memory());
    let mut wakes = ctx.handoffs.wakes().expect("the wakes");
    let repo = Arc::new(serde_json::from_value::<ImageRepository>(obj.clone()).unwrap());
    let started = tokio::time::Instant::now();
    let action = reconcile(repo.clone(), ctx.clone()).await.unwrap();
    assert_eq!(
        started.elapsed(),
        HANDOFF_AFTER,
        "the worker waited 3 s, no more"
    );
    assert_eq!(
        action,
        Action::requeue(RECONCILE_DEADLINE),
        "the wake comes first"
    );
    assert_eq!(ctx.handoffs.parked(), 1);
    let again = reconcile(repo.clone(), ctx.clone()).await.unwrap();
    assert_eq!(again, Action::requeue(RECONCILE_DEADLINE));
    assert_eq!(reg.seen().len(), 1, "one scan, not two");

    let woken = wakes.next().await.expect("woken");
    assert_eq!(woken.name, "app");
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(300),
        "cut at 5 minutes"
    );
    let err = reconcile(repo, ctx.clone()).await.unwrap_err();
    assert!(err.to_string().contains("within 300s"), "{err}");
    assert_eq!(ctx.handoffs.parked(), 0, "taken");
    let calls = calls(server).await;
    assert_eq!(calls.len(), 2, "the status and the event, once");
    assert_eq!(ready(&calls[0]).1, "ReadOperationFailed");
}

/// A background scan belongs to the object as it was: a new generation aborts it (its slot
/// given back) and scans again; deleting the object aborts it, and no wake follows.
#[tokio::test(start_paused = true)]
async fn a_changed_or_deleted_object_aborts_its_background_scan() {
    let reg = FaultServer::start(|_| Reply::status(200).delayed(Duration::from_secs(3600))).await;
    let mut obj = object(json!({"image": format!("{}/demo/app", reg.host()), "interval": "6h"}));
    let answered = obj.clone();
    let (client, server) = mock(vec![Expect::ok(
        "PATCH",
        format!("/apis/image.toolkit.fluxcd.io/v1/namespaces/{NS}/imagerepositories/app"),
        move |_| answered.clone(),
    )]);
    let ctx = context(client, memory());
    let mut wakes = ctx.handoffs.wakes().expect("the wakes");
    let key = RepoKey::new(NS, "app").unwrap();
    let repo =
        |obj: &Value| Arc::new(serde_json::from_value::<ImageRepository>(obj.clone()).unwrap());
    reconcile(repo(&obj), ctx.clone()).await.unwrap();
    assert_eq!(ctx.handoffs.parked(), 1);

    obj["metadata"]["generation"] = json!(2);
    reconcile(repo(&obj), ctx.clone()).await.unwrap();
    assert_eq!(reg.seen().len(), 2, "scanned again for the new generation");
    assert_eq!(ctx.handoffs.parked(), 1, "the old scan is gone");

    obj["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    let action = reconcile(repo(&obj), ctx.clone()).await.unwrap();
    assert_eq!(action, Action::await_change());
    assert_eq!(ctx.handoffs.parked(), 0);
    tokio::task::yield_now().await;
    assert!(!ctx.running.cancel(&key), "its scan slot was given back");
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert!(wakes.try_recv().is_err(), "an aborted scan wakes no one");
    let calls = calls(server).await;
    assert_eq!(calls.len(), 1, "only the finalizer's removal: {calls:?}");
}

/// The whole scan has one deadline, apart from each request's timeout: a registry answering
/// every page within a minute, but with no end of pages, is cut at 5 minutes (`timeout: 20m`
/// is capped), on its fifth page, not at the 10,000-page bound. Paused time.
#[tokio::test(start_paused = true)]
async fn the_whole_scan_is_cut_at_five_minutes_though_every_page_answers() {
    let reg = FaultServer::start(|seen| {
        let k: u64 = seen.query("k").and_then(|k| k.parse().ok()).unwrap_or(0);
        Reply::json(200, json!({"name": "demo/app", "tags": [format!("t{k}")]}))
            .header(
                "Link",
                &format!("</v2/demo/app/tags/list?k={}>; rel=\"next\"", k + 1),
            )
            .delayed(Duration::from_secs(59))
    })
    .await;
    let obj = object(
        json!({"image": format!("{}/demo/app", reg.host()), "interval": "6h", "timeout": "20m"}),
    );
    let (result, calls, _) = run(&obj, vec![patch(&obj), Expect::event(NS)], memory()).await;
    assert!(result.is_err());
    let (_, reason, message) = ready(&calls[0]);
    assert_eq!(reason, "ReadOperationFailed");
    assert!(
        message.contains("the scan did not finish within 5m0s"),
        "{message}"
    );
    assert_eq!(reg.seen().len(), 6, "five pages answered, the sixth cut");
}
