//! Functions stay short (DEVELOPERS.md: under 80 lines): every `fn` of `src/` outside its tests,
//! from its signature to its closing brace, at most [`MAX_FUNCTION_LINES`] lines, unless
//! [`EXCEPTIONS`] names it with the reason. Read from the text: a function ends at the first
//! line after its opening brace that closes at the indentation its `fn` began at, as rustfmt
//! lays it out.

use std::path::{Path, PathBuf};

const MAX_FUNCTION_LINES: usize = 80;

/// Functions over the bound on purpose: `file:function`, and why.
const EXCEPTIONS: &[(&str, &str)] = &[];

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The `.rs` files of `dir`, tests' files and folders aside.
fn production_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() && name != "tests" {
            production_files(&path, out);
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// Each function of `text` before its `#[cfg(test)]` module: its name and its length in lines.
fn functions(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let Some(name) = fn_name(line) else {
            i += 1;
            continue;
        };
        let indent = line.len() - line.trim_start().len();
        let Some(open) = (i..lines.len()).find(|&j| {
            let l = lines[j].trim_end();
            l.ends_with('{') || l.ends_with(';') || (l.ends_with('}') && l.contains('{'))
        }) else {
            break;
        };
        let end = lines[open].trim_end();
        if end.ends_with(';') {
            i = open + 1;
            continue;
        }
        if end.ends_with('}') {
            found.push((name, open - i + 1));
            i = open + 1;
            continue;
        }
        let close = (open + 1..lines.len())
            .find(|&k| {
                let l = lines[k];
                l.len() - l.trim_start().len() == indent && l.trim_start().starts_with('}')
            })
            .unwrap_or(lines.len() - 1);
        found.push((name, close - i + 1));
        i = close + 1;
    }
    found
}

/// The name of the function a line declares, if it declares one.
fn fn_name(line: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "fn")?;
    let before_ok = words[..at].iter().all(|w| {
        matches!(*w, "pub" | "async" | "const" | "unsafe" | "extern") || w.starts_with("pub(")
    });
    let name: String = words
        .get(at + 1)?
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (before_ok && !name.is_empty()).then_some(name)
}

#[test]
fn functions_of_src_stay_under_80_lines() {
    let mut files = Vec::new();
    production_files(&src(), &mut files);
    files.sort();
    let mut long = Vec::new();
    let mut counted = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(src()).unwrap().display().to_string();
        for (name, lines) in functions(&text) {
            counted += 1;
            let key = format!("{shown}:{name}");
            if lines > MAX_FUNCTION_LINES && !EXCEPTIONS.iter().any(|(e, _)| *e == key) {
                long.push(format!("{key} ({lines} lines)"));
            }
        }
    }
    assert!(
        counted > 1000,
        "only {counted} functions read: the reading is broken"
    );
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines: {long:#?}"
    );
}

/// The reading counts a function from its signature to its closing brace, and stops at the
/// tests.
#[test]
fn a_function_is_read_from_its_signature_to_its_brace() {
    let text = "pub(crate) async fn one(\n    a: u8,\n) -> u8 {\n    a\n}\n\nfn two() {}\nfn \
                three();\nimpl X {\n    fn four(&self) {\n        if x {\n        }\n    }\n}\n\
                #[cfg(test)]\nfn five() {\n}\n";
    assert_eq!(
        functions(text),
        [
            ("one".to_string(), 5),
            ("two".to_string(), 1),
            ("four".to_string(), 4)
        ]
    );
}
