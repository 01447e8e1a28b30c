//! The real notification-controller forwards our events: a `generic` Provider (a receiver on
//! loopback) and an Alert on our ImagePolicies and ImageRepositories. What the receiver gets
//! names the new tag and both digests for a digest change, and nothing comes of a reconcile that
//! changed nothing.

use super::until;
use crate::support::cluster::{
    install_crds, kubectl, ok, request_reconcile, wait_for, Controller, Namespace,
};
use crate::support::distribution::{Distribution, Variant};
use crate::support::fault_server::{FaultServer, Reply};
use crate::support::flux::{install_flux_crds, notification_controller};
use serde_json::Value;

/// The payloads the receiver got from notification-controller, about ImagePolicy `app`.
fn policy_payloads(receiver: &FaultServer) -> Vec<Value> {
    receiver
        .seen()
        .iter()
        .filter_map(|s| serde_json::from_slice::<Value>(&s.body).ok())
        .filter(|p| p["involvedObject"]["kind"] == "ImagePolicy")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster and Flux: make e2e-flux"]
async fn flux_notification_controller_forwards_tag_and_digest_changes() {
    install_crds();
    install_flux_crds();
    let registry = Distribution::start(Variant::default());
    let first = registry
        .push_image("demo/app", &["1.0.0".to_string()])
        .await;
    let receiver = FaultServer::start(|_| Reply::status(200)).await;
    let ns = Namespace(format!("image-reflector-flux-nc-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let objects = format!(
        "apiVersion: notification.toolkit.fluxcd.io/v1beta3\nkind: Provider\nmetadata: {{name: receiver, namespace: {ns}}}\n\
         spec: {{type: generic, address: 'http://{receiver}/hook'}}\n---\n\
         apiVersion: notification.toolkit.fluxcd.io/v1beta3\nkind: Alert\nmetadata: {{name: images, namespace: {ns}}}\n\
         spec: {{providerRef: {{name: receiver}}, eventSeverity: info, eventSources: [{{kind: ImagePolicy, name: '*'}}, {{kind: ImageRepository, name: '*'}}]}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{image: {host}/demo/app, interval: 1h}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: app}}, policy: {{semver: {{range: '>=1.0.0'}}}}, digestReflectionPolicy: Always, interval: 1h}}\n",
        ns = ns.0,
        receiver = receiver.host(),
        host = registry.host,
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&objects)));
    let (nc, events) = notification_controller(&ns.0).await;
    // (v1beta3 Alerts and Providers have no status: notification-controller reads them when an
    // event arrives.)
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = crate::support::cluster::install_and_controller_kubeconfig(dir.path());
    let events_addr = format!("--events-addr={events}");
    let controller = Controller::start_with(&ns.0, &kubeconfig, &[&events_addr]);
    let log = || {
        format!(
            "{:#?}\n--- notification-controller:\n{}",
            policy_payloads(&receiver),
            nc.log_text()
        )
    };

    // The first election.
    until(60, "the first election's payload", log, || {
        !policy_payloads(&receiver).is_empty()
    })
    .await;
    let payloads = policy_payloads(&receiver);
    let elected = &payloads[0];
    assert_eq!(elected["involvedObject"]["name"], "app", "{elected:#}");
    assert_eq!(
        elected["reportingController"], "image-reflector-controller",
        "{elected:#}"
    );
    let message = elected["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("resolved to 1.0.0 with digest {first}")),
        "{message}"
    );

    // A reconcile that changes nothing: no payload.
    request_reconcile(&ns.0, "imagepolicy/app", "nothing-new");
    wait_for(
        &ns.0,
        "imagepolicy/app",
        "{.status.lastHandledReconcileAt}",
        "nothing-new",
    );

    // The same tag re-pushed as new content: a payload naming the tag and both digests.
    let second = registry
        .push_image_variant("demo/app", &["1.0.0".to_string()], "b")
        .await;
    request_reconcile(&ns.0, "imagepolicy/app", "digest-change");
    until(60, "the digest change's payload", log, || {
        policy_payloads(&receiver).len() >= 2
    })
    .await;
    let payloads = policy_payloads(&receiver);
    assert_eq!(
        payloads.len(),
        2,
        "nothing for the reconcile that changed nothing: {payloads:#?}"
    );
    let changed = &payloads[1];
    let message = changed["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("resolved to 1.0.0 with digest {second}")),
        "{message}"
    );
    assert!(message.contains(&first), "the previous digest: {message}");
    // notification-controller keeps the metadata under our API group, without its prefix.
    assert_eq!(
        changed["metadata"],
        serde_json::json!({
            "latestTag": "1.0.0", "latestDigest": second,
            "previousTag": "1.0.0", "previousDigest": first,
            "revision": format!("1.0.0@{second}"),
        }),
        "{changed:#}"
    );
    assert!(controller.stop().success());
}
