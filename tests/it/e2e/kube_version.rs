//! The Kubernetes the end-to-end tests ran on is the release pinned in tests/kube/go.mod, and so
//! is the kubectl they drive it with: a binary cache left from another pin cannot pass for it.
//! Against a cluster of your own (`KUBECONFIG=... make e2e`), say which release it runs with
//! `E2E_KUBE_VERSION=v1.x.y`; the check then holds the server to that.

use crate::support::cluster::*;
use crate::support::root;

/// The `k8s.io/kubernetes` requirement of tests/kube/go.mod, the one place the version is written
/// (the `tool` lines name its packages, `k8s.io/kubernetes/cmd/...`, and are not requirements).
fn pinned_version() -> String {
    let go_mod = std::fs::read_to_string(root().join("tests/kube/go.mod")).unwrap();
    // `require k8s.io/kubernetes vX` or, as go mod tidy writes it, a line of a require block.
    let pins: Vec<&str> = go_mod
        .lines()
        .map(|line| line.trim().trim_start_matches("require").split_whitespace())
        .filter_map(|mut words| match (words.next(), words.next()) {
            (Some("k8s.io/kubernetes"), Some(version)) => Some(version),
            _ => None,
        })
        .collect();
    assert_eq!(
        pins.len(),
        1,
        "tests/kube/go.mod requires k8s.io/kubernetes once: {pins:?}"
    );
    pins[0].to_string()
}

fn git_version(json: &str, key: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(json).unwrap();
    let version = &value[key]["gitVersion"];
    version
        .as_str()
        .unwrap_or_else(|| panic!("no {key}.gitVersion in {json}"))
        .to_string()
}

#[test]
#[ignore = "needs a cluster: make e2e"]
fn e2e_runs_on_the_pinned_kubernetes_with_its_kubectl() {
    let pinned = pinned_version();
    assert!(pinned.starts_with("v1."), "{pinned}");
    let expected = std::env::var("E2E_KUBE_VERSION").unwrap_or_else(|_| pinned.clone());

    let server: serde_json::Value =
        serde_json::from_str(&ok(kubectl(&["get", "--raw", "/version"], None))).unwrap();
    assert_eq!(
        server["gitVersion"], expected,
        "the API server is not the release the tests expect (tests/kube/go.mod pins {pinned}; \
         run `make kube`, or set E2E_KUBE_VERSION for a cluster of your own)"
    );
    let client = ok(kubectl(&["version", "--client", "-o", "json"], None));
    assert_eq!(
        git_version(&client, "clientVersion"),
        pinned,
        "the kubectl on PATH is not the one built from tests/kube/go.mod"
    );
}
