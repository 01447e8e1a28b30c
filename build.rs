//! Stamps the version and the source commit into the binary.

use std::env;

fn main() {
    build_identity();
}

/// The version and source commit `--version` prints and the provenance names: `make release`
/// sets both (hack/release.sh); any other build is the crate's version with `-dev` and no
/// commit, so that a binary never claims a commit it may not have been built from.
fn build_identity() {
    for var in ["IMAGE_REFLECTOR_VERSION", "IMAGE_REFLECTOR_COMMIT"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let crate_version = env::var("CARGO_PKG_VERSION").unwrap();
    let version = env::var("IMAGE_REFLECTOR_VERSION")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| format!("{crate_version}-dev"));
    let commit = env::var("IMAGE_REFLECTOR_COMMIT")
        .ok()
        .filter(|c| c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=IMAGE_REFLECTOR_BUILD_VERSION={version}");
    println!("cargo:rustc-env=IMAGE_REFLECTOR_BUILD_COMMIT={commit}");
}
