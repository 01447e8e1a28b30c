//! Controller benchmark: `cargo bench --bench controller`. N ImageRepositories of T tags
//! each (1,000, or 10,000 for `1000x10000`), on the in-test HTTP registry, reconciled in one scan cycle by the controller's own
//! reconcile in its own process: `image-reflector scan` (4 at a time, as `run --concurrent 4`,
//! with the filesystem tag store). Reports the cycle's wall time, registry requests per scan,
//! the process's CPU time (wait4) and its own peak RSS (VmHWM), and TCP connections.
//!
//! What this leaves out of `run`: the API server's watch cache of the N objects and the status
//! writes; the registry, credentials, store and reconcile paths are the same code.

mod common;
#[path = "../tests/it/support/fault_server.rs"]
#[allow(dead_code)]
mod fault_server;

use common::{run_scenarios, wait_measured};
use fault_server::{FaultServer, Reply};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

fn scenario(name: &str) {
    let (repositories, tags) = match name.split_once('x') {
        Some((n, t)) => (n.parse().expect("repositories"), t.parse().expect("tags")),
        None => (name.parse().expect("a repository count"), 1000),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let list: Vec<String> = (0..tags)
        .map(|i| format!("1.{}.{}", i / 100, i % 100))
        .collect();
    let body =
        serde_json::to_vec(&serde_json::json!({ "name": "bench/app", "tags": list })).unwrap();
    let server = runtime.block_on(FaultServer::start(move |_| {
        Reply::status(200).body(body.clone())
    }));
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("repositories.yaml");
    let mut file = std::fs::File::create(&manifests).unwrap();
    for i in 0..repositories {
        writeln!(
            file,
            "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n\
             metadata: {{name: app-{i}, namespace: bench}}\nspec: {{image: {}/bench/app-{i}, interval: 5m}}",
            server.host()
        )
        .unwrap();
    }
    drop(file);
    let started = Instant::now();
    // Reaped by `wait4` below, which also gives its rusage (std's `wait` does not).
    #[allow(clippy::zombie_processes)]
    let child = Command::new(env!("CARGO_BIN_EXE_image-reflector"))
        .args(["scan", "--concurrent", "4", "-f"])
        .arg(&manifests)
        .arg("--storage-path")
        .arg(dir.path().join("store"))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let usage = wait_measured(&child);
    let wall = started.elapsed();
    assert_eq!(usage.exit_code, 0, "scan failed");
    let requests = server.seen().len();
    let cpu = usage.cpu_seconds;
    println!(
        "| {repositories} × {tags} | {wall:.2?} | {:.2} | {cpu:.2} s | {:.1} MiB | {} |",
        requests as f64 / repositories as f64,
        usage.peak_rss_kib as f64 / 1024.0,
        server.connections(),
    );
    let stored = std::fs::read_dir(dir.path().join("store/imagerepository/bench"))
        .unwrap()
        .count();
    assert_eq!(stored, repositories, "every repository's tags were stored");
}

fn main() {
    run_scenarios(
        "controller",
        "| repositories × tags | scan cycle (wall) | registry requests per scan | CPU (user+sys) | peak RSS | TCP connections |\n|---|---|---|---|---|---|",
        &["100", "1000", "1000x10000"],
        scenario,
    );
}
