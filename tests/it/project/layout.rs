//! The code's layout, as docs/development.md states it: modules only point down (no file
//! reaches, through its imports, a file that reaches it back), and no file is longer than
//! [`MAX_LINES`]. Read from the `use` lines and paths of `src/`, outside `#[cfg(test)]`
//! modules; a `pub use` in a `mod.rs` is followed to the file that defines the name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a source file may be (docs/development.md: "about 400 lines").
const MAX_LINES: usize = 420;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every library file, by its module path (`["controller", "shared", "keys"]`).
fn modules() -> BTreeMap<Vec<String>, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&src(), &mut files);
    files
        .into_iter()
        .filter(|f| !f.ends_with("main.rs"))
        .map(|f| {
            let relative = f.strip_prefix(src()).unwrap().with_extension("");
            let mut path: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(path.last().map(String::as_str), Some("mod" | "lib")) {
                path.pop();
            }
            (path, f)
        })
        .collect()
}

/// The file's text before its `#[cfg(test)]` tests module, without comments.
fn code(text: &str) -> String {
    let end = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    text[..end]
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `a::{b, c::{d}}` → `a::b`, `a::c::d`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap().trim().to_string()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap()];
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, ch) in inner.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(expand)
        .map(|p| match p.as_str() {
            "self" => prefix.trim_end_matches("::").to_string(),
            _ => format!("{prefix}{p}"),
        })
        .collect()
}

/// The paths a file names: its `use` trees (re-exports apart) and inline `crate::`/`super::`
/// paths. Returns (imports, re-exports).
fn paths(code: &str) -> (Vec<String>, Vec<String>) {
    let (mut imports, mut reexports) = (Vec::new(), Vec::new());
    let statement = regex::Regex::new(r"(?m)^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);").unwrap();
    for found in statement.captures_iter(code) {
        let expanded = expand(&found[2]);
        match found.get(1) {
            Some(_) => reexports.extend(expanded),
            None => imports.extend(expanded),
        }
    }
    let inline = regex::Regex::new(r"\b(?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+").unwrap();
    imports.extend(inline.find_iter(code).map(|m| m.as_str().to_string()));
    (imports, reexports)
}

/// The file a path from `module` lands in, following `pub use` re-exports of a `mod.rs`.
fn resolve(
    module: &[String],
    path: &str,
    files: &BTreeMap<Vec<String>, PathBuf>,
    reexports: &BTreeMap<Vec<String>, BTreeMap<String, String>>,
    via: &mut Vec<Vec<String>>,
) -> Option<Vec<String>> {
    let mut segments: Vec<&str> = path.split("::").map(str::trim).collect();
    // A file module's own `super` is its parent; a mod.rs speaks for the directory.
    let mut base: Vec<String> = module.to_vec();
    match segments.first().copied() {
        Some("crate") => {
            base.clear();
            segments.remove(0);
        }
        Some("super") => {
            while segments.first() == Some(&"super") {
                base.pop();
                segments.remove(0);
            }
        }
        Some("self") => {
            segments.remove(0);
        }
        Some(first) => {
            // A child module of a mod.rs (`use index::PolicyIndex`), else an external crate.
            let mut child = module.to_vec();
            child.push(first.to_string());
            if !files.contains_key(&child) {
                return None;
            }
        }
        None => return None,
    }
    let mut at = base;
    for segment in segments {
        let mut next = at.clone();
        next.push(segment.to_string());
        if files.contains_key(&next) {
            at = next;
            continue;
        }
        // A name re-exported by this module: the file that defines it, through this module
        // (`via`: a cycle through a re-export is a cycle too).
        if let Some(target) = reexports.get(&at).and_then(|r| r.get(segment)) {
            via.push(at.clone());
            return resolve(&at, target, files, reexports, via);
        }
        break;
    }
    Some(at)
}

#[test]
fn modules_only_point_down_and_files_stay_short() {
    let files = modules();
    let texts: BTreeMap<_, _> = files
        .iter()
        .map(|(m, f)| (m.clone(), std::fs::read_to_string(f).unwrap()))
        .collect();
    let mut long = Vec::new();
    for (module, text) in &texts {
        let lines = text.lines().count();
        if lines > MAX_LINES {
            long.push(format!("{} ({lines} lines)", files[module].display()));
        }
    }
    // Re-exports by name, per module: `pub use keys::{FINALIZER}` → FINALIZER → keys::FINALIZER.
    let mut reexports: BTreeMap<Vec<String>, BTreeMap<String, String>> = BTreeMap::new();
    for (module, text) in &texts {
        for path in paths(&code(text)).1 {
            let name = path.rsplit("::").next().unwrap().to_string();
            reexports
                .entry(module.clone())
                .or_default()
                .insert(name, path);
        }
    }
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, text) in &texts {
        for path in paths(&code(text)).0 {
            let mut via = Vec::new();
            if let Some(target) = resolve(module, &path, &files, &reexports, &mut via) {
                for target in via.into_iter().chain([target]) {
                    if target != *module {
                        edges.entry(module.clone()).or_default().insert(target);
                    }
                }
            }
        }
    }
    let cycles = strongly_connected(&edges);
    let named = |m: &Vec<String>| files[m].strip_prefix(src()).unwrap().display().to_string();
    let cycles: Vec<Vec<String>> = cycles
        .into_iter()
        .map(|c| c.iter().map(named).collect())
        .collect();
    assert!(cycles.is_empty(), "import cycles: {cycles:#?}");
    assert!(long.is_empty(), "files over {MAX_LINES} lines: {long:#?}");
    // The check sees the imports it is about: the kinds' rooms point into the shared ones.
    let keys: Vec<String> = ["controller", "object", "keys"].map(String::from).into();
    let policy_reconcile: Vec<String> = ["controller", "image_policy", "reconcile"]
        .map(String::from)
        .into();
    assert!(edges[&policy_reconcile].contains(&keys), "{edges:#?}");
    // The controller's shared rooms, lowest first: each reaches only those before it, and
    // none reaches a kind's room.
    let rooms = [
        "object", "door", "outcome", "events", "lookup", "feed", "schema", "frame",
    ];
    let kinds = ["image_policy", "image_repository"];
    let room_of = |m: &Vec<String>| (m.len() > 1 && m[0] == "controller").then(|| m[1].clone());
    for (module, targets) in &edges {
        let Some(from) = room_of(module) else {
            continue;
        };
        let Some(level) = rooms.iter().position(|r| *r == from) else {
            assert!(
                kinds.contains(&from.as_str()),
                "{} is in no room",
                named(module)
            );
            continue;
        };
        for target in targets.iter().filter(|t| t[0] == "controller") {
            let to = room_of(target).unwrap_or_default();
            let below = rooms[..=level].contains(&to.as_str());
            assert!(below, "{} reaches {}", named(module), named(target));
        }
    }
    // The pure rooms reach only the rooms below them and no crate that does I/O.
    let below: &[(&str, &[&str])] = &[
        ("reference", &["reference"]),
        ("verify", &["verify", "reference"]),
        ("policy", &["policy"]),
    ];
    let io = regex::Regex::new(r"\b(?:kube|k8s_openapi|reqwest|tokio|hyper)::").unwrap();
    for (room, allowed) in below {
        for (module, text) in texts
            .iter()
            .filter(|(m, _)| m.first().map(String::as_str) == Some(*room))
        {
            for target in edges.get(module).into_iter().flatten() {
                assert!(
                    allowed.contains(&target[0].as_str()),
                    "{} reaches {}",
                    named(module),
                    named(target)
                );
            }
            let code = code(text);
            let found = io.find(&code).map(|m| m.as_str());
            assert_eq!(found, None, "{} does I/O", named(module));
        }
    }
}

/// Tarjan's strongly connected components with more than one file.
fn strongly_connected(
    edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> Vec<Vec<Vec<String>>> {
    struct State<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<Vec<String>, usize>,
        low: BTreeMap<Vec<String>, usize>,
        stack: Vec<Vec<String>>,
        on_stack: BTreeSet<Vec<String>>,
        found: Vec<Vec<Vec<String>>>,
    }
    fn visit(v: &Vec<String>, s: &mut State<'_>) {
        let n = s.index.len();
        s.index.insert(v.clone(), n);
        s.low.insert(v.clone(), n);
        s.stack.push(v.clone());
        s.on_stack.insert(v.clone());
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(w, s);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v.clone(), low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v.clone(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(&w);
                let done = w == *v;
                component.push(w);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !state.index.contains_key(v) {
            visit(v, &mut state);
        }
    }
    state.found
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    // Two files importing each other, as error.rs and frame.rs once did.
    let a = vec!["a".to_string()];
    let b = vec!["b".to_string()];
    let edges = BTreeMap::from([
        (a.clone(), BTreeSet::from([b.clone()])),
        (b.clone(), BTreeSet::from([a.clone()])),
    ]);
    assert_eq!(strongly_connected(&edges).len(), 1);
    assert_eq!(
        expand("super::{a, b::{c, d as e}, self}"),
        ["super::a", "super::b::c", "super::b::d", "super"]
    );
}

/// A name used through a `mod.rs`'s re-export depends on that `mod.rs` too: record.rs taking
/// `super::election::MAX_INSPECTIONS` (defined in election/walk.rs) while election/mod.rs
/// imported record.rs was a cycle the check once missed.
#[test]
fn a_reexport_is_a_dependency_on_the_module_that_makes_it() {
    let m = |path: &[&str]| path.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let files = BTreeMap::from([
        (m(&["p"]), PathBuf::from("p/mod.rs")),
        (m(&["p", "record"]), PathBuf::from("p/record.rs")),
        (m(&["p", "election"]), PathBuf::from("p/election/mod.rs")),
        (
            m(&["p", "election", "walk"]),
            PathBuf::from("p/election/walk.rs"),
        ),
    ]);
    let reexports = BTreeMap::from([(
        m(&["p", "election"]),
        BTreeMap::from([("MAX".to_string(), "walk::MAX".to_string())]),
    )]);
    let mut via = Vec::new();
    let target = resolve(
        &m(&["p", "record"]),
        "super::election::MAX",
        &files,
        &reexports,
        &mut via,
    );
    assert_eq!(target, Some(m(&["p", "election", "walk"])));
    assert_eq!(via, [m(&["p", "election"])]);
}

/// What a room's code (its files, outside their tests) may not name: docs/development.md's
/// boundaries. The store knows no async and no Kubernetes; the registry, verification and
/// selection know no Kubernetes.
const FORBIDDEN: &[(&str, &[&str])] = &[
    (
        "store",
        &["async fn", ".await", "tokio", "kube::", "k8s_openapi"],
    ),
    (
        "registry",
        &["kube::", "k8s_openapi", "crate::controller", "crate::api"],
    ),
    (
        "verify",
        &[
            "kube::",
            "k8s_openapi",
            "crate::controller",
            "crate::registry",
        ],
    ),
    (
        "policy",
        &[
            "kube::",
            "k8s_openapi",
            "crate::controller",
            "crate::registry",
        ],
    ),
];

/// `(file, word)` for each forbidden word a room's code names.
fn boundary_violations(files: &BTreeMap<Vec<String>, String>) -> Vec<(String, &'static str)> {
    let mut found = Vec::new();
    for (path, text) in files {
        let Some(room) = path.first() else { continue };
        for (forbidden_room, words) in FORBIDDEN {
            if room != forbidden_room {
                continue;
            }
            let code = code(text);
            for word in *words {
                if code.contains(word) {
                    found.push((path.join("/"), *word));
                }
            }
        }
    }
    found
}

#[test]
fn rooms_keep_their_boundaries() {
    let files: BTreeMap<Vec<String>, String> = modules()
        .into_iter()
        .map(|(path, file)| (path, std::fs::read_to_string(file).unwrap()))
        .collect();
    assert_eq!(boundary_violations(&files), Vec::new());
    // Each rule finds its violation once planted.
    for (room, words) in FORBIDDEN {
        for word in *words {
            let planted = BTreeMap::from([(
                vec![room.to_string(), "planted".to_string()],
                format!("fn f() {{ {word} }}\n"),
            )]);
            assert_eq!(
                boundary_violations(&planted),
                [(format!("{room}/planted"), *word)],
                "{room}: {word}"
            );
        }
    }
}
