//! `make bench-controller`: the real `image-reflector run` against a real API server (the one
//! in KUBECONFIG; the Makefile starts ../shared/tools/kube/apiserver when none is set) and an
//! in-repo fast fake registry (benches/common/fake_registry.rs), at Flux's large scenarios.
//! Each scenario: N ImageRepositories of T tags, one ImagePolicy each (semver, digest
//! reflection `Always`, `IfNotPresent` and `Never` in turn), measured through
//! - cold start: the controller starts on an empty store with every object created;
//!   until every policy is Ready with the highest tag (and the right digest);
//! - steady state: every repository rescanned on request, cycle after cycle, tags unchanged;
//! - warm restart: SIGTERM, and a new process on the same store, until every object was
//!   reconciled and it is quiet;
//! - triggered scans on that new process: a new tag pushed and `requestedAt` set on 1, then on
//!   100 repositories at once; the time until each policy's latestRef names it.
//!
//! `cargo bench --bench controller_run -- 1000x10000` runs one scenario and prints its rows;
//! without arguments every scenario runs and docs/benchmarks.md's section is rewritten.
//! `20000x100/2` is 20,000 of each kind shared by two processes (`--watch-label-selector`).
//!
//! `PEER=flux` (make bench-controller PEER=flux) runs each scenario three times, one after the
//! other on the same API server and fake registry: ours, then Flux's image-reflector-controller
//! (built by make flux) with its default storage (Badger), then with `FluxStorage=true`, each
//! with its defaults, `--concurrent` 4 like ours, and adds CPU over `BENCH_IDLE` idle seconds
//! (600 by default with a peer) with nothing due; the side-by-side tables go to their own
//! section of docs/benchmarks.md.
//!
//! Ours is `BENCH_BINARY` when set (`make bench-controller` sets the release build's copy, as
//! the image ships it), else cargo's build for the benchmark. Every controller starts with its
//! executable dropped from the page cache.

mod common;
#[path = "common/fake_registry.rs"]
mod fake_registry;
#[path = "common/side_by_side.rs"]
mod side_by_side;

use fake_registry::{Counts, FakeRegistry};
use futures::{StreamExt, TryStreamExt};
use image_reflector::api::{ImagePolicy, ImageRepository};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SCENARIOS: &[&str] = &["1000x10000", "5000x400", "10000x100"];
/// Run by default with ours alone: 20,000 objects of each kind in two shards of 10,000
/// (`--watch-label-selector=shard=<k>`), one process each, both processes' peaks reported.
const SHARDED: &[&str] = &["20000x100/2"];
const TRIGGERED: usize = 100;
const NEW_TAG: &str = "2.0.0";

/// The controller a run measures.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Peer {
    Ours,
    /// Flux's image-reflector-controller with its default storage (BadgerDB).
    Flux,
    /// Flux's image-reflector-controller with `--feature-gates=FluxStorage=true`.
    FluxStorage,
}

impl Peer {
    fn label(self) -> &'static str {
        match self {
            Peer::Ours => "image-reflector",
            Peer::Flux => "Flux v1.2.3, Badger",
            Peer::FluxStorage => "Flux v1.2.3, FluxStorage",
        }
    }

    /// The controllers `PEER` asks for: ours alone, or ours and Flux's with both storages.
    fn chosen() -> Vec<Peer> {
        match std::env::var("PEER").ok().as_deref() {
            None | Some("") => vec![Peer::Ours],
            Some("flux") => vec![Peer::Ours, Peer::Flux, Peer::FluxStorage],
            Some(other) => panic!("PEER is 'flux' or unset, not '{other}'"),
        }
    }

    /// The executable.
    fn binary(self) -> PathBuf {
        match self {
            // `make bench-controller` runs the release build's (BENCH_BINARY), as the image
            // ships it.
            Peer::Ours => std::env::var_os("BENCH_BINARY")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_image-reflector"))),
            Peer::Flux | Peer::FluxStorage => {
                let dir = std::env::var_os("FLUX_BIN_DIR")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| {
                        PathBuf::from(std::env::var("HOME").unwrap())
                            .join(".cache/image-reflector-flux/bin")
                    });
                let binary = dir.join("image-reflector-controller");
                assert!(binary.is_file(), "no {}: run `make flux`", binary.display());
                binary
            }
        }
    }

    /// The process, with the same watch scope, concurrency and verbosity.
    fn command(
        self,
        namespace: &str,
        storage: &Path,
        metrics: &str,
        selector: Option<&str>,
    ) -> Command {
        let mut command = Command::new(self.binary());
        if self == Peer::Ours {
            command.arg("run");
        }
        command
            .args([
                "--watch-all-namespaces=false",
                "--health-addr=127.0.0.1:0",
                "--log-level=error",
                "--concurrent=4",
            ])
            .arg(format!("--metrics-addr={metrics}"))
            .arg(format!("--storage-path={}", storage.display()))
            .env("RUNTIME_NAMESPACE", namespace);
        if self == Peer::FluxStorage {
            command.arg("--feature-gates=FluxStorage=true");
        }
        if let Some(selector) = selector {
            command.arg(format!("--watch-label-selector={selector}"));
        }
        command
    }
}

fn main() {
    side_by_side::note_commit();
    let chosen: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let all = chosen.is_empty();
    let names: Vec<&str> = if all && Peer::chosen().len() > 1 {
        SCENARIOS.to_vec()
    } else if all {
        SCENARIOS.iter().chain(SHARDED).copied().collect()
    } else {
        chosen.iter().map(String::as_str).collect()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    image_reflector::registry::install_crypto_provider();
    let mut reports = Vec::new();
    let peers = Peer::chosen();
    for name in names {
        for &peer in &peers {
            let report = runtime.block_on(scenario(name, peer));
            println!("{}", report.cold_row());
            println!("{}", report.warm_row());
            reports.push(report);
        }
    }
    if peers.len() > 1 {
        if all || std::env::var_os("BENCH_WRITE").is_some() {
            side_by_side::write_docs(&reports);
        }
        println!("{}", side_by_side::tables(&reports));
    } else if all {
        write_docs(&reports);
    } else if std::env::var_os("BENCH_WRITE").is_some() {
        update_rows(&reports);
    }
}

/// Every process starts with its executable read from disk, not from whatever page cache the
/// build or an earlier run left. The executable's pages a process has mapped count in its RSS,
/// and how many the kernel maps around each fault depends on how those pages came into the
/// cache: the same 400 x 1,000 run measured a 16.6 MiB peak on the binary the linker had just
/// written (the kernel mapped 4.6 MiB fewer of its pages around the faults) and 21.0 MiB on a
/// byte-identical copy of it. Read from disk, as on a node whose page cache let the image's
/// pages go, both controllers start alike; dirty pages are written first (the kernel keeps
/// those).
fn drop_from_page_cache(binary: &Path) {
    use std::os::fd::AsRawFd;
    let file =
        std::fs::File::open(binary).unwrap_or_else(|e| panic!("{} opens: {e}", binary.display()));
    file.sync_data()
        .unwrap_or_else(|e| panic!("{} syncs: {e}", binary.display()));
    // SAFETY: a valid descriptor for the call's duration; advice changes no memory of ours.
    let advised = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(advised, 0, "{} leaves the page cache", binary.display());
}

/// What one scenario measured.
struct Report {
    peer: Peer,
    name: String,
    repositories: usize,
    tags: usize,
    /// Processes sharing the objects by `--watch-label-selector` (1: one process, no selector).
    shards: usize,
    /// Each process's peak over the run, when there are several.
    shard_peaks_kib: Vec<u64>,
    cold: Duration,
    cold_peak_kib: u64,
    idle_kib: u64,
    cold_cpu: f64,
    store_bytes: u64,
    cold_requests: Counts,
    cold_writes: u64,
    cycles: Vec<Cycle>,
    warm: Duration,
    warm_peak_kib: u64,
    warm_cpu: f64,
    warm_requests: Counts,
    warm_writes: u64,
    triggered_one: Duration,
    triggered: Vec<Duration>,
    final_peak_kib: u64,
    /// The largest anonymous memory over the whole run (sampled every [`ANON_EVERY`]).
    final_anon_kib: u64,
    /// CPU seconds over `BENCH_IDLE` seconds with nothing due, and that window.
    idle_cpu: Option<(f64, Duration)>,
    /// The store's bytes on disk at the end.
    final_store_bytes: u64,
}

struct Cycle {
    wall: Duration,
    rss_kib: u64,
    requests: Counts,
    writes: u64,
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn secs(d: Duration) -> String {
    if d < Duration::from_secs(10) {
        format!("{:.2} s", d.as_secs_f64())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

impl Report {
    fn objects(&self) -> f64 {
        (2 * self.repositories) as f64
    }

    /// `1000 × 10000`, or `20000 × 100, 2 shards`: the start of the scenario's rows.
    fn label(&self) -> String {
        match self.shards {
            1 => format!("{} × {}", self.repositories, self.tags),
            n => format!("{} × {}, {n} shards", self.repositories, self.tags),
        }
    }

    /// A peak over the run: each process's when there are several (the largest is the figure).
    fn peaks(&self, largest: u64) -> String {
        match self.shard_peaks_kib.as_slice() {
            [] | [_] => mib(largest),
            each => each
                .iter()
                .map(|p| mib(*p))
                .collect::<Vec<_>>()
                .join(" and "),
        }
    }

    const COLD_HEAD: &str = "| scenario | cold start to all Ready | peak RSS | idle RSS | CPU | store | registry requests per repository (pages + HEADs) | API writes per object | steady cycle (wall) | RSS over the cycles | requests per cycle |\n|---|---|---|---|---|---|---|---|---|---|---|";

    fn cold_row(&self) -> String {
        let n = self.repositories as f64;
        let cycle_walls: Vec<Duration> = self.cycles.iter().map(|c| c.wall).collect();
        let median_wall = {
            let mut w = cycle_walls.clone();
            w.sort();
            w.get(w.len() / 2).copied().unwrap_or_default()
        };
        let rss = match (self.cycles.first(), self.cycles.last()) {
            (Some(first), Some(last)) => format!(
                "{} → {} ({} cycles)",
                mib(first.rss_kib),
                mib(last.rss_kib),
                self.cycles.len()
            ),
            _ => "-".into(),
        };
        let per_cycle = self
            .cycles
            .last()
            .map(|c| {
                format!(
                    "{} pages, {} HEADs, {:.2} API writes per repository",
                    c.requests.tag_pages,
                    c.requests.manifest_heads + c.requests.manifest_gets,
                    c.writes as f64 / n
                )
            })
            .unwrap_or_default();
        format!(
            "| {} | {} | {} | {} | {:.1} s | {:.1} MB | {:.2} + {:.2} | {:.2} | {} | {} | {} |",
            self.label(),
            secs(self.cold),
            mib(self.cold_peak_kib),
            mib(self.idle_kib),
            self.cold_cpu,
            self.store_bytes as f64 / 1e6,
            self.cold_requests.tag_pages as f64 / n,
            (self.cold_requests.manifest_heads + self.cold_requests.manifest_gets) as f64 / n,
            self.cold_writes as f64 / self.objects(),
            secs(median_wall),
            rss,
            per_cycle,
        )
    }

    const WARM_HEAD: &str = "| scenario | warm restart until quiet | its registry requests | its API writes | its peak RSS | its CPU | triggered, 1 repository | triggered, 100 at once: p50 | p99 | peak RSS of the run (both processes) |\n|---|---|---|---|---|---|---|---|---|---|";

    fn warm_row(&self) -> String {
        let mut sorted = self.triggered.clone();
        sorted.sort();
        format!(
            "| {} | {} | {} | {} | {} | {:.1} s | {} | {} | {} | {} |",
            self.label(),
            secs(self.warm),
            self.warm_requests.total(),
            self.warm_writes,
            mib(self.warm_peak_kib),
            self.warm_cpu,
            secs(self.triggered_one),
            secs(percentile(&sorted, 0.5)),
            secs(percentile(&sorted, 0.99)),
            self.peaks(self.final_peak_kib),
        )
    }
}

/// The controller's processes (one per shard) and what they report about themselves.
struct Controller {
    children: Vec<Child>,
    metrics: Vec<String>,
    /// The largest anonymous memory (`RssAnon`) any process had, sampled every
    /// [`ANON_EVERY`] until the controller stops: the kernel keeps no peak of it.
    anon_peak_kib: Arc<AtomicU64>,
    sampling: Arc<AtomicBool>,
}

/// How often anonymous memory is sampled: a burst shorter than this can be missed.
const ANON_EVERY: Duration = Duration::from_millis(20);

/// Samples the processes' `RssAnon` into `peak` until `sampling` is cleared.
fn sample_anon(pids: Vec<u32>, peak: Arc<AtomicU64>, sampling: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        while sampling.load(Ordering::Relaxed) {
            for pid in &pids {
                peak.fetch_max(status_field_kib(*pid, "RssAnon:"), Ordering::Relaxed);
            }
            std::thread::sleep(ANON_EVERY);
        }
    });
}

/// A `/proc/<pid>/status` field in KiB; 0 when the process or the field is gone.
fn status_field_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

impl Controller {
    /// `shards` processes, each watching the objects labelled `shard=<k>` with a store of its
    /// own (one process and no selector when `shards` is 1).
    fn start(peer: Peer, namespace: &str, storage: &Path, shards: usize) -> Controller {
        drop_from_page_cache(&peer.binary());
        let (mut children, mut metrics) = (Vec::new(), Vec::new());
        for k in 0..shards {
            let address = free_address();
            let (storage, selector) = match shards {
                1 => (storage.to_path_buf(), None),
                _ => (
                    storage.join(format!("shard-{k}")),
                    Some(format!("shard={k}")),
                ),
            };
            // Ours logs errors only (--log-level=error); Flux's Badger also logs its levels at
            // every open and close: its output goes to a file beside the store.
            let log = match peer {
                Peer::Ours => Stdio::inherit(),
                _ => std::fs::File::create(storage.with_extension("log"))
                    .unwrap()
                    .into(),
            };
            let child = peer
                .command(namespace, &storage, &address, selector.as_deref())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap_or_else(|e| panic!("{} starts: {e}", peer.label()));
            children.push(child);
            metrics.push(address);
        }
        let (anon_peak_kib, sampling) = (Arc::default(), Arc::new(AtomicBool::new(true)));
        let pids = children.iter().map(Child::id).collect();
        sample_anon(pids, Arc::clone(&anon_peak_kib), Arc::clone(&sampling));
        Controller {
            children,
            metrics,
            anon_peak_kib,
            sampling,
        }
    }

    fn status_kib(&self, child: &Child, field: &str) -> u64 {
        status_field_kib(child.id(), field)
    }

    /// The largest anonymous memory any of the processes had so far (sampled).
    fn anon_peak_kib(&self) -> u64 {
        self.anon_peak_kib.load(Ordering::Relaxed)
    }

    /// Each process's peak RSS.
    fn peaks_kib(&self) -> Vec<u64> {
        self.children
            .iter()
            .map(|c| self.status_kib(c, "VmHWM:"))
            .collect()
    }

    /// The largest process's peak RSS (the targets are per process).
    fn peak_kib(&self) -> u64 {
        self.peaks_kib().into_iter().max().unwrap_or(0)
    }

    /// The largest process's RSS now.
    fn rss_kib(&self) -> u64 {
        let each = self.children.iter().map(|c| self.status_kib(c, "VmRSS:"));
        each.max().unwrap_or(0)
    }

    /// User plus system CPU seconds so far, of all the processes.
    fn cpu(&self) -> f64 {
        self.children.iter().map(cpu_of).sum()
    }

    /// Every process's scrape, one after the other.
    async fn metrics(&self) -> String {
        let mut all = String::new();
        for address in &self.metrics {
            all.push_str(&scrape(address).await);
            all.push('\n');
        }
        all
    }
    /// What `quiet` watches: reconciles of each kind and API writes (POST, PUT, PATCH,
    /// DELETE, by rest_client_requests_total), from one scrape.
    async fn progress(&self) -> (u64, u64, u64) {
        let text = self.metrics().await;
        let reconciles = |kind: &str| {
            sum_metric(&text, "controller_runtime_reconcile_total", |labels| {
                labels.to_ascii_lowercase().contains(kind)
            })
        };
        let writes = sum_metric(&text, "rest_client_requests_total", |labels| {
            ["POST", "PUT", "PATCH", "DELETE"]
                .iter()
                .any(|m| labels.contains(&format!("method=\"{m}\"")))
        });
        (
            reconciles("imagerepository"),
            reconciles("imagepolicy"),
            writes,
        )
    }

    async fn api_writes(&self) -> u64 {
        self.progress().await.2
    }

    fn stop(mut self) {
        for child in &mut self.children {
            // SAFETY: kill has no memory preconditions; the pid is our child's.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        }
        for child in &mut self.children {
            let status = child.wait().unwrap();
            assert!(status.success(), "the controller exited with {status}");
        }
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.sampling.store(false, Ordering::Relaxed);
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A process's user plus system CPU seconds so far, to the nanosecond: the kernel's CPU clock
/// of the whole process (its threads that exited included). `/proc/<pid>/stat` counts in
/// ticks of 10 ms, coarser than ours' whole idle window (0.01 or 0.02 s in five minutes read
/// as a ratio of 0.05 or 0.11 to Flux's).
fn cpu_of(child: &Child) -> f64 {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: the pointer is to a local clockid_t; the pid is our child's, not yet waited for.
    let found = unsafe { libc::clock_getcpuclockid(child.id() as libc::pid_t, &mut clock) };
    assert_eq!(found, 0, "no CPU clock for pid {}", child.id());
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: the pointer is to a local timespec, and the clock id is the one just given.
    let read = unsafe { libc::clock_gettime(clock, &mut now) };
    assert_eq!(read, 0, "{}", std::io::Error::last_os_error());
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

/// A scrape as Prometheus makes it (gzip accepted).
async fn scrape(address: &str) -> String {
    use std::io::Read;
    let client = reqwest::Client::new();
    let request = client
        .get(format!("http://{address}/metrics"))
        .header("Accept-Encoding", "gzip");
    let Ok(response) = request.send().await else {
        return String::new();
    };
    let gzipped = response
        .headers()
        .get("Content-Encoding")
        .is_some_and(|e| e == "gzip");
    let body = response.bytes().await.unwrap_or_default();
    let mut text = String::new();
    if gzipped {
        let _ = flate2::read::GzDecoder::new(&body[..]).read_to_string(&mut text);
    } else {
        text = String::from_utf8_lossy(&body).into_owned();
    }
    text
}

fn sum_metric(text: &str, name: &str, keep: impl Fn(&str) -> bool) -> u64 {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(name)?.strip_prefix('{')?;
            let (labels, value) = rest.split_once("} ")?;
            keep(labels).then(|| value.trim().parse::<f64>().ok())?
        })
        .sum::<f64>() as u64
}

fn free_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// What the watches saw of the policies: the latest tag and digest, readiness, and when each
/// (policy, tag) was first seen.
#[derive(Default)]
struct Seen {
    policies: HashMap<String, (Option<String>, Option<String>, bool)>,
    first_seen: HashMap<(String, String), Instant>,
    handled: HashMap<String, Option<String>>,
}

fn watch_policies(api: Api<ImagePolicy>, seen: Arc<Mutex<Seen>>) {
    tokio::spawn(async move {
        let mut events = watcher(api, watcher::Config::default()).boxed();
        while let Ok(Some(event)) = events.try_next().await {
            let (watcher::Event::Apply(p) | watcher::Event::InitApply(p)) = event else {
                continue;
            };
            let status = p.status.clone().unwrap_or_default();
            let latest = status.latest_ref.as_ref();
            let tag = latest.map(|r| r.tag.clone());
            let digest = latest.and_then(|r| r.digest.clone());
            let ready = status.conditions.unwrap_or_default().iter().any(|c| {
                c.type_ == "Ready" && c.status == image_reflector::api::ConditionStatus::True
            });
            let mut seen = seen.lock().unwrap();
            if let Some(tag) = &tag {
                seen.first_seen
                    .entry((p.name_any(), tag.clone()))
                    .or_insert_with(Instant::now);
            }
            seen.policies.insert(p.name_any(), (tag, digest, ready));
        }
    });
}

fn watch_repositories(api: Api<ImageRepository>, seen: Arc<Mutex<Seen>>) {
    tokio::spawn(async move {
        let mut events = watcher(api, watcher::Config::default()).boxed();
        while let Ok(Some(event)) = events.try_next().await {
            let (watcher::Event::Apply(r) | watcher::Event::InitApply(r)) = event else {
                continue;
            };
            let handled = r
                .status
                .as_ref()
                .and_then(|s| s.last_handled_reconcile_at.clone());
            seen.lock().unwrap().handled.insert(r.name_any(), handled);
        }
    });
}

/// Waits until `done` holds, looking every 50 ms; panics after `limit`.
async fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < limit,
            "{what}: not done after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    started.elapsed()
}

fn reflection(i: usize) -> &'static str {
    ["Always", "IfNotPresent", "Never"][i % 3]
}

/// `n` repositories and their policies; with shards, each labelled `shard=<i % shards>`.
async fn create_objects(client: &Client, namespace: &str, registry: &str, n: usize, shards: usize) {
    let repos: Api<ImageRepository> = Api::namespaced(client.clone(), namespace);
    let policies: Api<ImagePolicy> = Api::namespaced(client.clone(), namespace);
    futures::stream::iter(0..n)
        .map(|i| {
            let (repos, policies) = (repos.clone(), policies.clone());
            async move {
                let repo: ImageRepository = serde_json::from_value(serde_json::json!({
                    "apiVersion": "image.toolkit.fluxcd.io/v1",
                    "kind": "ImageRepository",
                    "metadata": {"name": format!("app-{i}"), "labels": {"shard": (i % shards).to_string()}},
                    "spec": {"image": format!("{registry}/{}", fake_registry::repository(i)), "interval": "1h"},
                }))
                .unwrap();
                let mut spec = serde_json::json!({
                    "imageRepositoryRef": {"name": format!("app-{i}")},
                    "policy": {"semver": {"range": ">=1.0.0"}},
                    "digestReflectionPolicy": reflection(i),
                });
                if reflection(i) == "Always" {
                    spec["interval"] = "1h".into();
                }
                let policy: ImagePolicy = serde_json::from_value(serde_json::json!({
                    "apiVersion": "image.toolkit.fluxcd.io/v1",
                    "kind": "ImagePolicy",
                    "metadata": {"name": format!("app-{i}"), "labels": {"shard": (i % shards).to_string()}},
                    "spec": spec,
                }))
                .unwrap();
                repos.create(&PostParams::default(), &repo).await.unwrap();
                policies.create(&PostParams::default(), &policy).await.unwrap();
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<()>>()
        .await;
}

async fn request_reconcile(api: &Api<ImageRepository>, name: &str, token: &str) {
    let patch = serde_json::json!({
        "metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": token}}
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

fn directory_bytes(path: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() {
            directory_bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

fn install_crds() {
    let crds = format!("{}/crds/crds.yaml", env!("CARGO_MANIFEST_DIR"));
    for args in [
        vec!["apply", "--server-side", "--force-conflicts", "-f", &crds],
        vec![
            "wait",
            "--for=condition=established",
            "--timeout=60s",
            "crd/imagerepositories.image.toolkit.fluxcd.io",
            "crd/imagepolicies.image.toolkit.fluxcd.io",
        ],
    ] {
        let out = Command::new("kubectl").args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Waits until the controller finished `at_least` reconciles of each kind and its counters of
/// reconciles, API writes and registry requests stood still for two seconds.
async fn quiet(controller: &Controller, registry: &FakeRegistry, at_least: u64) -> Duration {
    let started = Instant::now();
    let mut last = ((0, 0, 0), Counts::default());
    let mut still_since = Instant::now();
    loop {
        // As often as a scraper that wants the moment, not 4 times per poll: a scrape of 10,000
        // objects' series is tens of megabytes of text for the controller to write.
        let now = (controller.progress().await, registry.counts());
        if now != last {
            last = now;
            still_since = Instant::now();
        } else if now.0 .0 >= at_least
            && now.0 .1 >= at_least
            && still_since.elapsed() >= Duration::from_secs(2)
        {
            return still_since.duration_since(started);
        }
        assert!(
            started.elapsed() < Duration::from_secs(900),
            "never quiet: {last:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn scenario(name: &str, peer: Peer) -> Report {
    // `20000x100/2`: two processes, each with its shard of the objects.
    let (size, shards) = name.split_once('/').unwrap_or((name, "1"));
    let parsed = size
        .split_once('x')
        .and_then(|(n, t)| Some((n.parse::<usize>().ok()?, t.parse::<usize>().ok()?)));
    let (Some((repositories, tags)), Ok(shards @ 1..)) = (parsed, shards.parse::<usize>()) else {
        panic!("a scenario is <repositories>x<tags>[/<shards>], not {name}");
    };
    // Ten cycles where a cycle takes seconds; three where it takes a minute (10,000 patches).
    let cycles: usize = std::env::var("BENCH_CYCLES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(if repositories <= 1000 { 10 } else { 3 });
    eprintln!("== {repositories} × {tags}: {}", peer.label());
    install_crds();
    let client = Client::try_default().await.expect("KUBECONFIG");
    let registry = FakeRegistry::start(repositories, tags).await;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let namespace = format!("bench-{repositories}x{tags}-{shards}-{stamp}");
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": namespace}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let created = Instant::now();
    create_objects(&client, &namespace, &registry.host(), repositories, shards).await;
    eprintln!(
        "created {} objects in {:.1?}",
        2 * repositories,
        created.elapsed()
    );

    let repos: Api<ImageRepository> = Api::namespaced(client.clone(), &namespace);
    let policies: Api<ImagePolicy> = Api::namespaced(client.clone(), &namespace);
    let seen = Arc::new(Mutex::new(Seen::default()));
    watch_policies(policies.clone(), seen.clone());
    watch_repositories(repos.clone(), seen.clone());

    let dir = tempfile::tempdir().unwrap();
    let storage: PathBuf = dir.path().join("store");
    if shards > 1 {
        std::fs::create_dir(&storage).unwrap();
    }
    let highest = fake_registry::tag(tags - 1);

    // Cold start.
    let controller = Controller::start(peer, &namespace, &storage, shards);
    let started = Instant::now();
    let limit = Duration::from_secs(1800);
    let all_ready = |seen: &Seen| {
        seen.policies.len() == repositories
            && seen
                .policies
                .values()
                .all(|(tag, _, ready)| *ready && tag.as_deref() == Some(highest.as_str()))
    };
    wait_until("cold start", limit, || all_ready(&seen.lock().unwrap())).await;
    let cold = started.elapsed();
    let cold_cpu = controller.cpu();
    let cold_requests = registry.counts();
    eprintln!("cold start: {cold:.1?}");
    {
        let seen = seen.lock().unwrap();
        for i in 0..repositories {
            let (_, digest, _) = &seen.policies[&format!("app-{i}")];
            let expected = (reflection(i) != "Never").then(|| registry.digest(i, &highest));
            assert_eq!(digest, &expected, "digest of app-{i}");
        }
    }
    quiet(&controller, &registry, repositories as u64).await;
    let cold_writes = controller.api_writes().await;
    let cold_peak_kib = controller.peak_kib();
    let idle_kib = controller.rss_kib();
    let store_bytes = directory_bytes(&storage);

    // Steady state: every repository rescanned on request, tags unchanged.
    let mut steady = Vec::new();
    for cycle in 1..=cycles {
        let token = format!("cycle-{cycle}");
        let (before, writes) = (registry.counts(), controller.api_writes().await);
        let t = Instant::now();
        futures::stream::iter(0..repositories)
            .map(|i| {
                let (repos, token) = (repos.clone(), token.clone());
                async move { request_reconcile(&repos, &format!("app-{i}"), &token).await }
            })
            .buffer_unordered(32)
            .collect::<Vec<()>>()
            .await;
        wait_until(&token, limit, || {
            let seen = seen.lock().unwrap();
            seen.handled.len() == repositories
                && seen
                    .handled
                    .values()
                    .all(|h| h.as_deref() == Some(token.as_str()))
        })
        .await;
        let wall = t.elapsed();
        let c = Cycle {
            wall,
            rss_kib: controller.rss_kib(),
            requests: registry.counts().since(before),
            writes: controller.api_writes().await - writes,
        };
        eprintln!(
            "cycle {cycle}: {wall:.1?}, RSS {}, {:?}, {} writes",
            mib(c.rss_kib),
            c.requests,
            c.writes
        );
        steady.push(c);
    }
    assert!(
        seen.lock()
            .unwrap()
            .policies
            .values()
            .all(|(tag, _, ready)| *ready && tag.as_deref() == Some(highest.as_str())),
        "the elections held over the cycles"
    );

    // Warm restart on the same store. The first process's peak covers its steady cycles too
    // (a relist during them holds two caches for a moment).
    let first_peak_kib = controller.peak_kib();
    let first_anon_kib = controller.anon_peak_kib();
    let first_peaks = controller.peaks_kib();
    controller.stop();
    if std::env::var_os("BENCH_KEEP").is_some() {
        // For profiling a warm start by hand: the objects and the store stay.
        let kept = dir.keep();
        eprintln!(
            "kept: RUNTIME_NAMESPACE={namespace} store {}",
            kept.join("store").display()
        );
        std::process::exit(0);
    }
    let before = registry.counts();
    let controller = Controller::start(peer, &namespace, &storage, shards);
    let warm = quiet(&controller, &registry, repositories as u64).await;
    let warm_requests = registry.counts().since(before);
    let warm_writes = controller.api_writes().await;
    let warm_peak_kib = controller.peak_kib();
    let warm_cpu = controller.cpu();
    eprintln!("warm restart: {warm:.1?}, {warm_requests:?}, {warm_writes} writes");

    // Triggered scans: one, then 100 at once.
    registry.push(0, NEW_TAG);
    let sent = Instant::now();
    request_reconcile(&repos, "app-0", "triggered-0").await;
    let key = ("app-0".to_string(), NEW_TAG.to_string());
    wait_until("triggered app-0", limit, || {
        seen.lock().unwrap().first_seen.contains_key(&key)
    })
    .await;
    let triggered_one = seen.lock().unwrap().first_seen[&key] - sent;
    let batch: Vec<usize> = (1..=TRIGGERED.min(repositories - 1)).collect();
    for &i in &batch {
        registry.push(i, NEW_TAG);
    }
    let sent: Vec<(usize, Instant)> = futures::future::join_all(batch.iter().map(|&i| {
        let repos = repos.clone();
        async move {
            let at = Instant::now();
            request_reconcile(&repos, &format!("app-{i}"), "triggered-100").await;
            (i, at)
        }
    }))
    .await;
    wait_until("triggered batch", limit, || {
        let seen = seen.lock().unwrap();
        batch.iter().all(|i| {
            seen.first_seen
                .contains_key(&(format!("app-{i}"), NEW_TAG.to_string()))
        })
    })
    .await;
    let triggered: Vec<Duration> = {
        let seen = seen.lock().unwrap();
        sent.iter()
            .map(|(i, at)| seen.first_seen[&(format!("app-{i}"), NEW_TAG.to_string())] - *at)
            .collect()
    };
    {
        let seen = seen.lock().unwrap();
        for &i in std::iter::once(&0).chain(&batch) {
            let (_, digest, _) = &seen.policies[&format!("app-{i}")];
            let expected = (reflection(i) != "Never").then(|| registry.digest(i, NEW_TAG));
            assert_eq!(digest, &expected, "digest of app-{i} after the new tag");
        }
    }
    let final_peak_kib = controller.peak_kib().max(first_peak_kib);
    let final_anon_kib = controller.anon_peak_kib().max(first_anon_kib);
    eprintln!(
        "peak RSS {}, of it anonymous at most {}",
        mib(final_peak_kib),
        mib(final_anon_kib)
    );
    let shard_peaks_kib: Vec<u64> = controller
        .peaks_kib()
        .iter()
        .zip(&first_peaks)
        .map(|(a, b)| *a.max(b))
        .collect();

    // Idle: nothing due for the window (intervals are an hour); what the process spends anyway
    // (watches, resyncs, GC). Asked for with a peer (Flux users measured it: IRC #333).
    let idle_window = Duration::from_secs(
        std::env::var("BENCH_IDLE")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(if Peer::chosen().len() > 1 { 600 } else { 0 }),
    );
    let idle_cpu = (!idle_window.is_zero()).then(|| controller.cpu());
    if let Some(before) = idle_cpu {
        let quiet_from = registry.counts();
        tokio::time::sleep(idle_window).await;
        eprintln!(
            "idle {idle_window:?}: {:.3} s CPU, {:?} registry requests",
            controller.cpu() - before,
            registry.counts().since(quiet_from)
        );
    }
    let idle_cpu = idle_cpu.map(|before| (controller.cpu() - before, idle_window));
    let final_store_bytes = directory_bytes(&storage);

    // Clean up while the controller runs: it removes its finalizers. The API server answers a
    // collection delete with every object deleted; at 10,000 that can fail mid-answer, and the
    // request is repeated until none is left.
    let all = ListParams::default();
    let gone = Instant::now();
    loop {
        let left = policies
            .list_metadata(&all.clone().limit(1))
            .await
            .unwrap()
            .items
            .len()
            + repos
                .list_metadata(&all.clone().limit(1))
                .await
                .unwrap()
                .items
                .len();
        if left == 0 {
            break;
        }
        assert!(gone.elapsed() < limit, "objects were not deleted");
        let deleted = DeleteParams::default();
        if let Err(err) = policies.delete_collection(&deleted, &all).await {
            eprintln!("deleting the policies: {err}; again");
        }
        if let Err(err) = repos.delete_collection(&deleted, &all).await {
            eprintln!("deleting the repositories: {err}; again");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    controller.stop();
    let _ = Api::<Namespace>::all(client.clone())
        .delete(&namespace, &DeleteParams::default())
        .await;

    Report {
        peer,
        name: name.to_string(),
        repositories,
        tags,
        shards,
        shard_peaks_kib,
        cold,
        cold_peak_kib,
        idle_kib,
        cold_cpu,
        store_bytes,
        cold_requests,
        cold_writes,
        cycles: steady,
        warm,
        warm_peak_kib,
        warm_cpu,
        warm_requests,
        warm_writes,
        triggered_one,
        triggered,
        final_peak_kib,
        final_anon_kib,
        idle_cpu,
        final_store_bytes,
    }
}

const BEGIN: &str = "<!-- bench-controller:begin (written by `make bench-controller`) -->";
const END: &str = "<!-- bench-controller:end -->";

fn write_docs(reports: &[Report]) {
    let path = format!("{}/docs/benchmarks.md", env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(&path).unwrap();
    let (Some(begin), Some(end)) = (doc.find(BEGIN), doc.find(END)) else {
        panic!("{path} has no {BEGIN} ... {END} section");
    };
    let date = Command::new("date")
        .arg("+%Y-%m-%d")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mut section = format!(
        "{BEGIN}\nMeasured on {date}, {cpus} CPUs, the API server, its etcd, the fake registry and the controller on the same machine.\n\n{}\n",
        Report::COLD_HEAD
    );
    for r in reports {
        section.push_str(&r.cold_row());
        section.push('\n');
    }
    section.push('\n');
    section.push_str(Report::WARM_HEAD);
    section.push('\n');
    for r in reports {
        section.push_str(&r.warm_row());
        section.push('\n');
    }
    let names: Vec<&str> = reports.iter().map(|r| r.name.as_str()).collect();
    section.push_str(&format!("\nScenarios: {}.\n", names.join(", ")));
    let updated = format!("{}{section}{}", &doc[..begin], &doc[end..]);
    std::fs::write(&path, updated).unwrap();
    eprintln!("wrote {path}");
}

/// Replaces the rows of the scenarios measured (cold, then warm table) in the section written
/// before: `BENCH_WRITE=1` with scenarios named.
fn update_rows(reports: &[Report]) {
    let path = format!("{}/docs/benchmarks.md", env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = doc.lines().map(String::from).collect();
    for r in reports {
        let prefix = format!("| {} |", r.label());
        let rows: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].starts_with(&prefix))
            .collect();
        match rows.as_slice() {
            [cold, warm] => {
                lines[*cold] = r.cold_row();
                lines[*warm] = r.warm_row();
            }
            // A scenario not measured before: after the last row of each table.
            [] => {
                for (head, row) in [
                    (Report::COLD_HEAD, r.cold_row()),
                    (Report::WARM_HEAD, r.warm_row()),
                ] {
                    let first = head.lines().next().unwrap();
                    let at = lines.iter().position(|l| l == first).expect("the table");
                    let end = (at + 2..lines.len())
                        .find(|&i| !lines[i].starts_with("| "))
                        .unwrap_or(lines.len());
                    lines.insert(end, row);
                }
            }
            _ => panic!("{path}: the rows of {prefix}"),
        }
    }
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    eprintln!("updated {path}");
}
