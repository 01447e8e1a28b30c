//! A change to what a policy trusts counts at once (issue 87, item 5): the controller watches
//! the metadata of the Secrets its policies trust, and a key rotated, revoked or deleted is
//! judged within seconds, not at the policy's next timer (an hour here: the repository's
//! interval, which is also when held tags are checked again).

use crate::support::cluster::*;
use crate::support::distribution::{Distribution, Variant};
use crate::support::images::{key, payload, public_pem_block, sign};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn a_rotated_or_revoked_key_counts_at_once() {
    install_crds();
    let registry = Distribution::start(Variant::default());
    let repository = format!("{}/trust/app", registry.host);
    let mut digests = Vec::new();
    for (tag, salt, signer) in [("1.0.0", "a", 3), ("2.0.0", "b", 4)] {
        let digest = registry
            .push_dated("trust/app", tag, "amd64", None, salt)
            .await;
        let signature = sign(&key(signer), payload(&repository, &digest));
        registry
            .push_signatures("trust/app", &digest, &[signature])
            .await;
        digests.push(digest);
    }
    let ns = Namespace(format!("image-reflector-trust-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let secret = |seed: u8| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: cosign-keys, namespace: {}}}\n\
             stringData:\n  cosign.pub: |\n{}",
            ns.0,
            public_pem_block(&key(seed))
        )
    };
    let manifests = format!(
        "{}---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n\
         metadata: {{name: app, namespace: {ns}}}\nspec: {{image: {repository}, interval: 1h}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: signed, namespace: {ns}}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n  \
         verify: {{provider: cosign, secretRef: {{name: cosign-keys}}}}\n",
        secret(3),
        ns = ns.0
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let controller = Controller::start(&ns.0, &kubeconfig);
    let policy = "imagepolicy/signed";
    let ready = r#"{.status.conditions[?(@.type=="Ready")].reason}"#;
    wait_for(&ns.0, policy, "{.status.latestRef.tag}", "1.0.0");

    // Rotated to the key that signed 2.0.0: elected, with no reconcile requested.
    ok(kubectl(&["apply", "-f", "-"], Some(&secret(4))));
    wait_for(&ns.0, policy, "{.status.latestRef.tag}", "2.0.0");
    wait_for(&ns.0, policy, ready, "Succeeded");

    // Revoked (a key that signed nothing): nothing verifies, the policy says so.
    ok(kubectl(&["apply", "-f", "-"], Some(&secret(5))));
    wait_for(&ns.0, policy, ready, "NoEligibleTag");
    let status = get_json(&ns.0, policy)["status"].clone();
    let held = status["heldBack"].as_array().unwrap();
    assert!(held.iter().all(|h| h["gate"] == "verify"), "{status}");

    // Back to the first key, then the Secret deleted: held again, naming the Secret.
    ok(kubectl(&["apply", "-f", "-"], Some(&secret(3))));
    wait_for(&ns.0, policy, "{.status.latestRef.tag}", "1.0.0");
    wait_for(&ns.0, policy, ready, "Succeeded");
    ok(kubectl(
        &["delete", "-n", &ns.0, "secret/cosign-keys"],
        None,
    ));
    wait_for(&ns.0, policy, ready, "GateCheckFailed");
    let message = get_json(&ns.0, policy)["status"]["conditions"].to_string();
    assert!(message.contains("cosign-keys"), "{message}");
    assert!(controller.stop().success());
}
