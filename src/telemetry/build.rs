//! What this binary is: the version and source commit `make release` stamped on it (build.rs),
//! printed by `--version`, exported as `image_reflector_build_info` and named by the release's
//! provenance, so a running controller can be traced to the commit it was built from.

/// The release version (`v0.1.0`), or the crate's version with `-dev` outside `make release`.
pub const VERSION: &str = env!("IMAGE_REFLECTOR_BUILD_VERSION");

/// The full source commit of a release build, `unknown` for any other build.
pub const COMMIT: &str = env!("IMAGE_REFLECTOR_BUILD_COMMIT");

/// `--version`'s text after the program's name: `v0.1.0 (commit 0123…)`.
pub const DESCRIPTION: &str = concat!(
    env!("IMAGE_REFLECTOR_BUILD_VERSION"),
    " (commit ",
    env!("IMAGE_REFLECTOR_BUILD_COMMIT"),
    ")"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_names_the_version_and_the_commit() {
        assert_eq!(DESCRIPTION, format!("{VERSION} (commit {COMMIT})"));
        assert!(COMMIT == "unknown" || COMMIT.len() == 40, "{COMMIT}");
        assert!(!VERSION.is_empty());
    }
}
