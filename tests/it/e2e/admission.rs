//! The door on a real API server (issue 89, `config/admission/`): the ValidatingAdmissionPolicy
//! and its bindings, as users apply them, against a namespace's VerifiedDigests. Enforced: only
//! images pinned by a listed digest, in every container kind and every workload kind; warned:
//! admitted with the same words; unlabelled: untouched; no VerifiedDigests: denied.

use crate::support::cluster::*;
use crate::support::root;

const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
const REPO: &str = "registry.example/team/app";

/// Our CRDs and `config/admission`, as users apply it, server-side: both tests of this file
/// apply it at once (a client-side create of the same objects races).
pub(super) fn install_admission() {
    install_crds();
    let rendered = ok(kubectl(
        &[
            "kustomize",
            root().join("config/admission").to_str().unwrap(),
        ],
        None,
    ));
    let apply = ["apply", "--server-side", "--force-conflicts", "-f", "-"];
    ok(kubectl(&apply, Some(&rendered)));
    let crd = "crd/verifieddigests.admission.image-reflector.io";
    ok(kubectl(
        &["wait", "--for=condition=Established", "--timeout=60s", crd],
        None,
    ));
}

/// A namespace labelled for the door (`enforce`, `warn`), or not.
pub(super) fn namespace(suffix: &str, door: Option<&str>) -> Namespace {
    let ns = Namespace(format!(
        "image-reflector-door-{suffix}-{}",
        std::process::id()
    ));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    // No controller-manager runs here to make it, and Pods need it.
    ok(kubectl(
        &["create", "serviceaccount", "default", "-n", &ns.0],
        None,
    ));
    if let Some(mode) = door {
        let label = format!("image-reflector.io/admission={mode}");
        ok(kubectl(&["label", "namespace", &ns.0, &label], None));
    }
    ns
}

fn verified(ns: &str, digests: &[&str]) {
    let entries: Vec<String> = digests
        .iter()
        .map(|d| format!("{d}: 'ImagePolicy app: 1.0.0, elected'"))
        .collect();
    let object = format!(
        "apiVersion: admission.image-reflector.io/v1alpha1\nkind: VerifiedDigests\n\
         metadata: {{name: verified, namespace: {ns}}}\n\
         spec: {{count: {}, digests: {{{}}}}}\n",
        digests.len(),
        entries.join(", ")
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&object)));
}

pub(super) fn pod(ns: &str, name: &str, images: &[&str]) -> String {
    let containers: Vec<String> = images
        .iter()
        .enumerate()
        .map(|(i, image)| format!("{{name: c{i}, image: '{image}'}}"))
        .collect();
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {ns}}}\n\
         spec: {{containers: [{}]}}\n",
        containers.join(", ")
    )
}

/// `kubectl apply` of `manifest`: whether it was admitted, and what it said on stderr.
pub(super) fn apply(manifest: &str) -> (bool, String) {
    let out = kubectl(&["apply", "-f", "-"], Some(manifest));
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    (out.status.success(), said)
}

#[test]
#[ignore = "needs a cluster: make e2e"]
fn e2e_the_door_admits_only_verified_digests() {
    install_admission();
    let enforced = namespace("enforce", Some("enforce"));
    verified(&enforced.0, &[D1]);
    let unpinned = format!("{REPO}:1.0.0");
    // The API server takes the policy up within seconds of its creation.
    let mut denied = (true, String::new());
    for _ in 0..60 {
        denied = apply(&pod(&enforced.0, "probe", &[&unpinned]));
        if !denied.0 {
            break;
        }
        ok(kubectl(
            &["delete", "pod", "probe", "-n", &enforced.0, "--wait=false"],
            None,
        ));
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    let (admitted, said) = denied;
    assert!(!admitted, "an unpinned image in an enforced namespace");
    assert!(
        said.contains(&format!(
            "images not verified by image-reflector: {unpinned} (not pinned by a digest)"
        )),
        "{said}"
    );

    // Pinned by the verified digest, with or without its tag: admitted.
    let by_digest = format!("{REPO}@{D1}");
    let tag_and_digest = format!("{REPO}:1.0.0@{D1}");
    let other = format!("{REPO}@{D2}");
    for (name, image) in [("digest", &by_digest), ("tagged", &tag_and_digest)] {
        let (admitted, said) = apply(&pod(&enforced.0, name, &[image]));
        assert!(admitted, "{image}: {said}");
    }
    // A digest never elected here: denied, naming it and only it.
    let (admitted, said) = apply(&pod(&enforced.0, "two", &[&by_digest, &other]));
    assert!(!admitted);
    assert!(
        said.contains(&format!(
            "images not verified by image-reflector: {other} (its digest was not elected by a \
             gated ImagePolicy of this namespace)"
        )) && !said.contains(&format!("{by_digest} (")),
        "{said}"
    );
    workloads(&enforced.0, &by_digest, &other);

    // No VerifiedDigests in an enforced namespace: denied (fail closed).
    let empty = namespace("empty", Some("enforce"));
    let (admitted, said) = apply(&pod(&empty.0, "any", &[&by_digest]));
    assert!(!admitted, "{said}");
    // Warned: admitted, with the same words as a warning.
    let warned = namespace("warn", Some("warn"));
    verified(&warned.0, &[D1]);
    let (admitted, said) = apply(&pod(&warned.0, "tag", &[&unpinned]));
    assert!(admitted, "{said}");
    assert!(
        said.contains("Warning") && said.contains("(not pinned by a digest)"),
        "{said}"
    );
    // Unlabelled: untouched.
    let plain = namespace("plain", None);
    let (admitted, said) = apply(&pod(&plain.0, "tag", &[&unpinned]));
    assert!(admitted && !said.contains("Warning"), "{said}");
    exempted(&enforced.0, &by_digest);
    tenants_cannot_write();
}

/// A repository exempted by a patch of the policy, as docs/admission.md says: its images pass
/// whatever their tag (a sidecar another admission plugin injects); a name that merely starts
/// like it does not; nothing else changes.
fn exempted(ns: &str, verified: &str) {
    let patch = r#"[{"op": "replace", "path": "/spec/variables/3/expression",
                    "value": "['registry.example:5000/mesh/proxy']"}]"#;
    let policy = "validatingadmissionpolicy/image-reflector-verified-images";
    ok(kubectl(
        &["patch", policy, "--type=json", "-p", patch],
        None,
    ));
    let sidecar = "registry.example:5000/mesh/proxy:1.2";
    let mut admitted = (false, String::new());
    for i in 0..60 {
        admitted = apply(&pod(ns, &format!("meshed{i}"), &[verified, sidecar]));
        if admitted.0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    assert!(admitted.0, "{}", admitted.1);
    let lookalike = "registry.example:5000/mesh/proxy-evil:1";
    let (admitted, said) = apply(&pod(ns, "lookalike", &[verified, lookalike]));
    assert!(
        !admitted && said.contains(&format!("{lookalike} (not pinned")),
        "{said}"
    );
    let restore = r#"[{"op": "replace", "path": "/spec/variables/3/expression", "value": "[]"}]"#;
    ok(kubectl(
        &["patch", policy, "--type=json", "-p", restore],
        None,
    ));
}

/// A namespace's tenants, with Kubernetes' own `admin` and `edit` roles there, cannot create or
/// change what the door reads: those roles are aggregated (by kube-controller-manager, which
/// this API server runs without) from the ClusterRoles labelled `aggregate-to-admin` or
/// `aggregate-to-edit`, and none that may write VerifiedDigests is so labelled.
fn tenants_cannot_write() {
    let roles = ok(kubectl(&["get", "clusterroles", "-o", "json"], None));
    let roles: serde_json::Value = serde_json::from_str(&roles).unwrap();
    let any = |list: &serde_json::Value, wanted: &[&str]| {
        list.as_array()
            .into_iter()
            .flatten()
            .any(|v| v == "*" || wanted.iter().any(|w| v == w))
    };
    let mut writers = Vec::new();
    for role in roles["items"].as_array().unwrap() {
        let writes = role["rules"].as_array().into_iter().flatten().any(|rule| {
            any(&rule["apiGroups"], &["admission.image-reflector.io"])
                && any(&rule["resources"], &["verifieddigests"])
                && any(&rule["verbs"], &["create", "patch", "update", "delete"])
        });
        if writes {
            let name = role["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let labels = &role["metadata"]["labels"];
            for tenant in ["admin", "edit"] {
                let label = format!("rbac.authorization.k8s.io/aggregate-to-{tenant}");
                assert!(
                    labels[&label] != "true",
                    "{name} is aggregated into {tenant}"
                );
            }
            writers.push(name);
        }
    }
    // The check sees the roles it is about: ours and cluster-admin (every group).
    assert!(
        writers
            .iter()
            .any(|n| n == "image-reflector-verified-digests-writer")
            && writers.iter().any(|n| n == "cluster-admin"),
        "{writers:?}"
    );
}

/// Every workload kind's template and every container kind is read.
fn workloads(ns: &str, good: &str, bad: &str) {
    let template = |init: &str, main: &str, restart: &str| {
        format!(
            "{{metadata: {{labels: {{app: a}}}}, spec: {{restartPolicy: {restart}, \
             initContainers: [{{name: i, image: '{init}'}}], containers: [{{name: m, image: '{main}'}}]}}}}"
        )
    };
    let kinds = |init: &str, main: &str| {
        let (t, job) = (
            template(init, main, "Always"),
            template(init, main, "Never"),
        );
        let selector = "selector: {matchLabels: {app: a}}";
        [
            format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d, namespace: {ns}}}\nspec: {{{selector}, template: {t}}}\n"),
            format!("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: s, namespace: {ns}}}\nspec: {{{selector}, serviceName: s, template: {t}}}\n"),
            format!("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: ds, namespace: {ns}}}\nspec: {{{selector}, template: {t}}}\n"),
            format!("apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j, namespace: {ns}}}\nspec: {{template: {job}}}\n"),
            format!("apiVersion: batch/v1\nkind: CronJob\nmetadata: {{name: cj, namespace: {ns}}}\nspec: {{schedule: '0 * * * *', jobTemplate: {{spec: {{template: {job}}}}}}}\n"),
        ]
    };
    for manifest in kinds(bad, good) {
        let (admitted, said) = apply(&manifest);
        assert!(!admitted, "an unverified initContainer: {manifest}");
        assert!(said.contains(&format!("{bad} (its digest")), "{said}");
    }
    for manifest in kinds(good, good) {
        let (admitted, said) = apply(&manifest);
        assert!(admitted, "{manifest}: {said}");
    }
}
