//! docs/install.md's kustomizations work as written: rendered by kubectl's kustomize over
//! Flux's components as their Go modules install them (image-reflector-controller's
//! `config/default`, which `make flux` copies, and Flux's other CRDs), the bootstrap one and
//! the patches of the flux-operator's `FluxInstance` (kustomize patches, which the operator
//! applies with kustomize; the operator itself is not run here) both give our image and
//! exactly our CRDs, one of each, Flux's other objects untouched.

use crate::support::cluster::{kubectl, ok};
use crate::support::flux::bin_dir;
use crate::support::{root, run_bin};
use serde_json::{json, Value};
use std::path::Path;

const IMAGE: &str = "registry.example.com/platform/image-reflector:v0.1.0";

/// The ```yaml block after `<!-- install_docs: NAME -->` in docs/install.md.
fn documented(name: &str) -> String {
    let text = std::fs::read_to_string(root().join("docs/install.md")).unwrap();
    let marker = format!("<!-- install_docs: {name} -->");
    let after = text.split_once(&marker).expect(&marker).1;
    let block = after.split_once("```yaml\n").expect("a yaml block").1;
    block.split_once("```").expect("its end").0.to_string()
}

/// Flux's components, as `gotk-components.yaml` would hold them, and a `gotk-sync.yaml`.
pub(super) fn flux_components(dir: &Path) {
    let config = bin_dir().join("image-reflector-controller.config/default");
    let mut components = ok(kubectl(&["kustomize", config.to_str().unwrap()], None));
    for crd in std::fs::read_dir(bin_dir().join("crds")).unwrap() {
        components.push_str("---\n");
        components.push_str(&std::fs::read_to_string(crd.unwrap().path()).unwrap());
    }
    std::fs::write(dir.join("gotk-components.yaml"), components).unwrap();
    let sync = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\n\
        metadata: {name: flux-system, namespace: flux-system}\n\
        spec: {interval: 1m, ref: {branch: main}, url: 'ssh://git@example.com/fleet'}\n";
    std::fs::write(dir.join("gotk-sync.yaml"), sync).unwrap();
}

pub(super) fn rendered(dir: &Path) -> Vec<Value> {
    let out = ok(kubectl(&["kustomize", dir.to_str().unwrap()], None));
    serde_saphyr::from_multiple(&out).unwrap()
}

fn ours() -> Vec<Value> {
    let out = run_bin(&["crds"], None);
    assert!(out.status.success());
    serde_saphyr::from_multiple(&String::from_utf8(out.stdout).unwrap()).unwrap()
}

/// `image` in Flux's Deployment, our CRDs whole, one of each, Flux's others still there.
pub(super) fn check_swapped(objects: &[Value], image: &str) {
    let deployment = objects
        .iter()
        .find(|o| {
            o["kind"] == "Deployment" && o["metadata"]["name"] == "image-reflector-controller"
        })
        .expect("Flux's Deployment");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        image
    );
    for crd in ours() {
        let name = &crd["metadata"]["name"];
        let same: Vec<&Value> = objects
            .iter()
            .filter(|o| o["kind"] == "CustomResourceDefinition" && &o["metadata"]["name"] == name)
            .collect();
        assert_eq!(same.len(), 1, "{name}");
        let (rendered, ours) = (
            numbers_as_floats(&same[0]["spec"]),
            numbers_as_floats(&crd["spec"]),
        );
        assert!(rendered == ours, "{name}: not our schema, whole");
    }
    let flux_crd = objects.iter().any(|o| {
        o["kind"] == "CustomResourceDefinition"
            && o["metadata"]["name"] == "gitrepositories.source.toolkit.fluxcd.io"
    });
    assert!(flux_crd, "Flux's other CRDs stay");
}

/// `value` with every number a float: kustomize writes our `minimum: 0.0` as `0`.
fn numbers_as_floats(value: &Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(items) => Value::Array(items.iter().map(numbers_as_floats).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), numbers_as_floats(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[test]
#[ignore = "needs Flux's modules and kubectl: make e2e-flux"]
fn install_docs_the_bootstrap_kustomization_swaps_the_image_and_the_crds() {
    let dir = tempfile::tempdir().unwrap();
    flux_components(dir.path());
    let crds = run_bin(&["crds"], None);
    std::fs::write(dir.path().join("image-reflector-crds.yaml"), crds.stdout).unwrap();
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        documented("bootstrap"),
    )
    .unwrap();
    check_swapped(&rendered(dir.path()), IMAGE);
    // Without the CRD patch (the image-only swap), Flux's CRDs stay: ours is what changes them.
    let image_only = documented("bootstrap").replace("  - path: image-reflector-crds.yaml\n", "");
    std::fs::write(dir.path().join("kustomization.yaml"), image_only).unwrap();
    let objects = rendered(dir.path());
    let policy_crd = objects
        .iter()
        .find(|o| o["metadata"]["name"] == "imagepolicies.image.toolkit.fluxcd.io")
        .unwrap();
    assert!(numbers_as_floats(&policy_crd["spec"]) != numbers_as_floats(&ours()[1]["spec"]));
}

#[test]
#[ignore = "needs Flux's modules and kubectl: make e2e-flux"]
fn install_docs_the_flux_instance_patches_swap_the_image_and_the_crds() {
    let dir = tempfile::tempdir().unwrap();
    flux_components(dir.path());
    let instance: Value = serde_saphyr::from_str(&documented("flux-instance")).unwrap();
    assert_eq!(instance["kind"], "FluxInstance");
    let mut patches = instance["spec"]["kustomize"]["patches"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    // What the docs say to paste after them.
    let printed = run_bin(&["crds", "--patches"], None);
    assert!(printed.status.success());
    let crd_patches: Vec<Value> =
        serde_saphyr::from_str(&String::from_utf8(printed.stdout).unwrap()).unwrap();
    patches.extend(crd_patches);
    let kustomization = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": ["gotk-components.yaml"], "patches": patches,
    });
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        serde_json::to_string(&kustomization).unwrap(),
    )
    .unwrap();
    check_swapped(&rendered(dir.path()), IMAGE);
}

/// `FLUX_SPEC_FIELDS` is Flux's own ImagePolicy v1 spec, two levels deep (what
/// `src/api/beyond_flux.rs` classes ours against), read from Flux's CRD.
#[test]
#[ignore = "needs Flux's modules: make e2e-flux"]
fn fluxs_imagepolicy_spec_has_exactly_the_fields_classed_as_fluxs() {
    let path = bin_dir().join(
        "image-reflector-controller.config/crd/bases/image.toolkit.fluxcd.io_imagepolicies.yaml",
    );
    let crd: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v1 = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "v1")
        .unwrap();
    let spec = &v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    let mut fields = std::collections::BTreeSet::new();
    for (name, property) in spec.as_object().unwrap() {
        fields.insert(name.clone());
        if name == "filterTags" || name == "policy" {
            for inner in property["properties"].as_object().unwrap().keys() {
                fields.insert(format!("{name}.{inner}"));
            }
        }
    }
    let classed = image_reflector::api::FLUX_SPEC_FIELDS
        .iter()
        .map(|f| f.to_string())
        .collect();
    assert_eq!(fields, classed);
}
