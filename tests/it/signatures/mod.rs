//! Signatures made by the real tools (`make e2e-signatures`): the cosign CLI v3 and v2 and the
//! notation CLI, built from their Go modules by `make sigtools`, sign images in a registry that
//! serves the OCI referrers API and in Debian's Distribution (which has none); `scan` and the
//! controller on a real API server must elect what they signed and hold back the rest with a
//! reason that names what failed. Ignored by default; their names hold no `e2e`, so `make e2e`
//! does not run them.

mod cosign;
mod keyless;
mod notation;
mod scanned;

/// Applies `objects` (written for the namespace `team`) in a new namespace, runs the controller
/// there with the installed RBAC until the ImagePolicy `policy` elects `tag`, and returns the
/// policy as the API server has it.
fn elected_in_cluster(objects: &str, policy: &str, tag: &str) -> serde_json::Value {
    use crate::support::cluster::*;
    install_crds();
    // Tests run at once in one process: each call its own namespace.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ns = Namespace(format!(
        "image-reflector-{policy}-{}-{call}",
        std::process::id()
    ));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let objects = objects.replace("namespace: team", &format!("namespace: {}", ns.0));
    ok(kubectl(&["apply", "-f", "-"], Some(&objects)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let controller = Controller::start(&ns.0, &kubeconfig);
    let object = format!("imagepolicy/{policy}");
    wait_for(&ns.0, &object, "{.status.latestRef.tag}", tag);
    let got = get_json(&ns.0, &object);
    assert!(controller.stop().success());
    got
}

/// Pushes an image under each `(tag, salt)` to `repository`; their digests by tag.
async fn push_tags(
    registry: &crate::support::distribution::Distribution,
    repository: &str,
    tags: &[(&'static str, &str)],
) -> std::collections::BTreeMap<&'static str, String> {
    let mut digests = std::collections::BTreeMap::new();
    for (tag, salt) in tags {
        let digest = registry
            .push_dated(repository, tag, "amd64", None, salt)
            .await;
        digests.insert(*tag, digest);
    }
    digests
}
