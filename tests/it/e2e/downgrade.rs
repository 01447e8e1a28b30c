//! The downgrade guard on a real API server (`make e2e`): the CRD takes `spec.downgrade`, the
//! controller holds at the elected tag when a publisher deletes it and its newer neighbours
//! from a real registry, says so in status and in one `DowngradeRefused` event, keeps holding
//! across a spec change, and gives way to a spec that excludes the elected tag.

use crate::support::cluster::*;
use crate::support::distribution::{Distribution, Variant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_downgrade_refused_when_newer_tags_are_deleted_until_the_spec_excludes_the_tag() {
    install_crds();
    let registry = Distribution::start(Variant::default());
    let repository = format!("{}/guard/app", registry.host);
    let mut digests = Vec::new();
    for tag in ["1.3.0", "1.4.0", "1.5.0"] {
        let digest = registry
            .push_image_variant("guard/app", &[tag.to_string()], tag)
            .await;
        digests.push(digest);
    }
    let ns = Namespace(format!("image-reflector-downgrade-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let manifests = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{image: {repository}, interval: 5m}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: guarded, namespace: {ns}}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n  \
         digestReflectionPolicy: IfNotPresent\n  downgrade: Refuse\n",
        ns = ns.0
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let controller = Controller::start(&ns.0, &kubeconfig);
    wait_for(
        &ns.0,
        "imagepolicy/guarded",
        "{.status.latestRef.tag}",
        "1.5.0",
    );

    // The publisher deletes 1.5.0 and 1.4.0; the next scan lists 1.3.0 alone.
    registry.delete_manifest("guard/app", &digests[2]).await;
    registry.delete_manifest("guard/app", &digests[1]).await;
    request_reconcile(&ns.0, "imagerepository/app", "e2e-downgrade");
    wait_for(
        &ns.0,
        "imagerepository/app",
        "{.status.lastScanResult.tagCount}",
        "1",
    );
    wait_for(
        &ns.0,
        "imagepolicy/guarded",
        "{.status.heldBack[0].gate}",
        "downgrade",
    );
    let policy = get_json(&ns.0, "imagepolicy/guarded");
    assert_eq!(policy["status"]["latestRef"]["tag"], "1.5.0");
    assert_eq!(policy["status"]["latestRef"]["digest"], digests[2].as_str());
    assert_eq!(policy["status"]["heldBack"][0]["tag"], "1.3.0");
    let conditions = policy["status"]["conditions"].as_array().unwrap();
    let ready = conditions.iter().find(|c| c["type"] == "Ready").unwrap();
    assert_eq!(ready["status"], "True");
    let refused =
        "held at 1.5.0: 1.5.0 is no longer listed and no tag ranks higher (downgrade refused)";
    assert!(
        ready["message"].as_str().unwrap().ends_with(refused),
        "{ready}"
    );
    // Held over further reconciles, announced once.
    request_reconcile(&ns.0, "imagepolicy/guarded", "e2e-downgrade-again");
    wait_for(
        &ns.0,
        "imagepolicy/guarded",
        "{.status.lastHandledReconcileAt}",
        "e2e-downgrade-again",
    );
    assert_eq!(
        get_json(&ns.0, "imagepolicy/guarded")["status"]["latestRef"]["tag"],
        "1.5.0"
    );
    let events: serde_json::Value = serde_json::from_str(&ok(kubectl(
        &["get", "events", "-n", &ns.0, "-o", "json"],
        None,
    )))
    .unwrap();
    let refusals: Vec<&serde_json::Value> = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["involvedObject"]["name"] == "guarded" && e["reason"] == "DowngradeRefused")
        .collect();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert_eq!(refusals[0]["message"], refused);
    assert_eq!(refusals[0]["count"].as_u64().unwrap_or(1), 1);

    // A spec change that still admits 1.5.0 keeps the guard (a new generation observed).
    let patch = |range: &str| {
        let body = format!(r#"{{"spec":{{"policy":{{"semver":{{"range":"{range}"}}}}}}}}"#);
        let args = [
            "patch",
            "-n",
            &ns.0,
            "imagepolicy/guarded",
            "--type=merge",
            "-p",
            &body,
        ];
        ok(kubectl(&args, None));
    };
    patch(">=1.0.0 <2.0.0");
    wait_for(
        &ns.0,
        "imagepolicy/guarded",
        "{.status.observedGeneration}",
        "2",
    );
    let policy = get_json(&ns.0, "imagepolicy/guarded");
    assert_eq!(policy["status"]["latestRef"]["tag"], "1.5.0", "{policy}");
    // A deliberate rollback: a spec that excludes the elected tag replaces it.
    patch(">=1.0.0 <1.5.0");
    wait_for(
        &ns.0,
        "imagepolicy/guarded",
        "{.status.latestRef.tag}",
        "1.3.0",
    );
    let policy = get_json(&ns.0, "imagepolicy/guarded");
    assert_eq!(policy["status"]["latestRef"]["digest"], digests[0].as_str());
    assert!(policy["status"]["heldBack"].is_null(), "{policy}");
    assert!(controller.stop().success());
}
