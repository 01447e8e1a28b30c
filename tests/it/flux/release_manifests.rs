//! A release's manifests (hack/release-manifests.sh, as `make release` runs it) install what
//! they say: `install.yaml` is config/default with only the image set, by digest; the `flux/`
//! Component over Flux's components (as bootstrap's gotk-components.yaml holds them) and the
//! FluxInstance patches each give Flux's Deployment our image by digest and our CRDs whole;
//! `manifests.tgz`, packed by Flux's own CLI, holds exactly those files.

use super::install_docs::{check_swapped, flux_components, rendered};
use crate::support::cluster::ok;
use crate::support::flux::bin_dir;
use crate::support::root;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const REPO: &str = "10.244.0.1:5443/image-reflector";

/// The manifests of a release whose image is `REPO@digest`, written to `dist`.
fn release_manifests(dist: &Path, digest: &str) {
    // kubectl: the one of make kube, first on PATH under make e2e-flux.
    let out = Command::new(root().join("hack/release-manifests.sh"))
        .args([env!("CARGO_BIN_EXE_image-reflector"), REPO, digest])
        .arg(dist)
        .env("FLUX_BIN_DIR", bin_dir())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "release-manifests.sh: {err}");
}

fn digest() -> String {
    format!("sha256:{}", "5e".repeat(32))
}

#[test]
#[ignore = "needs Flux's modules and kubectl: make e2e-flux"]
fn release_install_yaml_is_config_default_with_the_image_pinned_by_digest() {
    let dist = tempfile::tempdir().unwrap();
    release_manifests(dist.path(), &digest());
    let text = std::fs::read_to_string(dist.path().join("install.yaml")).unwrap();
    let mut installed: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
    let default = root().join("config/default");
    let mut expected = rendered(&default);
    assert_eq!(installed.len(), expected.len());
    let image = |objects: &mut Vec<Value>| -> Value {
        let deployment = objects
            .iter_mut()
            .find(|o| o["kind"] == "Deployment")
            .expect("the Deployment");
        deployment["spec"]["template"]["spec"]["containers"][0]["image"].take()
    };
    assert_eq!(image(&mut installed), json!(format!("{REPO}@{}", digest())));
    let unreleased = image(&mut expected);
    assert!(
        unreleased
            .as_str()
            .unwrap()
            .starts_with("ghcr.io/image-reflector/image-reflector:"),
        "{unreleased}"
    );
    assert!(
        installed == expected,
        "install.yaml differs from config/default beyond the image"
    );
}

#[test]
#[ignore = "needs Flux's modules and kubectl: make e2e-flux"]
fn release_flux_component_and_instance_patches_swap_fluxs_controller_by_digest() {
    let dist = tempfile::tempdir().unwrap();
    release_manifests(dist.path(), &digest());
    let image = format!("{REPO}@{}", digest());
    // Bootstrap: the release's flux/ beside gotk-components.yaml, as a component.
    let fleet = tempfile::tempdir().unwrap();
    flux_components(fleet.path());
    let component = fleet.path().join("image-reflector");
    std::fs::create_dir(&component).unwrap();
    for name in ["kustomization.yaml", "image-reflector-crds.yaml"] {
        std::fs::copy(dist.path().join("flux").join(name), component.join(name)).unwrap();
    }
    let kustomization = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
        resources: [gotk-components.yaml, gotk-sync.yaml]\ncomponents: [image-reflector]\n";
    std::fs::write(fleet.path().join("kustomization.yaml"), kustomization).unwrap();
    check_swapped(&rendered(fleet.path()), &image);
    // flux-operator: the patches file, pasted under spec.kustomize.patches.
    let text =
        std::fs::read_to_string(dist.path().join("flux/flux-instance-patches.yaml")).unwrap();
    let patches: Vec<Value> = serde_saphyr::from_str(&text).unwrap();
    let instance = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": ["gotk-components.yaml"], "patches": patches,
    });
    let operator = tempfile::tempdir().unwrap();
    flux_components(operator.path());
    std::fs::write(
        operator.path().join("kustomization.yaml"),
        serde_json::to_string(&instance).unwrap(),
    )
    .unwrap();
    check_swapped(&rendered(operator.path()), &image);
}

#[test]
#[ignore = "needs Flux's modules and kubectl: make e2e-flux"]
fn release_manifests_artifact_holds_the_manifests_and_packs_the_same_twice() {
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    release_manifests(first.path(), &digest());
    release_manifests(second.path(), &digest());
    let listing = ok(Command::new("tar")
        .arg("-tzf")
        .arg(first.path().join("manifests.tgz"))
        .output()
        .unwrap());
    let mut files: Vec<&str> = listing
        .lines()
        .map(|l| l.trim_start_matches("./"))
        .filter(|l| l.ends_with(".yaml"))
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "crds.yaml",
            "flux/flux-instance-patches.yaml",
            "flux/image-reflector-crds.yaml",
            "flux/kustomization.yaml",
            "install.yaml"
        ]
    );
    // The same inputs at another moment pack to the same bytes (the release's SHA256SUMS).
    let bytes = |dir: &Path| std::fs::read(dir.join("manifests.tgz")).unwrap();
    assert!(
        bytes(first.path()) == bytes(second.path()),
        "manifests.tgz is not reproducible"
    );
}
