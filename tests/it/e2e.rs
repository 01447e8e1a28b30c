//! End-to-end checks against a real API server (`make e2e`, needs KUBECONFIG and kubectl).
//! Ignored by default: CI has no cluster. They create one namespace and delete it after.

use crate::support::{root, run};
use std::process::Output;

fn kubectl(args: &[&str], stdin: Option<&str>) -> Output {
    run("kubectl", args, stdin)
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "kubectl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

struct Namespace(String);

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = kubectl(&["delete", "namespace", &self.0, "--wait=false"], None);
    }
}

#[test]
#[ignore = "needs a cluster: make e2e"]
fn e2e_crds_install_default_validate_and_serve_v1beta2() {
    let crds = root().join("crds/crds.yaml");
    ok(kubectl(
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            crds.to_str().unwrap(),
        ],
        None,
    ));
    ok(kubectl(
        &[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/imagerepositories.image.toolkit.fluxcd.io",
            "crd/imagepolicies.image.toolkit.fluxcd.io",
        ],
        None,
    ));
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
