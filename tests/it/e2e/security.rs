//! What the controller writes never holds a credential: a password planted in each place a
//! tenant can put one (a proxy address that does not parse, a docker config whose password the
//! registry rejects, another Secret in the namespace that a crafted name would have listed) is
//! looked for in everything `image-reflector run` writes: its log at debug level, the objects'
//! status, the Events, the notifications it forwards and its metrics. Real API server, the
//! installed RBAC, a real Distribution registry with Basic auth.

use crate::support::cluster::{
    get_json, install_and_controller_kubeconfig, install_crds, kubectl, ok, wait_for,
};
use crate::support::cluster::{Controller, Namespace};
use crate::support::distribution::{Distribution, Variant};
use crate::support::fault_server::{FaultServer, Reply};

const PLANTED: &str = "PLANTEDc0ffee";

fn reason(kind_name: &str, ns: &str, value: &str) {
    wait_for(
        ns,
        kind_name,
        "{.status.conditions[?(@.type==\"Ready\")].reason}",
        value,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_no_planted_password_in_anything_the_controller_writes() {
    use base64::Engine;
    install_crds();
    let registry = Distribution::start(Variant {
        basic: Some(("user", "right")),
        ..Default::default()
    });
    registry
        .push_image("demo/app", &["1.0.0".to_string()])
        .await;
    let receiver = FaultServer::start(|_| Reply::status(200)).await;
    let ns = Namespace(format!("image-reflector-secrets-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let host = &registry.host;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let docker = format!(
        r#"{{"auths":{{"{host}":{{"auth":"{}"}}}}}}"#,
        b64(&format!("user:{PLANTED}-docker"))
    );
    let manifests = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: bad-proxy, namespace: {ns}}}\n\
         stringData: {{address: 'http://user:{PLANTED}-proxy@proxy.invalid:3128 x'}}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {{name: wrong-creds, namespace: {ns}}}\n\
         type: kubernetes.io/dockerconfigjson\ndata: {{.dockerconfigjson: {docker}}}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {{name: bystander, namespace: {ns}}}\n\
         stringData: {{token: '{PLANTED}-bystander'}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: proxied, namespace: {ns}}}\n\
         spec: {{image: {host}/demo/app, interval: 5m, proxySecretRef: {{name: bad-proxy}}}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: rejected, namespace: {ns}}}\n\
         spec: {{image: {host}/demo/app, interval: 5m, secretRef: {{name: wrong-creds}}}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: listing, namespace: {ns}}}\n\
         spec: {{image: {host}/demo/app, interval: 5m, secretRef: {{name: '?x=1'}}}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: rejected}}, policy: {{semver: {{range: '>=1.0.0'}}}}}}\n",
        ns = ns.0,
        docker = b64(&docker),
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let log_path = dir.path().join("controller.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let events_addr = format!("--events-addr=http://{}/", receiver.host());
    let controller = Controller::start_full(
        &ns.0,
        &kubeconfig,
        &[&events_addr, "--log-level=debug"],
        &[],
        log.into(),
    );
    let metrics_port = crate::support::cluster::listening_port(&log_path, "metrics");

    reason("imagerepository/proxied", &ns.0, "AuthenticationFailed");
    reason("imagerepository/rejected", &ns.0, "ReadOperationFailed");
    wait_for(
        &ns.0,
        "imagerepository/listing",
        "{.status.conditions[?(@.type==\"Stalled\")].reason}",
        "InvalidReference",
    );
    // Its repository never scanned: the policy waits, progressing.
    reason("imagepolicy/app", &ns.0, "Progressing");
    image_reflector::registry::install_crypto_provider();
    let metrics = reqwest::get(format!("http://127.0.0.1:{metrics_port}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let status = ok(kubectl(
        &[
            "get",
            "imagerepositories,imagepolicies",
            "-n",
            &ns.0,
            "-o",
            "json",
        ],
        None,
    ));
    let events = ok(kubectl(&["get", "events", "-n", &ns.0, "-o", "json"], None));
    controller.stop();
    let logged = std::fs::read_to_string(&log_path).unwrap();
    let notified: Vec<String> = receiver
        .seen()
        .iter()
        .map(|s| String::from_utf8_lossy(&s.body).into_owned())
        .collect();

    // The failures are reported, with what a user needs, and nothing of the secrets.
    let proxied = get_json(&ns.0, "imagerepository/proxied");
    let message = proxied["status"]["conditions"][1]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
        + proxied["status"]["conditions"][0]["message"]
            .as_str()
            .unwrap_or_default();
    assert!(
        message.contains("invalid proxy URL 'http://****@proxy.invalid:3128 x'"),
        "{message}"
    );
    assert!(events.contains("AuthenticationFailed") && events.contains("InvalidReference"));
    assert!(!notified.is_empty(), "the failures were forwarded");
    for (what, text) in [
        ("the log", logged.as_str()),
        ("status", status.as_str()),
        ("Events", events.as_str()),
        ("metrics", metrics.as_str()),
        ("notifications", notified.join("\n").as_str()),
    ] {
        assert!(
            !text.contains(PLANTED),
            "a planted password is in {what}:\n{text}"
        );
        let encoded = b64(PLANTED);
        assert!(
            !text.contains(&encoded[..12]),
            "a planted password (base64) is in {what}"
        );
    }
    assert!(
        logged.contains("InvalidReference") || logged.contains("invalid spec.secretRef.name"),
        "the log reports the stall"
    );
}

/// A policy denied by a repository's `accessFrom` is allowed within seconds of its namespace
/// getting the label the repository selects: namespace labels are watched (metadata only),
/// with the RBAC config/default grants. (AccessDenied is a stall: nothing else would retry it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_a_namespace_label_change_re_evaluates_its_cross_namespace_policies() {
    install_crds();
    let registry = Distribution::start(Variant::default());
    registry
        .push_image("demo/app", &["1.0.0".to_string()])
        .await;
    let run = std::process::id();
    let owner = Namespace(format!("image-reflector-acl-repo-{run}"));
    let tenant = Namespace(format!("image-reflector-acl-tenant-{run}"));
    for ns in [&owner, &tenant] {
        ok(kubectl(&["create", "namespace", &ns.0], None));
    }
    let shard = format!("e2e-acl: run-{run}");
    let manifests = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n\
         metadata: {{name: shared, namespace: {owner}, labels: {{{shard}}}}}\n\
         spec: {{image: {host}/demo/app, interval: 5m, accessFrom: {{namespaceSelectors: [{{matchLabels: {{tenant: acl-{run}}}}}]}}}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n\
         metadata: {{name: app, namespace: {tenant}, labels: {{{shard}}}}}\n\
         spec: {{imageRepositoryRef: {{name: shared, namespace: {owner}}}, policy: {{semver: {{range: '>=1.0.0'}}}}}}\n",
        owner = owner.0,
        tenant = tenant.0,
        host = registry.host,
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let selector = format!("--watch-label-selector=e2e-acl=run-{run}");
    let controller = Controller::start_with(
        &owner.0,
        &kubeconfig,
        // A retry would come only after 5 minutes: what re-evaluates is the watch.
        &[
            "--watch-all-namespaces=true",
            &selector,
            "--min-retry-delay=5m",
        ],
    );
    reason("imagepolicy/app", &tenant.0, "AccessDenied");
    ok(kubectl(
        &[
            "label",
            "namespace",
            &tenant.0,
            &format!("tenant=acl-{run}"),
        ],
        None,
    ));
    wait_for(
        &tenant.0,
        "imagepolicy/app",
        "{.status.latestRef.tag}",
        "1.0.0",
    );
    assert!(controller.stop().success());
}

/// Deleting an ImageRepository whose scan hangs on a registry that never answers completes
/// at once: the controller cancels the running scan (the watch sees the deletion) and removes
/// its finalizer, instead of waiting out the scan (up to 5 minutes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_deleting_a_repository_cancels_its_hanging_scan() {
    install_crds();
    let registry =
        FaultServer::start(|_| Reply::status(200).delayed(std::time::Duration::from_secs(3600)))
            .await;
    let ns = Namespace(format!("image-reflector-cancel-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let manifest = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: slow, namespace: {ns}}}\n\
         spec: {{image: {host}/demo/app, interval: 1h, timeout: 20m, insecure: true}}\n",
        ns = ns.0,
        host = registry.host(),
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&manifest)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let controller = Controller::start(&ns.0, &kubeconfig);
    // The scan is running once its first request reached the registry.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while registry.seen().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the scan never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let started = std::time::Instant::now();
    ok(kubectl(
        &[
            "delete",
            "imagerepository/slow",
            "-n",
            &ns.0,
            "--wait",
            "--timeout=30s",
        ],
        None,
    ));
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert!(controller.stop().success());
}

/// Slow registries never take the workers (issue: four objects against a host that never
/// answers held all four, and healthy objects created next waited): four ImageRepositories
/// whose host never answers and four ImagePolicies whose digest reads hang are all running
/// when six healthy repositories and a plain policy are created, and those become Ready while
/// the slow ones are still waiting on their registries (whose cut is 5 minutes away).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_slow_registries_leave_workers_to_healthy_objects() {
    use std::time::Duration;
    install_crds();
    let hang = || Reply::status(200).delayed(Duration::from_secs(3600));
    let tags = || Reply::json(200, serde_json::json!({"name": "app", "tags": ["1.0.0"]}));
    let silent = FaultServer::start(move |_| hang()).await;
    let healthy = FaultServer::start(move |_| tags()).await;
    // Tags at once; every manifest (the digest the policies reflect) hangs.
    let dripping = FaultServer::start(move |seen| match seen.path().ends_with("/tags/list") {
        true => tags(),
        false => hang(),
    })
    .await;
    let ns = Namespace(format!("image-reflector-workers-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let repo = |name: &str, host: &str| {
        format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: {name}, namespace: {ns}}}\n\
             spec: {{image: {host}/team/{name}, interval: 1h, timeout: 10m, insecure: true}}\n---\n",
            ns = ns.0
        )
    };
    let policy = |name: &str, repo: &str, extra: &str| {
        format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: {name}, namespace: {ns}}}\n\
             spec: {{imageRepositoryRef: {{name: {repo}}}, policy: {{semver: {{range: '>=1.0.0'}}}}{extra}}}\n---\n",
            ns = ns.0
        )
    };
    let mut slow = repo("drip", &dripping.host());
    for i in 0..4 {
        slow += &repo(&format!("silent-{i}"), &silent.host());
        slow += &policy(
            &format!("drip-{i}"),
            "drip",
            ", digestReflectionPolicy: Always, interval: 1h",
        );
    }
    ok(kubectl(&["apply", "-f", "-"], Some(&slow)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let controller = Controller::start_with(&ns.0, &kubeconfig, &["--concurrent=4"]);
    // Every slow object is waiting on its registry: four listings, four digest reads.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while silent.seen().len() < 4
        || dripping
            .seen()
            .iter()
            .filter(|s| s.path().contains("/manifests/"))
            .count()
            < 4
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the slow objects never all started"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut fresh = String::new();
    for i in 0..6 {
        fresh += &repo(&format!("healthy-{i}"), &healthy.host());
    }
    fresh += &policy("plain", "healthy-0", "");
    ok(kubectl(&["apply", "-f", "-"], Some(&fresh)));
    for i in 0..6 {
        reason(&format!("imagerepository/healthy-{i}"), &ns.0, "Succeeded");
    }
    wait_for(
        &ns.0,
        "imagepolicy/plain",
        "{.status.latestRef.tag}",
        "1.0.0",
    );
    // ... while every slow object still waits on its registry: nothing written for them yet.
    for i in 0..4 {
        let scanned = get_json(&ns.0, &format!("imagerepository/silent-{i}"));
        assert!(scanned["status"]["lastScanResult"].is_null(), "{scanned}");
        let elected = get_json(&ns.0, &format!("imagepolicy/drip-{i}"));
        assert!(elected["status"]["latestRef"].is_null(), "{elected}");
    }
    assert!(controller.stop().success());
}
