//! A release's provenance (hack/release-provenance.py, as `make release` runs it) names its
//! source by the tag only when the tag names the commit: a release of an untagged commit names
//! the commit alone, never `refs/tags/VERSION`.

use crate::support::root;
use serde_json::{json, Value};
use std::process::Command;

fn provenance(reference: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, name).unwrap();
        path.display().to_string()
    };
    let (lock, sbom) = (file("Cargo.lock"), file("sbom.cdx.json"));
    file("image-reflector-linux-amd64");
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let out = Command::new("python3")
        .arg(root().join("hack/release-provenance.py"))
        .args(["--version", "v0.1.0", "--commit", commit])
        .args([
            "--source",
            "https://github.com/image-reflector/image-reflector",
        ])
        .args(["--repo", "registry.example/image-reflector"])
        .args(["--image-digest", &format!("sha256:{}", "a".repeat(64))])
        .args([
            "--binaries",
            &dir.path().display().to_string(),
            "--lock",
            &lock,
        ])
        .args([
            "--rustc",
            "rustc",
            "--cargo",
            "cargo",
            "--rustflags",
            "",
            "--epoch",
            "0",
        ])
        .args(["--sbom", &sbom, "--ref", reference])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let statement: Value = serde_json::from_slice(&out.stdout).unwrap();
    let dependency = &statement["predicate"]["buildDefinition"]["resolvedDependencies"][0];
    assert_eq!(dependency["digest"], json!({"gitCommit": commit}));
    statement
}

#[test]
fn a_tagged_release_names_its_tag_and_an_untagged_one_its_commit_alone() {
    let source = "git+https://github.com/image-reflector/image-reflector";
    let tagged = provenance("refs/tags/v0.1.0");
    let definition = &tagged["predicate"]["buildDefinition"];
    assert_eq!(
        definition["externalParameters"]["source"],
        json!({"uri": source, "ref": "refs/tags/v0.1.0"})
    );
    assert_eq!(
        definition["resolvedDependencies"][0]["uri"],
        format!("{source}@refs/tags/v0.1.0")
    );
    let untagged = provenance("");
    let definition = &untagged["predicate"]["buildDefinition"];
    assert_eq!(
        definition["externalParameters"]["source"],
        json!({"uri": source})
    );
    assert_eq!(definition["resolvedDependencies"][0]["uri"], source);
    assert!(!untagged.to_string().contains("refs/tags"));
}
