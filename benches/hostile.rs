//! Hostile registry benchmark: `cargo bench --bench hostile`. The shape of the attack in
//! docs/security.md: a registry whose repositories list 16 linked pages, each just under the
//! 64 MiB page limit, of tags no registry that follows the OCI spec can hold (60,000 of
//! ~1,000 bytes a page), or of the longest valid tags (128 bytes, 440,000 a page). Four such
//! ImageRepositories are scanned at once by `image-reflector scan --concurrent 4` (the
//! controller's own reconcile and registry client); its peak RSS is its own VmHWM.
//! A scan may fail (a budget stops it): what is measured is the memory it took to get there.
//! Then the fair shares (hostile/fair.rs): the worst wait a tenant that behaves sees while
//! another holds each shared resource.

mod common;
#[path = "hostile/fair.rs"]
mod fair;
#[path = "../tests/it/support/fault_server.rs"]
#[allow(dead_code)]
mod fault_server;

use common::{run_scenarios, wait_measured};
use fault_server::{FaultServer, Reply};
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

const PAGES: usize = 16;
/// Scanned at once (`HOSTILE_REPOSITORIES` to try others).
fn repositories() -> usize {
    std::env::var("HOSTILE_REPOSITORIES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4)
}

fn scenario(name: &str) {
    let (count, length) = match name {
        "invalid-1000b" => (60_000, 1000),
        "valid-128b" => (440_000, 128),
        other => panic!("unknown scenario {other}"),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // One page body shared by every page: tags are the same text, pages differ by Link.
    let tags: Vec<String> = (0..count)
        .map(|i| format!("{i:08}{}", "x".repeat(length - 8)))
        .collect();
    let body = Arc::new(serde_json::to_vec(&serde_json::json!({ "tags": tags })).unwrap());
    drop(tags);
    let page_bytes = body.len();
    let server = runtime.block_on(FaultServer::start(move |seen| {
        let page: usize = seen.query("last").and_then(|l| l.parse().ok()).unwrap_or(0);
        let reply = Reply::status(200).body(body.as_ref().clone());
        if page + 1 < PAGES {
            let next = format!("{}?n=1000&last={}", seen.path(), page + 1);
            reply.header("Link", &format!("<{next}>; rel=\"next\""))
        } else {
            reply
        }
    }));
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("repositories.yaml");
    let mut file = std::fs::File::create(&manifests).unwrap();
    for i in 0..repositories() {
        writeln!(
            file,
            "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n\
             metadata: {{name: hostile-{i}, namespace: bench}}\nspec: {{image: {}/bench/hostile-{i}, interval: 5m}}",
            server.host()
        )
        .unwrap();
    }
    drop(file);
    let started = Instant::now();
    // Reaped by `wait4` below, which also gives its rusage (std's `wait` does not).
    #[allow(clippy::zombie_processes)]
    let child = Command::new(env!("CARGO_BIN_EXE_image-reflector"))
        .args(["scan", "--concurrent", "4", "-o", "yaml", "-f"])
        .arg(&manifests)
        .arg("--storage-path")
        .arg(dir.path().join("store"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let usage = wait_measured(&child);
    let status = usage.exit_code;
    let wall = started.elapsed();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.unwrap(), &mut out).unwrap();
    if std::env::var_os("HOSTILE_VERBOSE").is_some() {
        eprintln!("{out}");
    }
    // What each repository's Ready said, by reason.
    let failed = out.matches("ReadOperationFailed").count();
    let ready = out.matches("successful scan").count();
    println!(
        "| {name} | {} × {PAGES} pages of {:.1} MiB | {wall:.1?} | {:.1} MiB | {ready} scanned, {failed} refused (exit {status}) | {} |",
        repositories(),
        page_bytes as f64 / (1 << 20) as f64,
        usage.peak_rss_kib as f64 / 1024.0,
        server.seen().len(),
    );
}

fn main() {
    let run = |name: &str| match name.strip_prefix("fair-") {
        Some(_) => fair::scenario(name),
        None => scenario(name),
    };
    // One scenario asked for by name (run_scenarios runs each as its own process).
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && a != "hostile")
    {
        return run_scenarios("hostile", "", &[], run);
    }
    run_scenarios(
        "hostile",
        "| scenario | repositories | wall | peak RSS | outcome | requests |\n|---|---|---|---|---|---|",
        &["invalid-1000b", "valid-128b"],
        run,
    );
    run_scenarios(
        "hostile",
        "\n| resource | the attack | the other tenant's wait | the bound stated |\n|---|---|---|---|",
        fair::SCENARIOS,
        run,
    );
}
