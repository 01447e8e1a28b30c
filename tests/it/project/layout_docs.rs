//! docs/development.md's Layout names every file of `src/` (issue 75, item 6): a file added
//! without a line there fails here, so the map stays the territory.

use std::path::{Path, PathBuf};

/// The `.rs` files of `dir` that the map should name: tests and module roots aside.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if name != "tests" {
                files(&path, out);
            }
        } else if name.ends_with(".rs")
            && !["tests.rs", "mod.rs", "lib.rs", "main.rs"].contains(&name.as_str())
        {
            out.push(path);
        }
    }
}

/// The files of `src` whose name `layout` does not hold as a word.
fn unnamed(src: &Path, layout: &str) -> Vec<String> {
    let mut all = Vec::new();
    files(src, &mut all);
    let named = |name: &str| {
        layout.match_indices(name).any(|(at, _)| {
            let before = layout[..at].chars().next_back();
            let after = layout[at + name.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !word(before) && !word(after)
        })
    };
    let mut missing: Vec<String> = all
        .iter()
        .filter(|p| !named(&p.file_name().unwrap().to_string_lossy()))
        .map(|p| p.strip_prefix(src).unwrap().display().to_string())
        .collect();
    missing.sort();
    missing
}

fn layout() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/development.md")).unwrap();
    let start = doc.find("## Layout").expect("a Layout section");
    let end = doc[start..].find("\n### ").map_or(doc.len(), |e| start + e);
    doc[start..end].to_string()
}

#[test]
fn the_layout_names_every_file_of_src() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let missing = unnamed(&src, &layout());
    assert!(
        missing.is_empty(),
        "files docs/development.md's Layout does not name (add a line saying what each is for): {missing:#?}"
    );
}

#[test]
fn the_check_finds_a_file_the_map_lacks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("room/tests")).unwrap();
    for file in [
        "room/named.rs",
        "room/unnamed.rs",
        "room/mod.rs",
        "room/tests/x.rs",
        "room/tests.rs",
    ] {
        std::fs::write(dir.path().join(file), "").unwrap();
    }
    let layout = "room/ named.rs (it is named), renamed.rs";
    assert_eq!(unnamed(dir.path(), layout), ["room/unnamed.rs"]);
}
