//! Fair shares through the controller, on a real API server (docs/security.md, "Fair
//! shares"): four hostile namespaces attack at once, with fake registries on loopback, and a
//! fourth namespace that behaves is served within the stated bounds.
//! - `slow` holds a shared host: eight repositories whose listings answer after two minutes
//!   (the host's slots, and its "slow" limit).
//! - `throttler`, with the same identity, is throttled for an hour on the path the victim
//!   lists with its own password.
//! - `mem-a` and `mem-b` hold the memory budget: 64 and 32 MiB of tag pages nearly sent,
//!   then stalled.
//!
//! The victim's repository on the shared host is scanned while every attack still holds:
//! its namespace takes a slot back (held past 10 s), its identity is not the throttled one,
//! and its refusal for memory stops the read over its fair share, which says so.

use crate::support::cluster::{
    get_json, install_and_controller_kubeconfig, install_crds, kubectl, ok, wait_for,
};
use crate::support::cluster::{Controller, Namespace};
use crate::support::fault_server::{stalling_pages, FaultServer, Reply, Seen};
use serde_json::json;
use std::sync::atomic::Ordering;
use std::time::Duration;

fn basic(username: &str, password: &str) -> String {
    use base64::Engine;
    let raw = format!("{username}:{password}");
    let encoded = base64::engine::general_purpose::STANDARD.encode(raw);
    format!("Basic {encoded}")
}

/// The shared host: Basic challenges; `mallory` (the attacker) throttled an hour on `b/app`
/// and answered two minutes late on its own repositories; `alice` answered at once.
async fn shared_host() -> FaultServer {
    FaultServer::start_with(|addr| {
        let challenge = format!(r#"Basic realm="{addr}""#);
        move |seen: &Seen| {
            let who = seen.header("Authorization");
            if who == Some(basic("alice", "alice-pw").as_str()) {
                Reply::json(200, json!({"name": "b/app", "tags": ["1.0.0"]}))
            } else if who == Some(basic("mallory", "mallory-pw").as_str()) {
                if seen.path().starts_with("/v2/b/app/") {
                    Reply::status(429).header("Retry-After", "3600")
                } else {
                    Reply::json(200, json!({"tags": ["late"]})).delayed(Duration::from_secs(120))
                }
            } else {
                Reply::status(401).header("WWW-Authenticate", &challenge)
            }
        }
    })
    .await
}

/// A Secret of Docker config for `user` on `host`, and `repositories` in `namespace` (name,
/// image) that use it when `user` is given.
fn manifests(
    namespace: &str,
    shard: &str,
    user: Option<(&str, &str, &str)>,
    repositories: &[(String, String)],
) -> String {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let mut docs = Vec::new();
    if let Some((host, username, password)) = user {
        let docker = b64(&format!(
            r#"{{"auths":{{"{host}":{{"auth":"{}"}}}}}}"#,
            b64(&format!("{username}:{password}"))
        ));
        docs.push(format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: creds, namespace: {namespace}}}\n\
             type: kubernetes.io/dockerconfigjson\ndata: {{.dockerconfigjson: {docker}}}\n"
        ));
    }
    let secret = if user.is_some() {
        ", secretRef: {name: creds}"
    } else {
        ""
    };
    for (name, image) in repositories {
        docs.push(format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n\
             metadata: {{name: {name}, namespace: {namespace}, labels: {{{shard}}}}}\n\
             spec: {{image: {image}, interval: 1h, timeout: 5m, insecure: true{secret}}}\n"
        ));
    }
    docs.join("---\n")
}

/// The Ready message of `namespace`'s ImageRepository `name`.
fn ready_message(namespace: &str, name: &str) -> String {
    let repo = get_json(namespace, &format!("imagerepository/{name}"));
    let conditions = repo["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    conditions
        .iter()
        .find(|c| c["type"] == "Ready")
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_a_tenant_that_behaves_is_served_while_four_others_attack_every_share() {
    install_crds();
    let host = shared_host().await;
    let (big, big_sent) = stalling_pages(64 << 20).await;
    let (small, small_sent) = stalling_pages(32 << 20).await;
    let run = std::process::id();
    let ns = |name: &str| Namespace(format!("image-reflector-fair-{name}-{run}"));
    let (slow, throttler) = (ns("slow"), ns("throttler"));
    let (a, b, victim) = (ns("mem-a"), ns("mem-b"), ns("victim"));
    for namespace in [&slow, &throttler, &a, &b, &victim] {
        ok(kubectl(&["create", "namespace", &namespace.0], None));
    }
    let shard = format!("e2e-fair: run-{run}");
    let h = host.host();
    let hostile: Vec<(String, String)> = (0..8)
        .map(|i| (format!("app{i}"), format!("{h}/hostile/app{i}")))
        .collect();
    let mallory_on = |ns: &Namespace, repositories: &[(String, String)]| {
        manifests(
            &ns.0,
            &shard,
            Some((&h, "mallory", "mallory-pw")),
            repositories,
        )
    };
    let attacks = [
        mallory_on(&slow, &hostile),
        mallory_on(&throttler, &[("app".into(), format!("{h}/b/app"))]),
        manifests(
            &a.0,
            &shard,
            None,
            &[("app".into(), format!("{big}/a/app"))],
        ),
        manifests(
            &b.0,
            &shard,
            None,
            &[("app".into(), format!("{small}/b/app"))],
        ),
    ];
    ok(kubectl(&["apply", "-f", "-"], Some(&attacks.join("---\n"))));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let selector = format!("--watch-label-selector=e2e-fair=run-{run}");
    let log_path = dir.path().join("controller.log");
    let controller = Controller::start_full(
        &victim.0,
        &kubeconfig,
        &["--watch-all-namespaces=true", &selector],
        &[],
        std::fs::File::create(&log_path).unwrap().into(),
    );
    // Every attack holds: the memory budget is full, the host's slots are taken by answers
    // two minutes away, and mallory is throttled on b/app.
    let mallory = basic("mallory", "mallory-pw");
    let holding = || {
        let seen = host.seen();
        let by_mallory = |path: &str| {
            seen.iter()
                .filter(|s| s.header("Authorization") == Some(mallory.as_str()))
                .filter(|s| s.path().starts_with(path))
                .count()
        };
        big_sent.load(Ordering::SeqCst) > 0
            && small_sent.load(Ordering::SeqCst) > 0
            && by_mallory("/v2/hostile/") >= 4
            && by_mallory("/v2/b/app/") >= 1
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !holding() {
        if std::time::Instant::now() >= deadline {
            let seen: Vec<String> = host.seen().iter().map(|s| s.target.clone()).collect();
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            panic!(
                "the attacks never all held: pages sent {} and {}; the host saw {seen:?}; {log}",
                big_sent.load(Ordering::SeqCst),
                small_sent.load(Ordering::SeqCst)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let repositories = [("app".to_string(), format!("{h}/b/app"))];
    let behaving = manifests(
        &victim.0,
        &shard,
        Some((&h, "alice", "alice-pw")),
        &repositories,
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&behaving)));
    wait_for(
        &victim.0,
        "imagerepository/app",
        "{.status.lastScanResult.tagCount}",
        "1",
    );
    // Served within wait_for's minute, while the slow host's answers are still two minutes
    // away; and the memory read over its fair share was stopped, saying so.
    let late = host
        .seen()
        .iter()
        .filter(|s| s.path().starts_with("/v2/hostile/"))
        .count();
    assert!(late >= 4, "{late}");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let message = ready_message(&a.0, "app");
        // Stopped ("held more than its fair share"), or its retry held to its share while
        // the victim waited ("past its fair share").
        if message.contains("its fair share") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the stopped read never said why: {message}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(!log.contains("panicked"), "{log}");
    assert!(controller.stop().success());
}
