//! Running it for real, on the API server of `make e2e`: two replicas with leader election
//! (only the leader reconciles; a stand-by takes over when the leader stops or dies), shards
//! split by `--watch-label-selector`, `/metrics` and the health endpoints after reconciles,
//! and traces received by an OTLP collector stand-in.

use crate::support::cluster::{
    install_and_controller_kubeconfig, install_crds, kubectl, ok, request_reconcile, wait_for,
    Namespace,
};
use crate::support::distribution::{Distribution, Variant};
use crate::support::fault_server::{FaultServer, Reply};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One `image-reflector` process started with Flux's Deployment flags (no subcommand).
struct Replica {
    child: Child,
    _storage: tempfile::TempDir,
    /// Its stderr: the JSON log lines (shown when a test fails).
    log: tempfile::NamedTempFile,
}

impl Replica {
    fn start(
        hostname: &str,
        kubeconfig: Option<&Path>,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Replica {
        let storage = tempfile::tempdir().unwrap();
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_image-reflector"));
        command
            .args([
                "--log-level=info",
                "--log-encoding=json",
                "--min-retry-delay=200ms",
            ])
            // Ports the kernel picks, read back from the log (`listening`): a port found free
            // and released before the replica binds it can be taken in between.
            .arg("--metrics-addr=127.0.0.1:0")
            .arg("--health-addr=127.0.0.1:0")
            .arg(format!("--storage-path={}", storage.path().display()))
            .args(args)
            .env("HOSTNAME", hostname)
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap());
        if let Some(kubeconfig) = kubeconfig {
            command.env("KUBECONFIG", kubeconfig);
        }
        for (k, v) in env {
            command.env(k, v);
        }
        Replica {
            child: command.spawn().expect("image-reflector starts"),
            _storage: storage,
            log,
        }
    }

    /// The port the replica's `server` (`metrics`, `health`) listens on, from its log.
    fn port(&self, server: &str) -> u16 {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = std::fs::read_to_string(self.log.path()).unwrap();
            let found = text
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find(|l| l["msg"] == "listening" && l["server"] == server)
                .and_then(|l| l["address"].as_str()?.rsplit(':').next()?.parse().ok());
            match found {
                Some(port) => return port,
                None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                None => panic!("no `listening` line for {server} in the replica's log:\n{text}"),
            }
        }
    }

    fn health(&self) -> u16 {
        self.port("health")
    }

    /// The log lines so far, parsed.
    fn log_lines(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.log.path())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    async fn get(&self, port: u16, path: &str) -> (u16, String) {
        image_reflector::registry::install_crypto_provider();
        let url = format!("http://127.0.0.1:{port}{path}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match reqwest::get(&url).await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    return (status, response.text().await.unwrap());
                }
                // Still starting: the port is not bound yet.
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(err) => panic!("GET {url}: {err}"),
            }
        }
    }

    async fn metrics(&self) -> String {
        let (status, text) = self.get(self.port("metrics"), "/metrics").await;
        assert_eq!(status, 200);
        text
    }

    fn signal(&self, signal: &str) {
        let out = crate::support::run("kill", &[signal, &self.child.id().to_string()], None);
        assert!(out.status.success());
    }

    fn wait(mut self) -> std::process::ExitStatus {
        self.child.wait().unwrap()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.log.path()).unwrap_or_default();
            eprintln!("--- replica log ---\n{log}");
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Follows `kubectl get -w` output of one JSONPath until `done` accepts a line.
fn watch_until(args: &[&str], jsonpath: &str, done: impl Fn(&str) -> bool) -> String {
    let mut child = Command::new("kubectl")
        .args(args)
        .args(["--watch", "--request-timeout=90s", "-o"])
        .arg(format!("jsonpath={jsonpath}{{\"\\n\"}}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines {
        let line = line.unwrap();
        if done(&line) {
            let _ = child.kill();
            let _ = child.wait();
            return line;
        }
        seen.push(line);
    }
    let _ = child.wait();
    panic!("kubectl {args:?} ended before the condition held; saw {seen:?}");
}

fn holder(lease: &str) -> String {
    ok(kubectl(
        &[
            "get",
            "lease",
            lease,
            "-n",
            "image-reflector-system",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ],
        None,
    ))
}

fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// Repositories labelled for one test run, so concurrent tests' controllers ignore them.
fn repository(ns: &str, name: &str, image: &str, labels: &str) -> String {
    format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n\
         metadata: {{name: {name}, namespace: {ns}, labels: {{{labels}}}}}\n\
         spec: {{image: {image}, interval: 5m}}\n---\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_two_replicas_one_leader_and_a_takeover() {
    install_crds();
    let registry = Distribution::start(Variant::default());
    let tags: Vec<String> = ["1.0.0", "1.1.0", "2.0.0"]
        .iter()
        .map(|t| t.to_string())
        .collect();
    registry.push_image("demo/app", &tags).await;
    let run = std::process::id();
    let ns = Namespace(format!("image-reflector-leader-{run}"));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let selector = format!("e2e-run=leader-{run}");
    let label = format!("e2e-run: leader-{run}");
    let image = format!("{}/demo/app", registry.host);
    let manifests = repository(&ns.0, "app", &image, &label)
        + &format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n\
             metadata: {{name: app, namespace: {ns}, labels: {{{label}}}}}\n\
             spec: {{imageRepositoryRef: {{name: app}}, policy: {{semver: {{range: '>=1.0.0'}}}}}}\n",
            ns = ns.0
        );
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    // As in Flux's Deployment: the ServiceAccount of config/, the Lease in the pod's namespace.
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let lease = image_reflector::runtime::leader::lease_name(&selector);
    let selector_flag = format!("--watch-label-selector={selector}");
    let flux_args = [
        "--watch-all-namespaces=true",
        "--enable-leader-election",
        "--leader-election-lease-duration=4s",
        "--leader-election-renew-deadline=3s",
        "--leader-election-retry-period=1s",
        "--storage-value-log-file-size=268435456",
        selector_flag.as_str(),
    ];
    let env = [("RUNTIME_NAMESPACE", "image-reflector-system")];
    let a = Replica::start("replica-a", Some(&kubeconfig), &flux_args, &env);
    wait_for(&ns.0, "imagepolicy/app", "{.status.latestRef.tag}", "2.0.0");
    let b = Replica::start("replica-b", Some(&kubeconfig), &flux_args, &env);
    assert!(
        holder(&lease).starts_with("replica-a_"),
        "{}",
        holder(&lease)
    );

    // The leader reconciled and says so; the stand-by is ready and healthy but idle.
    let leader = a.metrics().await;
    let lease_series = format!("leader_election_master_status{{name=\"{lease}\"}}");
    assert_eq!(sample(&leader, &lease_series), Some(1.0), "{leader}");
    // Prometheus text 0.0.4 (no Accept): what client-go and the process collector export.
    assert!(
        leader.contains("# TYPE rest_client_requests_total counter"),
        "{leader}"
    );
    assert!(
        leader
            .lines()
            .any(|l| l.starts_with("rest_client_requests_total{code=\"200\",method=\"GET\""))
            && !leader.contains("# EOF"),
        "{leader}"
    );
    assert!(
        sample(&leader, "process_resident_memory_bytes").is_some_and(|b| b > 1e6),
        "{leader}"
    );
    assert!(
        leader.contains("image_reflector_build_info{version="),
        "{leader}"
    );
    let repo = format!("name=\"app\",namespace=\"{}\"", ns.0);
    assert_eq!(
        sample(
            &leader,
            &format!("image_reflector_repository_tags{{{repo}}}")
        ),
        Some(3.0),
        "{leader}"
    );
    assert_eq!(
        sample(
            &leader,
            &format!("image_reflector_ready{{kind=\"ImagePolicy\",{repo}}}")
        ),
        Some(1.0),
        "{leader}"
    );
    assert!(
        leader.contains(&format!(
            "image_reflector_policy_info{{{repo},image=\"{image}\",tag=\"2.0.0\",digest=\"\"}} 1"
        )),
        "{leader}"
    );
    let requests = format!(
        "image_reflector_registry_requests_total{{host=\"{}\",code=\"200\"}}",
        registry.host
    );
    assert!(sample(&leader, &requests).unwrap_or(0.0) >= 1.0, "{leader}");
    assert!(
        leader.contains("workqueue_depth{name=\"imagerepository\"}"),
        "{leader}"
    );
    assert!(leader.contains(
        "controller_runtime_reconcile_total{controller=\"imagepolicy\",result=\"success\"}"
    ));
    let standby = b.metrics().await;
    assert_eq!(sample(&standby, &lease_series), Some(0.0), "{standby}");
    assert!(
        !standby.contains("controller_runtime_reconcile_total{"),
        "the stand-by reconciles nothing: {standby}"
    );
    assert_eq!(
        b.get(b.health(), "/readyz").await.0,
        200,
        "a stand-by is ready"
    );
    assert_eq!(b.get(b.health(), "/healthz").await.0, 200);
    assert_eq!(a.get(a.health(), "/readyz").await.0, 200);
    assert_eq!(a.get(a.health(), "/healthz").await.0, 200);

    // SIGTERM: the leader finishes, releases the Lease and exits 0; the stand-by takes over
    // and handles the next change.
    a.signal("-TERM");
    let status = a.wait();
    assert!(status.success(), "{status}");
    let taken = watch_until(
        &["get", "lease", &lease, "-n", "image-reflector-system"],
        "{.spec.holderIdentity}",
        |h| h.starts_with("replica-b_"),
    );
    assert!(taken.starts_with("replica-b_"));
    request_reconcile(&ns.0, "imagerepository/app", "after-takeover");
    wait_for(
        &ns.0,
        "imagerepository/app",
        "{.status.lastHandledReconcileAt}",
        "after-takeover",
    );

    // A leader that dies without releasing: a new stand-by takes over once the lease expires.
    let c = Replica::start("replica-c", Some(&kubeconfig), &flux_args, &env);
    assert_eq!(c.get(c.health(), "/readyz").await.0, 200);
    b.signal("-KILL");
    let killed_at = Instant::now();
    let _ = b.wait();
    let taken = watch_until(
        &["get", "lease", &lease, "-n", "image-reflector-system"],
        "{.spec.holderIdentity}",
        |h| h.starts_with("replica-c_"),
    );
    eprintln!(
        "replica-c took over {:?} after replica-b was killed",
        killed_at.elapsed()
    );
    assert!(taken.starts_with("replica-c_"));

    // Deleting objects removes their series.
    ok(kubectl(
        &[
            "delete",
            "-n",
            &ns.0,
            "imagepolicy/app",
            "imagerepository/app",
            "--timeout=60s",
        ],
        None,
    ));
    let after = c.metrics().await;
    assert!(
        !after.contains(&format!("namespace=\"{}\"", ns.0)),
        "{after}"
    );
    c.signal("-TERM");
    assert!(c.wait().success());
    assert_eq!(holder(&lease), "", "released at shutdown");

    // A Lease taken by another holder (an operator's edit, a split brain): the leader stops
    // and exits 1, as Flux's does and docs/controller.md says.
    let d = Replica::start("replica-d", Some(&kubeconfig), &flux_args, &env);
    watch_until(
        &["get", "lease", &lease, "-n", "image-reflector-system"],
        "{.spec.holderIdentity}",
        |h| h.starts_with("replica-d_"),
    );
    // A MicroTime, as the API server reads it: six fractional digits.
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.000000Z")
        .to_string();
    let steal = serde_json::json!({"spec": {
        "holderIdentity": "intruder", "renewTime": now, "leaseDurationSeconds": 60}});
    ok(kubectl(
        &[
            "patch",
            "lease",
            &lease,
            "-n",
            "image-reflector-system",
            "--type=merge",
            "-p",
            &steal.to_string(),
        ],
        None,
    ));
    let status = d.wait();
    assert_eq!(status.code(), Some(1), "{status}");
    assert_eq!(
        holder(&lease),
        "intruder",
        "the lost Lease is left to its new holder"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_shards_split_labelled_objects() {
    install_crds();
    let registry = Distribution::start(Variant::default());
    let tags: Vec<String> = ["1.0.0"].iter().map(|t| t.to_string()).collect();
    registry.push_image("demo/app", &tags).await;
    let ns = Namespace(format!("image-reflector-shards-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let image = format!("{}/demo/app", registry.host);
    let manifests = repository(&ns.0, "main", &image, "team: a")
        + &repository(&ns.0, "one", &image, "sharding.fluxcd.io/key: shard1")
        + &repository(&ns.0, "two", &image, "sharding.fluxcd.io/key: shard2");
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    // Flux's sharding convention: the main controller takes what no shard has. The admin
    // kubeconfig of `make e2e`, one namespace, a Lease per shard in it.
    let env = [("RUNTIME_NAMESPACE", ns.0.as_str())];
    let shard = |host: &str, selector: &str| {
        let flag = format!("--watch-label-selector={selector}");
        Replica::start(
            host,
            None,
            &[
                "--watch-all-namespaces=false",
                "--enable-leader-election",
                &flag,
            ],
            &env,
        )
    };
    let main = shard("main", "!sharding.fluxcd.io/key");
    let one = shard("shard1", "sharding.fluxcd.io/key=shard1");
    let two = shard("shard2", "sharding.fluxcd.io/key=shard2");
    let ready = "{.status.conditions[?(@.type==\"Ready\")].status}";
    for name in ["main", "one", "two"] {
        wait_for(&ns.0, &format!("imagerepository/{name}"), ready, "True");
    }
    let count = |name: &str| {
        format!(
            "gotk_reconcile_duration_seconds_count{{kind=\"ImageRepository\",name=\"{name}\",namespace=\"{}\"}}",
            ns.0
        )
    };
    for (replica, own) in [(&main, "main"), (&one, "one"), (&two, "two")] {
        let metrics = replica.metrics().await;
        for name in ["main", "one", "two"] {
            assert_eq!(
                sample(&metrics, &count(name)).is_some(),
                name == own,
                "{own} reconciles {name} only if it is its own:\n{metrics}"
            );
        }
    }
    // Each shard elects on its own Lease: Flux's name with the selector's hash.
    let leases = ok(kubectl(&["get", "leases", "-n", &ns.0, "-o", "name"], None));
    for selector in [
        "!sharding.fluxcd.io/key",
        "sharding.fluxcd.io/key=shard1",
        "sharding.fluxcd.io/key=shard2",
    ] {
        let name = image_reflector::runtime::leader::lease_name(selector);
        assert!(leases.contains(&name), "{name} in {leases}");
    }
    for replica in [main, one, two] {
        replica.signal("-TERM");
        assert!(replica.wait().success());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_traces_reach_an_otlp_collector() {
    install_crds();
    let registry = Distribution::start(Variant::default());
    let tags: Vec<String> = ["1.0.0"].iter().map(|t| t.to_string()).collect();
    registry.push_image("demo/app", &tags).await;
    let collector = FaultServer::start(|_| Reply::status(200)).await;
    let ns = Namespace(format!("image-reflector-traces-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let image = format!("{}/demo/app", registry.host);
    ok(kubectl(
        &["apply", "-f", "-"],
        Some(&repository(&ns.0, "app", &image, "team: a")),
    ));
    let endpoint = format!("--otlp-endpoint=http://{}", collector.host());
    let env = [
        ("RUNTIME_NAMESPACE", ns.0.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
    ];
    let replica = Replica::start(
        "traced",
        None,
        &["--watch-all-namespaces=false", &endpoint],
        &env,
    );
    let ready = "{.status.conditions[?(@.type==\"Ready\")].status}";
    wait_for(&ns.0, "imagerepository/app", ready, "True");
    // Spans are batched: the exporter flushes at shutdown.
    replica.signal("-TERM");
    let log = replica.log_lines();
    assert!(replica.wait().success());

    // The log lines of a reconcile carry Flux's keys.
    let scanned = log
        .iter()
        .find(|l| {
            l["msg"]
                .as_str()
                .is_some_and(|m| m.starts_with("successful scan"))
        })
        .unwrap_or_else(|| panic!("a successful scan is logged: {log:?}"));
    assert_eq!(scanned["level"], "info");
    assert_eq!(scanned["controller"], "imagerepository");
    assert_eq!(scanned["controllerKind"], "ImageRepository");
    assert_eq!(scanned["namespace"], ns.0.as_str());
    assert_eq!(scanned["name"], "app");
    assert!(scanned["reconcileID"]
        .as_str()
        .is_some_and(|id| !id.is_empty()));

    let mut spans = Vec::new();
    for request in collector.seen() {
        assert_eq!(request.path(), "/v1/traces");
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
        for resource in body["resourceSpans"].as_array().unwrap() {
            let service = &resource["resource"]["attributes"];
            assert!(
                service.to_string().contains("image-reflector-controller"),
                "{service}"
            );
            for scope in resource["scopeSpans"].as_array().unwrap() {
                spans.extend(scope["spans"].as_array().unwrap().iter().cloned());
            }
        }
    }
    let attribute = |span: &serde_json::Value, key: &str| -> Option<String> {
        span["attributes"]
            .as_array()?
            .iter()
            .find(|a| a["key"] == key)
            .map(|a| {
                a["value"]["stringValue"]
                    .as_str()
                    .map_or_else(|| a["value"].to_string(), str::to_string)
            })
    };
    let reconciles: Vec<&serde_json::Value> = spans
        .iter()
        .filter(|s| {
            s["name"] == "reconcile"
                && attribute(s, "controller").as_deref() == Some("imagerepository")
                && attribute(s, "name").as_deref() == Some("app")
                && attribute(s, "namespace").as_deref() == Some(ns.0.as_str())
        })
        .collect();
    let children_of = |parent: &serde_json::Value| -> Vec<&str> {
        spans
            .iter()
            .filter(|s| s["parentSpanId"] == parent["spanId"] && s["traceId"] == parent["traceId"])
            .filter_map(|s| s["name"].as_str())
            .collect()
    };
    // The first reconcile only adds the finalizer; the scan is a later one.
    let scan = reconciles
        .iter()
        .find(|r| children_of(r).contains(&"registry request"))
        .unwrap_or_else(|| panic!("a reconcile span that scanned, in {spans:#?}"));
    assert!(attribute(scan, "reconcileID").is_some());
    let children = children_of(scan);
    for expected in ["registry request", "store write", "status patch"] {
        assert!(
            children.contains(&expected),
            "{expected} under the reconcile: {children:?}"
        );
    }
    let request = spans
        .iter()
        .find(|s| s["name"] == "registry request" && s["parentSpanId"] == scan["spanId"])
        .unwrap();
    assert_eq!(
        attribute(request, "host").as_deref(),
        Some(registry.host.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_storage_gc_removes_only_deleted_repositories_in_scope() {
    use image_reflector::runtime::gc;
    use image_reflector::store::{FsStore, RepoKey, TagList, TagStore};
    use std::sync::Arc;
    install_crds();
    let ns = Namespace(format!("image-reflector-gc-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let manifests = repository(&ns.0, "kept", "ghcr.io/org/app", "shard: a")
        + &repository(&ns.0, "other-shard", "ghcr.io/org/app", "shard: b");
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn TagStore> = Arc::new(FsStore::open(dir.path(), 64 * 1024).unwrap());
    let tags = TagList::new(["1.0.0"]).unwrap();
    let key = |name: &str| RepoKey::new(ns.0.as_str(), name).unwrap();
    for name in ["kept", "gone"] {
        store.set(&key(name), &tags).unwrap();
    }
    let client = kube::Client::try_default().await.unwrap();
    let api = kube::Api::namespaced(client, &ns.0);
    // The shard of `shard=a`: `other-shard` is not its to see, `gone` no longer exists.
    let removed = gc::collect(&api, "shard=a", &store).await.unwrap();
    assert_eq!(removed, 1);
    let mut left = store.keys().unwrap();
    left.sort_by_key(|k| format!("{k:?}"));
    assert_eq!(left, vec![key("kept")]);
}

/// A real Prometheus server (Debian's package; `make e2e` installs it) scrapes the controller
/// and answers every query the shipped dashboard (`config/grafana`) and the alert rules of
/// docs/operations.md use, with data for the objects the controller reconciled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster and prometheus: make e2e"]
async fn e2e_prometheus_scrapes_and_answers_the_dashboard_and_alert_queries() {
    image_reflector::registry::install_crypto_provider();
    install_crds();
    let registry = Distribution::start(Variant::default());
    registry
        .push_image("demo/app", &["1.0.0".to_string()])
        .await;
    let ns = Namespace(format!("image-reflector-prom-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let manifests = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{image: {host}/demo/app, interval: 5m}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: app}}, policy: {{semver: {{range: '>=1.0.0'}}}}}}\n",
        ns = ns.0,
        host = registry.host
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = crate::support::cluster::install_and_controller_kubeconfig(dir.path());
    let log_path = dir.path().join("controller.log");
    let controller = crate::support::cluster::Controller::start_full(
        &ns.0,
        &kubeconfig,
        &[],
        &[],
        std::fs::File::create(&log_path).unwrap().into(),
    );
    let metrics_port = crate::support::cluster::listening_port(&log_path, "metrics");
    wait_for(&ns.0, "imagepolicy/app", "{.status.latestRef.tag}", "1.0.0");

    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s}}\nscrape_configs:\n  - job_name: image-reflector\n    \
             static_configs: [{{targets: ['127.0.0.1:{metrics_port}']}}]\n"
        ),
    )
    .unwrap();
    // Prometheus needs a port named up front: one found free may be taken before it binds,
    // and then it exits; another is tried.
    let (mut prometheus, prom_port) = loop {
        let port = free();
        let mut child = std::process::Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("prometheus runs (apt-get install prometheus)");
        let deadline = Instant::now() + Duration::from_secs(30);
        let listening = loop {
            if child.try_wait().unwrap().is_some() {
                break false;
            }
            let url = format!("http://127.0.0.1:{port}/-/ready");
            if reqwest::get(&url)
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                break true;
            }
            assert!(Instant::now() < deadline, "Prometheus never became ready");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        if listening {
            break (child, port);
        }
    };
    let query = |expr: String| async move {
        let url = format!("http://127.0.0.1:{prom_port}/api/v1/query");
        let answer = reqwest::Client::new()
            .get(url)
            .query(&[("query", expr.as_str())])
            .send()
            .await
            .ok()?
            .json::<serde_json::Value>()
            .await
            .ok()?;
        Some(answer)
    };
    // Scraped: the controller's series are there.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ready = query("image_reflector_ready{kind=\"ImagePolicy\"}".into()).await;
        if ready.is_some_and(|a| {
            a["data"]["result"]
                .as_array()
                .is_some_and(|r| !r.is_empty())
        }) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus never had the controller's series"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // Every dashboard query (its variables set as Grafana would) and every alert rule.
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            crate::support::root().join("config/grafana/image-reflector.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            if let Some(expr) = target["expr"].as_str() {
                queries.push(
                    expr.replace("$__rate_interval", "1m")
                        .replace("$namespace", &ns.0)
                        .replace("${namespace}", &ns.0),
                );
            }
        }
    }
    let operations =
        std::fs::read_to_string(crate::support::root().join("docs/operations.md")).unwrap();
    let alerts: Vec<String> = operations
        .lines()
        .filter_map(|l| l.trim().strip_prefix("expr: "))
        .map(str::to_string)
        .collect();
    assert!(
        queries.len() >= 10 && alerts.len() >= 5,
        "{queries:?} {alerts:?}"
    );
    for expr in queries.iter().chain(&alerts) {
        let answer = query(expr.clone()).await.expect("Prometheus answers");
        assert_eq!(answer["status"], "success", "{expr}: {answer}");
    }
    // With data for what the controller reconciled.
    let policy = query(format!(
        "image_reflector_policy_info{{namespace=\"{}\"}}",
        ns.0
    ))
    .await
    .unwrap();
    assert_eq!(
        policy["data"]["result"][0]["metric"]["tag"], "1.0.0",
        "{policy}"
    );
    let scans = query("sum(rate(controller_runtime_reconcile_total[1m]))".into())
        .await
        .unwrap();
    assert_eq!(scans["status"], "success");
    let _ = prometheus.kill();
    let _ = prometheus.wait();
    assert!(controller.stop().success());
}
