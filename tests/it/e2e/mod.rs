//! End-to-end checks against a real API server (`make e2e`, needs KUBECONFIG and kubectl).
//! Ignored by default: CI has no cluster. They create one namespace and delete it after.

mod admission;
mod admission_keeper;
mod cloud;
mod downgrade;
mod events_bundle;
mod fair_shares;
mod gates;
mod kube_version;
mod log_volume;
mod operations;
mod samples;
mod security;
mod tenants;
mod trusted_keys;

use crate::support::cluster::*;

#[test]
#[ignore = "needs a cluster: make e2e"]
fn e2e_crds_install_default_validate_and_serve_v1beta2() {
    install_crds();
    let ns = Namespace(format!("image-reflector-e2e-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));

    let repo = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: r, namespace: {}}}\n\
         spec: {{image: ghcr.io/stefanprodan/podinfo, interval: 5m}}\n",
        ns.0
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&repo)));
    let got: serde_json::Value = serde_json::from_str(&ok(kubectl(
        &["get", "imagerepository", "r", "-n", &ns.0, "-o", "json"],
        None,
    )))
    .unwrap();
    assert_eq!(got["spec"]["provider"], "generic");
    assert_eq!(
        got["spec"]["exclusionList"],
        serde_json::json!(["^.*\\.sig$"])
    );
    assert_eq!(got["status"]["observedGeneration"], -1);

    let interval_without_always = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: p, namespace: {}}}\n\
         spec: {{imageRepositoryRef: {{name: r}}, policy: {{semver: {{range: 1.x}}}}, interval: 1m}}\n",
        ns.0
    );
    let out = kubectl(&["apply", "-f", "-"], Some(&interval_without_always));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "spec.interval is only accepted when spec.digestReflectionPolicy is set to 'Always'"
        ),
        "{err}"
    );

    let always_without_interval =
        interval_without_always.replace("interval: 1m", "digestReflectionPolicy: Always");
    let out = kubectl(&["apply", "-f", "-"], Some(&always_without_interval));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "spec.interval must be set when spec.digestReflectionPolicy is set to 'Always'"
        ),
        "{err}"
    );

    let v1beta2 = interval_without_always
        .replace(
            "image.toolkit.fluxcd.io/v1\n",
            "image.toolkit.fluxcd.io/v1beta2\n",
        )
        .replace(", interval: 1m", "");
    let out = kubectl(&["apply", "-f", "-"], Some(&v1beta2));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("v1beta2 ImagePolicy is deprecated, upgrade to v1"));
    let got: serde_json::Value = serde_json::from_str(&ok(kubectl(
        &[
            "get",
            "imagepolicies.v1.image.toolkit.fluxcd.io",
            "p",
            "-n",
            &ns.0,
            "-o",
            "json",
        ],
        None,
    )))
    .unwrap();
    assert_eq!(got["apiVersion"], "image.toolkit.fluxcd.io/v1");
    assert_eq!(got["spec"]["digestReflectionPolicy"], "Never");
}

#[tokio::test]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_controller_scans_stalls_reports_events_and_cleans_up() {
    use crate::support::distribution::{Distribution, Variant};
    install_crds();
    let registry = Distribution::start(Variant::default());
    let tags: Vec<String> = ["1.0.0", "1.1.0", "2.0.0", "2.0.0.sig"]
        .iter()
        .map(|t| t.to_string())
        .collect();
    registry.push_image("demo/app", &tags).await;
    let ns = Namespace(format!("image-reflector-run-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let manifests = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{image: {host}/demo/app, interval: 5m}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: bad, namespace: {ns}}}\n\
         spec: {{image: 'https://{host}/demo/app', interval: 5m}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: nosecret, namespace: {ns}}}\n\
         spec: {{image: {host}/demo/app, interval: 5m, secretRef: {{name: missing}}}}\n",
        ns = ns.0,
        host = registry.host
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let controller = Controller::start(&ns.0, &kubeconfig);

    let ready = "{.status.conditions[?(@.type==\"Ready\")].status}";
    let reason = "{.status.conditions[?(@.type==\"Ready\")].reason}";
    wait_for(&ns.0, "imagerepository/app", ready, "True");
    wait_for(
        &ns.0,
        "imagerepository/bad",
        "{.status.conditions[?(@.type==\"Stalled\")].reason}",
        "ImageURLInvalid",
    );
    wait_for(
        &ns.0,
        "imagerepository/nosecret",
        reason,
        "AuthenticationFailed",
    );

    let app: serde_json::Value = serde_json::from_str(&ok(kubectl(
        &["get", "imagerepository", "app", "-n", &ns.0, "-o", "json"],
        None,
    )))
    .unwrap();
    assert_eq!(
        app["metadata"]["finalizers"],
        serde_json::json!(["finalizers.fluxcd.io"])
    );
    let status = &app["status"];
    assert_eq!(status["lastScanResult"]["tagCount"], 3);
    assert_eq!(
        status["lastScanResult"]["latestTags"],
        serde_json::json!(["2.0.0", "1.1.0", "1.0.0"])
    );
    assert_eq!(
        status["canonicalImageName"],
        format!("{}/demo/app", registry.host)
    );
    assert_eq!(status["observedGeneration"], 1);
    let revision = status["lastScanResult"]["revision"].as_str().unwrap();
    assert!(revision.starts_with("sha256:"), "{revision}");

    // The columns Flux users read.
    let table = ok(kubectl(&["get", "imagerepositories", "-n", &ns.0], None));
    let line = table
        .lines()
        .find(|l| l.starts_with("app "))
        .expect("a row for app");
    let expected = format!("successful scan: found 3 tags with checksum {revision}");
    assert!(
        line.contains(&format!("{}/demo/app", registry.host))
            && line.contains("True")
            && line.contains(&expected),
        "{table}"
    );
    let bad = table
        .lines()
        .find(|l| l.starts_with("bad "))
        .expect("a row for bad");
    assert!(
        bad.contains("False") && bad.contains("should not include URL scheme; remove 'https://'"),
        "{table}"
    );
    let nosecret = table
        .lines()
        .find(|l| l.starts_with("nosecret "))
        .expect("a row for nosecret");
    assert!(
        nosecret
            .contains("failed to configure authentication options: secrets \"missing\" not found"),
        "{table}"
    );

    // Events, as kubectl shows them.
    let events = ok(kubectl(&["get", "events", "-n", &ns.0, "-o", "json"], None));
    let events: serde_json::Value = serde_json::from_str(&events).unwrap();
    let of = |name: &str| -> Vec<(String, String)> {
        events["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["involvedObject"]["name"] == name)
            .map(|e| {
                (
                    e["type"].as_str().unwrap().to_string(),
                    e["reason"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    assert_eq!(of("app"), [("Normal".to_string(), "Succeeded".to_string())]);
    assert_eq!(
        of("bad"),
        [("Warning".to_string(), "ImageURLInvalid".to_string())]
    );
    assert!(of("nosecret")
        .iter()
        .all(|e| *e == ("Warning".to_string(), "AuthenticationFailed".to_string())));
    assert_eq!(
        of("nosecret").len(),
        1,
        "an identical failure is not repeated"
    );

    // A reconcile request is handled and acknowledged.
    request_reconcile(&ns.0, "imagerepository/app", "e2e-1");
    wait_for(
        &ns.0,
        "imagerepository/app",
        "{.status.lastHandledReconcileAt}",
        "e2e-1",
    );

    // Deletion removes the stored tags, then the finalizer.
    let stored = controller
        .storage
        .join("imagerepository")
        .join(&ns.0)
        .join("app");
    assert!(stored.exists(), "tags stored at {}", stored.display());
    ok(kubectl(
        &[
            "delete",
            "-n",
            &ns.0,
            "imagerepository/app",
            "--timeout=60s",
        ],
        None,
    ));
    assert!(!stored.exists(), "the store entry went with the object");

    let status = controller.stop();
    assert!(
        status.success(),
        "SIGTERM ends the controller cleanly: {status}"
    );
}

// Multi-threaded: the notification receiver must answer while this thread blocks in kubectl.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_policies_elect_reflect_digests_migrate_and_notify() {
    use crate::support::distribution::{Distribution, Variant};
    use crate::support::fault_server::{FaultServer, Reply};
    install_crds();
    let registry = Distribution::start(Variant::default());
    let tags: Vec<String> = ["1.0.0", "1.1.0", "7", "12"]
        .iter()
        .map(|t| t.to_string())
        .collect();
    let old = registry.push_image_variant("demo/app", &tags, "old").await;
    let receiver = FaultServer::start(|_| Reply::status(200)).await;
    let ns = Namespace(format!("image-reflector-policies-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let host = &registry.host;
    let manifests = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{image: {host}/demo/app, interval: 5m}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: semver, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: app}}, policy: {{semver: {{range: 1.x}}}}, digestReflectionPolicy: Always, interval: 10m}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: alphabetical, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: app}}, policy: {{alphabetical: {{order: asc}}}}}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: numerical, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: app}}, filterTags: {{pattern: '^[0-9]+$'}}, policy: {{numerical: {{order: asc}}}}}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\nmetadata: {{name: migrated, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: app}}, policy: {{semver: {{range: 1.x}}}}}}\n",
        ns = ns.0
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    // A status written in v1beta2 form (Flux v0.x): the deprecated fields only.
    let v1beta2_status = format!(
        "{{\"status\": {{\"latestImage\": \"{host}/demo/app:1.0.0\", \"observedPreviousImage\": \"{host}/demo/app:0.9.0\"}}}}"
    );
    ok(kubectl(
        &[
            "patch",
            "-n",
            &ns.0,
            "imagepolicies.v1beta2.image.toolkit.fluxcd.io/migrated",
            "--subresource=status",
            "--type=merge",
            "-p",
            &v1beta2_status,
        ],
        None,
    ));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let events_addr = format!("--events-addr=http://{}/", receiver.host());
    let controller = Controller::start_with(&ns.0, &kubeconfig, &[&events_addr]);

    let tag = "{.status.latestRef.tag}";
    wait_for(&ns.0, "imagepolicy/semver", tag, "1.1.0");
    wait_for(&ns.0, "imagepolicy/alphabetical", tag, "7");
    wait_for(&ns.0, "imagepolicy/numerical", tag, "12");
    wait_for(&ns.0, "imagepolicy/migrated", tag, "1.1.0");
    let semver = get_json(&ns.0, "imagepolicy/semver");
    assert_eq!(
        semver["status"]["latestRef"],
        serde_json::json!({"name": format!("{host}/demo/app"), "tag": "1.1.0", "digest": old})
    );
    let migrated = get_json(&ns.0, "imagepolicy/migrated");
    assert!(
        migrated["status"].get("latestImage").is_none(),
        "{}",
        migrated["status"]
    );
    assert!(migrated["status"].get("observedPreviousImage").is_none());
    assert_eq!(
        migrated["status"]["observedPreviousRef"],
        serde_json::json!({"name": format!("{host}/demo/app"), "tag": "1.0.0"})
    );
    let table = ok(kubectl(&["get", "imagepolicies", "-n", &ns.0], None));
    let row = table.lines().find(|l| l.starts_with("semver ")).unwrap();
    assert!(
        row.contains(&format!("{host}/demo/app")) && row.contains("1.1.0") && row.contains("True"),
        "{table}"
    );

    // The tag is overwritten in the registry: a reconcile request sees the new digest.
    let new = registry.push_image_variant("demo/app", &tags, "new").await;
    request_reconcile(&ns.0, "imagepolicy/semver", "e2e-digest");
    wait_for(
        &ns.0,
        "imagepolicy/semver",
        "{.status.latestRef.digest}",
        &new,
    );
    let expected = format!("Latest image tag for {host}/demo/app resolved to 1.1.0 with digest {new} (previously {host}/demo/app:1.1.0@{old})");
    wait_for(
        &ns.0,
        "imagepolicy/semver",
        "{.status.conditions[?(@.type==\"Ready\")].message}",
        &expected,
    );
    let events: serde_json::Value = serde_json::from_str(&ok(kubectl(
        &["get", "events", "-n", &ns.0, "-o", "json"],
        None,
    )))
    .unwrap();
    let notes: Vec<&str> = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["involvedObject"]["name"] == "semver" && e["type"] == "Normal")
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert!(notes.contains(&expected.as_str()), "{notes:?}");
    let status = controller.stop();
    assert!(status.success());
    // Forwarded to the notification-controller stand-in (sent before the Kubernetes Event).
    let forwarded: Vec<serde_json::Value> = receiver
        .seen()
        .iter()
        .map(|s| serde_json::from_slice(&s.body).unwrap())
        .collect();
    let digest_change = forwarded
        .iter()
        .find(|n| n["message"] == expected.as_str())
        .unwrap_or_else(|| panic!("the digest change was forwarded: {forwarded:?}"));
    assert_eq!(digest_change["involvedObject"]["kind"], "ImagePolicy");
    assert_eq!(digest_change["severity"], "info");
    // As notification-controller passes it to an Alert: both digests reach it.
    let (alert, _) = crate::controller::notify::as_an_alert_sees_it(digest_change);
    assert_eq!(alert["previousDigest"], old);
    assert_eq!(alert["latestDigest"], new);
    assert_eq!(alert["revision"], format!("1.1.0@{new}"));
}
