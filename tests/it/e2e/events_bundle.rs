//! `--tls-ca-bundle` through the controller on a real API server (issue 92, item 1; Flux's RFC
//! #6032 client flag): the notification-controller's CA is a ConfigMap of the controller's
//! namespace (Flux's `flux-ca-bundle`), created after the controller started and read through a
//! Role of that namespace, as Flux's own leader-election Role grants it. Once it is there, the
//! controller's events go over TLS verified against it, with the projected token.

use crate::support::cluster::*;
use crate::support::distribution::{Distribution, Pki, Variant};
use crate::support::fault_server::{FaultServer, Reply};
use crate::support::write;
use std::time::{Duration, Instant};

/// Lets the controller's ServiceAccount read the namespace's ConfigMaps.
fn reader_role(ns: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: ca-bundle-reader, namespace: {ns}}}\n\
         rules: [{{apiGroups: [''], resources: [configmaps], verbs: [get, list, watch]}}]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: ca-bundle-reader, namespace: {ns}}}\n\
         roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: ca-bundle-reader}}\n\
         subjects: [{{kind: ServiceAccount, name: image-reflector-controller, namespace: image-reflector-system}}]\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_events_are_verified_with_the_tls_ca_bundle_configmap() {
    image_reflector::registry::install_crypto_provider();
    let pki = Pki::new();
    let receiver = FaultServer::start_tls(&pki.server_cert, &pki.server_key, |seen| {
        match seen.header("authorization") == Some("Bearer e2e-token") {
            true => Reply::status(202),
            false => Reply::status(401),
        }
    })
    .await;
    let registry = Distribution::start(Variant::default());
    registry.push_image("bundle/app", &["1.0.0".into()]).await;
    let ns = Namespace(format!("image-reflector-bundle-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    ok(kubectl(&["apply", "-f", "-"], Some(&reader_role(&ns.0))));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let token = write(dir.path(), "token", "e2e-token");
    let flags = [
        format!("--events-addr=https://{}/", receiver.addr),
        "--tls-ca-bundle=flux-ca-bundle".to_string(),
        format!("--events-token-file={token}"),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let controller =
        Controller::start_with_env(&ns.0, &kubeconfig, &flags, &[("RUNTIME_NAMESPACE", &ns.0)]);

    // The bundle appears after the controller started; then an object makes an event.
    let ca = write(dir.path(), "ca.crt", &pki.ca);
    let from = format!("--from-file=ca.crt={ca}");
    ok(kubectl(
        &["create", "configmap", "flux-ca-bundle", "-n", &ns.0, &from],
        None,
    ));
    std::thread::sleep(Duration::from_secs(2));
    let repository = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {}}}\n\
         spec: {{image: {}/bundle/app, interval: 1h}}\n",
        ns.0, registry.host
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&repository)));
    let deadline = Instant::now() + Duration::from_secs(60);
    let delivered = || {
        let seen = receiver.seen();
        seen.iter()
            .any(|s| s.method == "POST" && s.header("authorization") == Some("Bearer e2e-token"))
    };
    while !delivered() {
        assert!(
            Instant::now() < deadline,
            "no event over verified TLS: {:?}",
            receiver.seen().len()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(controller.stop().success());
}
