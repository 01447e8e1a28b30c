//! A restart says nothing new (issue 92, item 3; fluxcd/image-reflector-controller #930): a
//! settled controller with twenty elected policies, one holding a tag back, one told its bumps
//! wait nothing, and a repository that cannot be reached, is restarted on its storage; the real
//! notification-controller forwards not one Alert for what was already said before, the
//! unreachable repository's failure included.

use super::{http_text, log_file, until};
use crate::support::cluster::{
    install_and_controller_kubeconfig, install_crds, kubectl, listening_port, ok, Controller,
    Namespace,
};
use crate::support::distribution::{Distribution, Variant};
use crate::support::fault_server::{FaultServer, Reply};
use crate::support::flux::{install_flux_crds, notification_controller};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use std::time::Duration;

const POLICIES: usize = 20;

/// The payloads the receiver got from notification-controller.
fn payloads(receiver: &FaultServer) -> Vec<Value> {
    receiver
        .seen()
        .iter()
        .filter_map(|s| serde_json::from_slice::<Value>(&s.body).ok())
        .collect()
}

fn objects(ns: &str, receiver: &str, host: &str) -> String {
    let mut objects = format!(
        "apiVersion: notification.toolkit.fluxcd.io/v1beta3\nkind: Provider\nmetadata: {{name: receiver, namespace: {ns}}}\n\
         spec: {{type: generic, address: 'http://{receiver}/hook'}}\n---\n\
         apiVersion: notification.toolkit.fluxcd.io/v1beta3\nkind: Alert\nmetadata: {{name: images, namespace: {ns}}}\n\
         spec: {{providerRef: {{name: receiver}}, eventSeverity: info, eventSources: [{{kind: ImagePolicy, name: '*'}}, {{kind: ImageRepository, name: '*'}}]}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{image: {host}/quiet/app, interval: 1h}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: down, namespace: {ns}}}\n\
         spec: {{image: 127.0.0.1:9/quiet/down, interval: 1h, timeout: 5s}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: aged, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: app}}, policy: {{semver: {{range: '>=1.0.0'}}}}, filterTags: {{minAge: 168h}}}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: cooled, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: app}}, policy: {{semver: {{range: '>=1.0.0'}}}}, filterTags: {{minAgeByBump: {{major: 1h}}}}}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: stuck, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: down}}, policy: {{semver: {{range: '>=1.0.0'}}}}}}\n"
    );
    for i in 0..POLICIES {
        let reflect = ["IfNotPresent", "Always", "Never"][i % 3];
        let interval = if reflect == "Always" {
            ", interval: 1h"
        } else {
            ""
        };
        objects += &format!(
            "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: p{i}, namespace: {ns}}}\n\
             spec: {{imageRepositoryRef: {{name: app}}, policy: {{semver: {{range: '>=1.0.0'}}}}, digestReflectionPolicy: {reflect}{interval}}}\n"
        );
    }
    objects
}

/// What the controller has said as Kubernetes Events, repeats counted: each Event it posts to
/// notification-controller is one of these (notification-controller drops an identical event
/// within five minutes by itself, so what it forwards alone would not show a repeat).
fn events_said(ns: &str) -> (u64, String) {
    let list = ok(kubectl(&["get", "events", "-n", ns, "-o", "json"], None));
    let list: Value = serde_json::from_str(&list).unwrap();
    let ours = list["items"].as_array().cloned().unwrap_or_default();
    let ours: Vec<&Value> = ours
        .iter()
        .filter(|e| e["reportingComponent"] == "image-reflector-controller")
        .collect();
    let count = ours.iter().map(|e| e["count"].as_u64().unwrap_or(1)).sum();
    let text = ours
        .iter()
        .map(|e| {
            format!(
                "{} {} x{}: {}",
                e["involvedObject"]["name"], e["reason"], e["count"], e["message"]
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    (count, text)
}

/// Every object has been reconciled since the controller started: each has a
/// `gotk_reconcile_duration_seconds` series, and the unreachable repository was tried twice.
fn all_reconciled(metrics: &str) -> bool {
    let count = |kind: &str, name: &str| {
        let label = format!("kind=\"{kind}\",name=\"{name}\"");
        metrics
            .lines()
            .filter(|l| {
                l.starts_with("gotk_reconcile_duration_seconds_count") && l.contains(&label)
            })
            .filter_map(|l| l.split_whitespace().last()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    let policies = (0..POLICIES).map(|i| format!("p{i}"));
    let names: Vec<String> = policies
        .chain(["aged", "cooled", "stuck"].map(String::from))
        .collect();
    names.iter().all(|n| count("ImagePolicy", n) >= 1.0)
        && count("ImageRepository", "app") >= 1.0
        && count("ImageRepository", "down") >= 2.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster and Flux: make e2e-flux"]
async fn flux_a_restart_forwards_no_repeated_alert() {
    install_crds();
    install_flux_crds();
    let registry = Distribution::start(Variant::default());
    let now = Timestamp::now();
    let ago = |hours: i64| (now - SignedDuration::from_hours(hours)).to_string();
    registry
        .push_dated("quiet/app", "1.0.0", "amd64", Some(&ago(30 * 24)), "a")
        .await;
    registry
        .push_dated("quiet/app", "1.1.0", "amd64", Some(&ago(2)), "b")
        .await;
    let receiver = FaultServer::start(|_| Reply::status(200)).await;
    let ns = Namespace(format!("image-reflector-flux-quiet-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let manifests = objects(&ns.0, &receiver.host(), &registry.host);
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    let (nc, events) = notification_controller(&ns.0).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let flags = [format!("--events-addr={events}")];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let first_log = dir.path().join("first.log");
    let controller = Controller::start_full(&ns.0, &kubeconfig, &flags, &[], log_file(&first_log));
    let detail = || {
        format!(
            "{:#?}\n--- notification-controller:\n{}",
            payloads(&receiver),
            nc.log_text()
        )
    };

    // Settled: every policy elected, its payload forwarded, then nothing new for ten seconds.
    let elected = || {
        let tags = ok(kubectl(
            &[
                "get",
                "imagepolicies",
                "-n",
                &ns.0,
                "-o",
                "jsonpath={.items[*].status.latestRef.tag}",
            ],
            None,
        ));
        tags.split_whitespace().count() == POLICIES + 2
    };
    until(120, "every policy elected", detail, elected).await;
    let mut settled = payloads(&receiver).len();
    let mut quiet_since = std::time::Instant::now();
    while quiet_since.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let seen = payloads(&receiver).len();
        if seen != settled {
            (settled, quiet_since) = (seen, std::time::Instant::now());
        }
    }
    let before = payloads(&receiver);
    let said = |reason: &str| before.iter().any(|p| p["reason"] == reason);
    assert!(
        before.len() >= POLICIES + 2 && said("HeldBack") && said("BumpsWaitNothing"),
        "what the first start said: {before:#?}"
    );
    assert!(
        before
            .iter()
            .any(|p| p["involvedObject"]["name"] == "down" && p["severity"] == "error"),
        "the unreachable repository's failure: {before:#?}"
    );

    let (events_before, listed) = events_said(&ns.0);

    // The restart, on the same storage: every object reconciled again, nothing said again.
    let second_log = dir.path().join("second.log");
    let controller = controller.restart(&ns.0, &kubeconfig, &flags, log_file(&second_log));
    let port = listening_port(&second_log, "metrics");
    let mut metrics = String::new();
    for _ in 0..300 {
        metrics = http_text(port, "/metrics").await;
        if all_reconciled(&metrics) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(all_reconciled(&metrics), "{metrics}");
    // notification-controller forwards within milliseconds; five seconds is generous.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (events_after, listed_after) = events_said(&ns.0);
    assert_eq!(
        events_after, events_before,
        "Events across the restart, before:\n{listed}\nafter:\n{listed_after}"
    );
    let after = payloads(&receiver);
    assert_eq!(
        after.len(),
        before.len(),
        "forwarded across the restart: {:#?}\n--- second log:\n{}",
        &after[before.len().min(after.len())..],
        std::fs::read_to_string(&second_log).unwrap_or_default()
    );
    assert!(controller.stop().success());
}
