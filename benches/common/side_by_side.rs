//! `make bench-controller PEER=flux`: the three controllers' figures of each scenario in one
//! table, with the ratio of ours to the better of Flux's two storages in each column, and the
//! targets (issue: ours at most 1/4 of Flux's peak RSS, 1/3 of its CPU, 1/10 of its idle CPU,
//! 1/2 of its disk, no slower to all Ready, never more requests or writes per object).

use super::{mib, percentile, secs, Peer, Report};

const BEGIN: &str =
    "<!-- bench-controller-flux:begin (written by `make bench-controller PEER=flux`) -->";
const END: &str = "<!-- bench-controller-flux:end -->";

const HEAD: &str = "| controller | cold start to all Ready | peak RSS (whole run) | peak anonymous memory | idle RSS | CPU, cold start | CPU, idle | store on disk | registry requests per repository (pages + manifests) | API writes per object | steady cycle | warm restart: time, requests | triggered 100: p99 |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|";

/// The figures a ratio is taken of: smaller is better in each.
struct Figures {
    cold: f64,
    peak: f64,
    anon: f64,
    idle_rss: f64,
    cpu: f64,
    idle_cpu: Option<f64>,
    disk: f64,
    requests: f64,
    writes: f64,
    cycle: f64,
    warm_requests: f64,
    p99: f64,
}

fn figures(r: &Report) -> Figures {
    let n = r.repositories as f64;
    let mut sorted = r.triggered.clone();
    sorted.sort();
    let mut walls: Vec<_> = r.cycles.iter().map(|c| c.wall).collect();
    walls.sort();
    Figures {
        cold: r.cold.as_secs_f64(),
        peak: r.final_peak_kib as f64,
        anon: r.final_anon_kib as f64,
        idle_rss: r.idle_kib as f64,
        cpu: r.cold_cpu,
        idle_cpu: r.idle_cpu.map(|(c, _)| c),
        disk: r.final_store_bytes.max(r.store_bytes) as f64,
        requests: r.cold_requests.total() as f64 / n,
        writes: r.cold_writes as f64 / (2.0 * n),
        cycle: walls.get(walls.len() / 2).map_or(0.0, |w| w.as_secs_f64()),
        warm_requests: r.warm_requests.total() as f64,
        p99: if sorted.is_empty() {
            0.0
        } else {
            percentile(&sorted, 0.99).as_secs_f64()
        },
    }
}

fn row(r: &Report) -> String {
    let n = r.repositories as f64;
    let mut sorted = r.triggered.clone();
    sorted.sort();
    let mut walls: Vec<_> = r.cycles.iter().map(|c| c.wall).collect();
    walls.sort();
    format!(
        "| {} | {} | {} | {} | {} | {:.1} s | {} | {:.1} MB | {:.2} + {:.2} | {:.2} | {} | {}, {} | {} |",
        r.peer.label(),
        secs(r.cold),
        mib(r.final_peak_kib),
        mib(r.final_anon_kib),
        mib(r.idle_kib),
        r.cold_cpu,
        r.idle_cpu
            .map_or("-".into(), |(c, w)| match w.as_secs() {
                s if s % 60 == 0 => format!("{c:.3} s in {} min", s / 60),
                s => format!("{c:.3} s in {s} s"),
            }),
        r.final_store_bytes.max(r.store_bytes) as f64 / 1e6,
        r.cold_requests.tag_pages as f64 / n,
        (r.cold_requests.manifest_heads + r.cold_requests.manifest_gets) as f64 / n,
        r.cold_writes as f64 / (2.0 * n),
        walls.get(walls.len() / 2).map_or("-".into(), |w| secs(*w)),
        secs(r.warm),
        r.warm_requests.total(),
        if sorted.is_empty() { "-".into() } else { secs(percentile(&sorted, 0.99)) },
    )
}

/// ours ÷ the better (smaller) of Flux's two, per column; `-` where Flux's is zero.
fn ratio_row(ours: &Report, fluxes: &[&Report]) -> String {
    let o = figures(ours);
    let f: Vec<Figures> = fluxes.iter().map(|r| figures(r)).collect();
    let best = |pick: &dyn Fn(&Figures) -> f64| f.iter().map(pick).fold(f64::INFINITY, f64::min);
    let ratio = |mine: f64, theirs: f64| {
        if theirs > 0.0 && theirs.is_finite() {
            format!("{:.2}", mine / theirs)
        } else {
            "-".into()
        }
    };
    let idle = match (
        o.idle_cpu,
        f.iter().filter_map(|x| x.idle_cpu).reduce(f64::min),
    ) {
        (Some(mine), Some(theirs)) => ratio(mine, theirs),
        _ => "-".into(),
    };
    format!(
        "| **ours ÷ better Flux** | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        ratio(o.cold, best(&|x| x.cold)),
        ratio(o.peak, best(&|x| x.peak)),
        ratio(o.anon, best(&|x| x.anon)),
        ratio(o.idle_rss, best(&|x| x.idle_rss)),
        ratio(o.cpu, best(&|x| x.cpu)),
        idle,
        ratio(o.disk, best(&|x| x.disk)),
        ratio(o.requests, best(&|x| x.requests)),
        ratio(o.writes, best(&|x| x.writes)),
        ratio(o.cycle, best(&|x| x.cycle)),
        ratio(o.warm_requests, best(&|x| x.warm_requests)),
        ratio(o.p99, best(&|x| x.p99)),
    )
}

/// One table per scenario: the three controllers and the ratio row, each under a heading
/// `**N × T**` (what `write_docs` merges by).
pub fn tables(reports: &[Report]) -> String {
    let mut out = String::new();
    let mut names: Vec<&str> = reports.iter().map(|r| r.name.as_str()).collect();
    names.dedup();
    for name in names {
        let runs: Vec<&Report> = reports.iter().filter(|r| r.name == name).collect();
        let first = runs[0];
        out.push_str(&format!(
            "\n**{} × {}** (measured {} on `{}`, kube-apiserver {})\n\n{HEAD}\n",
            first.repositories,
            first.tags,
            today(),
            COMMIT.get_or_init(commit),
            server_version()
        ));
        for r in &runs {
            out.push_str(&row(r));
            out.push('\n');
        }
        let ours = runs.iter().find(|r| r.peer == Peer::Ours);
        let fluxes: Vec<&Report> = runs
            .iter()
            .copied()
            .filter(|r| r.peer != Peer::Ours)
            .collect();
        if let (Some(ours), false) = (ours, fluxes.is_empty()) {
            out.push_str(&ratio_row(ours, &fluxes));
            out.push('\n');
        }
    }
    out
}

/// The API server's version, as it reports it (`/version`), which every table names: the
/// controllers' figures depend on it (its watch, its pace).
fn server_version() -> String {
    let out = std::process::Command::new("kubectl")
        .args(["get", "--raw", "/version"])
        .output();
    out.ok()
        .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
        .and_then(|v| v["gitVersion"].as_str().map(String::from))
        .unwrap_or_else(|| "of unknown version".into())
}

/// The commit measured, taken as the run starts ([`note_commit`]).
static COMMIT: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Notes the commit measured, `+` when the work tree differs from it: called as the run starts,
/// since the tree may change while a run of hours goes on.
pub fn note_commit() {
    COMMIT.get_or_init(commit);
}

fn commit() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let head = git(&["rev-parse", "--short", "HEAD"]);
    if head.is_empty() {
        // Not a git checkout (or no git): say so rather than name nothing.
        return "an unknown commit".into();
    }
    let dirty = !git(&["status", "--porcelain", "--untracked-files=no"]).is_empty();
    format!("{head}{}", if dirty { "+" } else { "" })
}

fn today() -> String {
    std::process::Command::new("date")
        .arg("+%Y-%m-%d")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// The scenario tables of a section, keyed by their `**N × T**` heading, in order.
fn scenario_tables(section: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for block in section.split("\n**").skip(1) {
        let Some(close) = block.find("**") else {
            continue;
        };
        let key = block[..close].to_string();
        let text = format!("\n**{}", block.trim_end_matches('\n'));
        out.push((key, format!("{text}\n")));
    }
    out
}

/// Rewrites docs/benchmarks.md's side-by-side section: the scenarios of this run replace
/// their tables, the others stay as they were (each table says when it was measured), so
/// scenarios that take most of an hour each can be run one at a time.
pub fn write_docs(reports: &[Report]) {
    let path = format!("{}/docs/benchmarks.md", env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(&path).unwrap();
    let (Some(begin), Some(end)) = (doc.find(BEGIN), doc.find(END)) else {
        panic!("{path} has no {BEGIN} ... {END} section");
    };
    let mut merged = scenario_tables(&doc[begin..end]);
    for (key, table) in scenario_tables(&tables(reports)) {
        match merged.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = table,
            None => merged.push((key, table)),
        }
    }
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    let section = format!(
        "{BEGIN}\nOn `{}` ({cpus} CPUs), one controller after the other against the same API server, etcd and fake registry on that machine.\n{}{END}",
        host.trim(),
        merged.into_iter().map(|(_, t)| t).collect::<String>()
    );
    let updated = format!("{}{section}{}", &doc[..begin], &doc[end + END.len()..]);
    std::fs::write(&path, updated).unwrap();
    eprintln!("wrote {path}");
}
