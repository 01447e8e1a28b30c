//! The fields beyond Flux's CRDs are listed once, from the API types
//! (`api::beyond_flux_paths`): CI's crd-diff allowances come from the binary
//! (`image-reflector crds --beyond-flux`), and every doc that lists them names each.

use crate::support::{root, run_bin};
use image_reflector::api::{beyond_flux_paths, BEYOND_FLUX};

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_binary_prints_the_paths_ci_allows() {
    let out = run_bin(&["crds", "--beyond-flux"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(printed, beyond_flux_paths());
    let ci = read(".ci/run");
    assert!(
        ci.contains("crds --beyond-flux"),
        ".ci/run takes the list from the binary"
    );
    assert!(
        !ci.contains("--allow-extra ImagePolicy"),
        ".ci/run keeps no list by hand"
    );
}

/// Each path names a property of our generated CRD: the list cannot name a field that is not
/// there (a renamed field fails here, not in CI's crd-diff).
#[test]
fn every_path_is_in_our_crd() {
    let crds: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(&read("crds/crds.yaml")).unwrap();
    let policy = crds
        .iter()
        .find(|c| c["spec"]["names"]["kind"] == "ImagePolicy")
        .unwrap();
    let v1 = policy["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "v1")
        .unwrap();
    for path in beyond_flux_paths() {
        let mut at = &v1["schema"]["openAPIV3Schema"];
        for part in path.strip_prefix("ImagePolicy.").unwrap().split('.') {
            at = &at["properties"][part];
        }
        assert!(at.is_object(), "{path} is not in crds/crds.yaml");
    }
}

#[test]
fn every_doc_that_lists_them_names_each() {
    // (doc, how it names a field)
    type Naming = fn(&str) -> String;
    let docs: [(&str, Naming); 4] = [
        ("docs/install.md", |f| format!("`spec.{f}`")),
        ("docs/compatibility.md", |f| format!("`spec.{f}")),
        ("docs/api.md", |f| format!("`{f}")),
        ("docs/operations.md", |f| format!("`{f}`")),
    ];
    let mut missing = Vec::new();
    for (doc, named) in docs {
        let text = read(doc);
        for field in BEYOND_FLUX {
            if !text.contains(&named(field)) {
                missing.push(format!("{doc}: {}", named(field)));
            }
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
}
