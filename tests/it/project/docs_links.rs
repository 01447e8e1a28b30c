//! docs/, config/ and the README cite only files in the repository: no team-internal
//! references (`flux-compat.md`, `decisions.md`, `../shared`), and every relative Markdown link
//! names a file that exists.

use crate::support::root;
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path
            .extension()
            .is_some_and(|e| e == "md" || e == "yaml" || e == "json")
        {
            out.push(path);
        }
    }
}

#[test]
fn docs_and_config_cite_only_files_in_the_repository() {
    let mut all = vec![root().join("README.md")];
    files(&root().join("docs"), &mut all);
    files(&root().join("config"), &mut all);
    let mut problems = Vec::new();
    for path in &all {
        let text = std::fs::read_to_string(path).unwrap();
        for outside in ["flux-compat.md", "decisions.md", "../shared", "shared/spec"] {
            if text.contains(outside) {
                problems.push(format!("{}: cites {outside}", path.display()));
            }
        }
        if path.extension().is_some_and(|e| e == "md") {
            // [text](target) with a relative target: the file must exist.
            for (i, _) in text.match_indices("](") {
                let rest = &text[i + 2..];
                let Some(end) = rest.find(')') else { continue };
                let target = rest[..end].split('#').next().unwrap_or_default();
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                if !path.parent().unwrap().join(target).exists() {
                    problems.push(format!(
                        "{}: link to {target} names no file",
                        path.display()
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}
