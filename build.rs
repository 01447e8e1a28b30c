//! Lays out the release executable's code with the functions the controller runs side by side.
//!
//! An executable's code counts in a process's RSS page by page, and the kernel maps up to 64 KiB
//! around each page fault on it. Left in the compiler's order, the 4.4 MiB of functions a
//! controller runs are spread over all 16 MiB of code, and the pages around them come too: at
//! 400 repositories of 1,000 tags, 13.0 MiB of file pages at the peak, 8.3 with those functions
//! first, and the peak 21 MiB against 16 (docs/benchmarks.md, "The executable's hot code
//! together").
//!
//! `link/symbol-order.txt` names those functions, those an idle controller keeps running first,
//! then the hottest; `make symbol-order` writes it from runs of the controller under callgrind.
//! lld places them first in `.text` (`--symbol-ordering-file`). A name that is no longer in the
//! program (a dependency or the compiler changed its symbols) is skipped without a warning: the
//! build is as before, only less dense until the list is made again.
//!
//! Only where rustc links with lld by default (x86_64 Linux since Rust 1.90) and no other
//! linker was chosen, and only for the optimized profiles: debug builds have other symbols.

use std::env;
use std::path::{Path, PathBuf};

const ORDER: &str = "link/symbol-order.txt";

fn main() {
    build_identity();
    println!("cargo:rerun-if-changed={ORDER}");
    let target = env::var("TARGET").unwrap_or_default();
    let optimized = env::var("PROFILE").as_deref() == Ok("release");
    let other_linker = env::var_os("RUSTC_LINKER").is_some()
        || env::var("CARGO_ENCODED_RUSTFLAGS").is_ok_and(|flags| flags.contains("linker"));
    if target != "x86_64-unknown-linux-gnu" || !optimized || other_linker {
        return;
    }
    let order = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join(ORDER);
    if order.is_file() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={},--no-warn-symbol-ordering",
            order.display()
        );
    }
    // The link map beside the executable (`target/release/image-reflector.map`): it names the
    // function at each address of the executable, which has no symbol table. `make
    // symbol-order` reads it, and `hack/symbol-order.py --check` (after the Makefile's release
    // builds) says from it how many of the list's names this build still has. A benchmark's
    // build of the bin links after the release build and writes the same path with its own
    // symbols: read the map right after `cargo build --release`.
    if let Some(dir) = profile_dir() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,-Map={}",
            dir.join("image-reflector.map").display()
        );
    }
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

/// The directory the executable goes to: `OUT_DIR` is `<profile dir>/build/<package>-<hash>/out`.
fn profile_dir() -> Option<PathBuf> {
    let out = PathBuf::from(env::var_os("OUT_DIR")?);
    out.ancestors().nth(3).map(Path::to_path_buf)
}
