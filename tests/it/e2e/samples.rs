//! `config/samples` on a real API server (`make e2e`): `kubectl apply -k` works on a cluster
//! that has only `default`, because the kustomization creates the namespaces it uses first.

use crate::support::cluster::{install_crds, kubectl, ok};
use crate::support::root;

#[test]
#[ignore = "needs a cluster: make e2e"]
fn e2e_samples_apply_on_an_empty_cluster() {
    install_crds();
    let samples = root().join("config/samples");
    let samples = samples.to_str().unwrap();

    // Kustomize puts the Namespaces before the objects in them, so a cluster without them
    // (kubectl applies in that order) gets them first.
    let rendered = ok(kubectl(&["kustomize", samples], None));
    let kinds: Vec<&str> = rendered
        .lines()
        .filter_map(|l| l.strip_prefix("kind: "))
        .collect();
    let first_other = kinds.iter().position(|k| *k != "Namespace").unwrap();
    assert_eq!(
        &kinds[..first_other],
        ["Namespace", "Namespace"],
        "{kinds:?}"
    );
    assert!(!kinds[first_other..].contains(&"Namespace"), "{kinds:?}");
    // Deleting the samples deletes their namespaces: never one that Flux or a cluster owns.
    let namespaces: Vec<&str> = rendered
        .split("\n---\n")
        .filter(|doc| doc.contains("\nkind: Namespace\n"))
        .filter_map(|doc| doc.lines().find_map(|l| l.strip_prefix("  name: ")))
        .collect();
    assert_eq!(namespaces, ["image-platform", "team-a"], "{rendered}");

    let applied = ok(kubectl(&["apply", "-k", samples], None));
    for object in [
        "namespace/team-a",
        "namespace/image-platform",
        "imagerepository.image.toolkit.fluxcd.io/base-images",
        "imagepolicy.image.toolkit.fluxcd.io/alpine",
    ] {
        assert!(applied.contains(object), "{object} not applied:\n{applied}");
    }
    let label = ok(kubectl(
        &[
            "get",
            "namespace",
            "team-a",
            "-o",
            "jsonpath={.metadata.labels.tenant}",
        ],
        None,
    ));
    assert_eq!(label, "team-a");
    // Applying again changes nothing and fails nothing.
    let again = ok(kubectl(&["apply", "-k", samples], None));
    assert!(!again.contains("created"), "{again}");

    // Clean up the image objects; namespaces stay (nothing collects them on this server).
    let rendered_objects: Vec<String> = std::fs::read_dir(root().join("config/samples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n != "kustomization.yaml" && n != "namespaces.yaml")
        })
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    for file in &rendered_objects {
        ok(kubectl(&["delete", "--wait=false", "-f", file], None));
    }
}
