//! A revert never skips a gate nor loses one (docs/install.md, "While Flux's CRDs are
//! served"). A policy gated by `filterTags.minAge` and `downgrade: Refuse` is elected under our
//! CRDs; then Flux's are put back as kustomize-controller does (server-side, one field
//! manager), so the API server serves it pruned of both. A new, young tag is scanned, and the
//! controller restarts on the same storage: the policy is held with nothing written (no
//! status, no finalizer: a write would store it pruned for good), says why in an Event, the
//! log, the metric and `/readyz`. With our CRDs back it resumes with every stored gate and
//! holds the young tags back. A policy without gates beside it runs as under Flux's
//! controller throughout, told once why it could not have them. Swapping CRDs changes them for
//! every test of the API server, so this one runs on an API server of its own, as `crd_swap`
//! does (`make e2e-flux`).

use super::{http_text, log_file, until};
use crate::support::cluster::{
    apply_crds, get_json, install_crds, install_without_crds_and_controller_kubeconfig, kubectl,
    listening_port, ok, request_reconcile, Controller, Namespace,
};
use crate::support::distribution::{Distribution, Variant};
use crate::support::flux::bin_dir;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::Value;

const CRDS: [&str; 2] = [
    "crd/imagerepositories.image.toolkit.fluxcd.io",
    "crd/imagepolicies.image.toolkit.fluxcd.io",
];

/// The log line of a policy held because it arrived without fields it holds.
const HELD: &str = "without spec.downgrade, spec.filterTags.minAge, which it holds";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs an API server of its own and Flux: make e2e-flux"]
async fn crd_revert_holds_a_gated_policy_through_a_restart_and_it_resumes_with_its_gates() {
    install_crds();
    let registry = Distribution::start(Variant::default());
    let ago = |hours: i64| (Timestamp::now() - SignedDuration::from_hours(hours)).to_string();
    registry
        .push_dated("demo/app", "1.0.0", "amd64", Some(&ago(24 * 30)), "old")
        .await;
    registry
        .push_dated("demo/app", "1.1.0", "amd64", Some(&ago(2)), "young")
        .await;
    let ns = Namespace(format!("image-reflector-crd-revert-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let objects = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{image: {host}/demo/app, interval: 1h}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: app}}, policy: {{semver: {{range: '>=1.0.0'}}}}, \
         filterTags: {{minAge: 168h}}, downgrade: Refuse}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: plain, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: app}}, policy: {{semver: {{range: '>=1.0.0'}}}}}}\n",
        ns = ns.0,
        host = registry.host,
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&objects)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_without_crds_and_controller_kubeconfig(dir.path());
    let flags = ["--served-schema-interval=1s"];
    let first_log = dir.path().join("first.log");
    let controller = Controller::start_full(&ns.0, &kubeconfig, &flags, &[], log_file(&first_log));
    let policy = || get_json(&ns.0, "imagepolicy/app");
    let first = || std::fs::read_to_string(&first_log).unwrap_or_default();
    until(
        60,
        "1.0.0 elected, 1.1.0 held, the generation marked",
        first,
        || {
            let p = policy();
            p["status"]["latestRef"]["tag"] == "1.0.0"
                && held(&p).contains(&"1.1.0".to_string())
                && p["metadata"]["annotations"]["image-reflector.internal/gates"]
                    == "1:downgrade,filterTags.minAge"
        },
    )
    .await;
    let before = policy()["status"].clone();
    let plain = || get_json(&ns.0, "imagepolicy/plain")["status"]["latestRef"]["tag"].clone();

    // kustomize-controller puts Flux's CRDs back: every read is pruned now.
    apply_crds(
        &bin_dir().join("image-reflector-controller.config/crd/bases"),
        &CRDS,
    );
    until(30, "the policy served pruned", first, || {
        policy()["spec"]["filterTags"]["minAge"].is_null()
    })
    .await;
    until(30, "the watch listed again, the policy held", first, || {
        let log = first();
        log.contains("the served schema changed: the watch lists again") && log.contains(HELD)
    })
    .await;
    // A young tag and a scan: a gate-less election would take 1.2.0.
    registry
        .push_dated("demo/app", "1.2.0", "amd64", Some(&ago(0)), "newest")
        .await;
    request_reconcile(&ns.0, "imagerepository/app", "revert");
    until(60, "the new tag scanned", first, || {
        get_json(&ns.0, "imagerepository/app")["status"]["lastScanResult"]["tagCount"] == 3
    })
    .await;

    // A policy without gates runs as under Flux's controller, told once why it could not
    // have them.
    until(60, "the plain policy elects 1.2.0", first, || {
        plain() == "1.2.0"
    })
    .await;
    let told = events_of(&ns.0, "plain")
        .iter()
        .any(|e| e["reason"] == "GateFieldsUnserved" && e["type"] == "Normal");
    assert!(told, "{:#?}", events_of(&ns.0, "plain"));

    // A restart on the same storage, Flux's CRDs still served.
    let second_log = dir.path().join("second.log");
    let controller = controller.restart(&ns.0, &kubeconfig, &flags, log_file(&second_log));
    let second = || std::fs::read_to_string(&second_log).unwrap_or_default();
    until(60, "held again after the restart", second, || {
        second().contains(HELD)
    })
    .await;
    let metrics_port = listening_port(&second_log, "metrics");
    let mut metrics = String::new();
    for _ in 0..150 {
        metrics = http_text(metrics_port, "/metrics").await;
        if metric(&metrics, "image_reflector_served_schema_fields_missing") == 8.0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(
        metric(&metrics, "image_reflector_served_schema_fields_missing"),
        8.0,
        "every field beyond Flux's: {metrics}"
    );
    let hidden = metric(&metrics, "image_reflector_gates_hidden_total");
    assert!(hidden >= 1.0, "{metrics}");
    let ready = http_text(listening_port(&second_log, "health"), "/readyz").await;
    assert!(
        ready.starts_with("ok\n") && ready.contains("without spec.downgrade"),
        "{ready}"
    );
    let events = events_of(&ns.0, "app");
    let warned = events.iter().any(|e| {
        e["reason"] == "GatesHidden"
            && e["type"] == "Warning"
            && e["message"]
                .as_str()
                .unwrap()
                .contains("apply image-reflector's CRDs")
    });
    assert!(warned, "{events:#?}");
    // Flux's schema prunes `status.heldBack` from reads too; the rest is as it was.
    let mut as_served = before.clone();
    as_served.as_object_mut().unwrap().remove("heldBack");
    assert_eq!(
        policy()["status"],
        as_served,
        "nothing written while pruned"
    );

    // Our CRDs back: the gates were never lost, and the policy resumes with them.
    install_crds();
    let stored = policy();
    assert_eq!(stored["spec"]["filterTags"]["minAge"], "168h", "{stored}");
    assert_eq!(stored["spec"]["downgrade"], "Refuse", "{stored}");
    until(60, "resumed: 1.2.0 held back by minAge", second, || {
        held(&policy()).contains(&"1.2.0".to_string())
    })
    .await;
    let after = policy();
    assert_eq!(after["status"]["latestRef"], before["latestRef"], "{after}");
    assert_eq!(
        after["status"]["observedPreviousRef"], before["observedPreviousRef"],
        "{after}"
    );
    for event in events_of(&ns.0, "app") {
        let message = event["message"].as_str().unwrap_or_default();
        assert!(!message.contains("resolved to 1.2.0"), "{message}");
        assert!(!message.contains("resolved to 1.1.0"), "{message}");
    }
    assert!(controller.stop().success(), "{}", second());
}

/// The tags `policy`'s `status.heldBack` names.
fn held(policy: &Value) -> Vec<String> {
    let held = policy["status"]["heldBack"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    held.iter()
        .filter_map(|h| h["tag"].as_str().map(str::to_string))
        .collect()
}

/// The Events of the ImagePolicy `name` in `ns`.
pub(super) fn events_of(ns: &str, name: &str) -> Vec<Value> {
    let selector = &format!("involvedObject.kind=ImagePolicy,involvedObject.name={name}");
    let args = [
        "get",
        "events",
        "-n",
        ns,
        "--field-selector",
        selector,
        "-o",
        "json",
    ];
    let list: Value = serde_json::from_str(&ok(kubectl(&args, None))).unwrap();
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The value of the series `name` (no labels) in an OpenMetrics text.
fn metric(text: &str, name: &str) -> f64 {
    let line = text.lines().find(|l| l.starts_with(&format!("{name} ")));
    let value = line.and_then(|l| l.split_whitespace().nth(1));
    value.and_then(|v| v.parse().ok()).unwrap_or(-1.0)
}
