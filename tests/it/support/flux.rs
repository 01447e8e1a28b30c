//! Flux beside our controller (`make e2e-flux`): the components `make flux` builds from their
//! Go modules (hack/flux-build.sh) in `FLUX_BIN_DIR`, their CRDs, and each component run as a
//! local process against the API server of KUBECONFIG.

use super::cluster::apply_crds;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Where `make flux` put the binaries and `crds/`.
pub fn bin_dir() -> PathBuf {
    let dir = std::env::var_os("FLUX_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache"));
            cache.join("image-reflector-flux/bin")
        });
    assert!(
        dir.join("flux").is_file(),
        "no Flux components in {}: run `make flux` (make e2e-flux does)",
        dir.display()
    );
    dir
}

/// Applies the Flux CRDs `make flux` collected (image automation, notifications, GitRepository)
/// and waits until they are served.
pub fn install_flux_crds() {
    apply_crds(
        &bin_dir().join("crds"),
        &[
            "crd/imageupdateautomations.image.toolkit.fluxcd.io",
            "crd/gitrepositories.source.toolkit.fluxcd.io",
            "crd/alerts.notification.toolkit.fluxcd.io",
            "crd/providers.notification.toolkit.fluxcd.io",
        ],
    );
}

/// The `flux` CLI with `args`, against KUBECONFIG.
pub fn flux(args: &[&str]) -> Output {
    super::run(bin_dir().join("flux").to_str().unwrap(), args, None)
}

/// How Flux's kstatus reads `object` (`make flux`'s kstatus-judge), as a Kustomization's health
/// check over it would: its status (`Current`, `InProgress`, `Failed`, ...) and message.
pub fn kstatus(object: &serde_json::Value) -> (String, String) {
    let line = format!("{object}\n");
    let judge = bin_dir().join("kstatus-judge");
    let out = super::run(judge.to_str().unwrap(), &[], Some(&line));
    assert!(out.status.success(), "kstatus-judge: {out:?}");
    let said: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = |k: &str| said[k].as_str().unwrap_or_default().to_string();
    (text("status"), text("message"))
}

/// A Flux controller as a local process in `namespace` (its runtime namespace, the only one
/// it watches), with the test's admin KUBECONFIG; its log goes to `log`. Killed on drop.
pub struct Component {
    child: Child,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Component {
    pub fn start(name: &str, namespace: &str, args: &[&str]) -> Component {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(format!("{name}.log"));
        let child = Command::new(bin_dir().join(name))
            .args([
                "--watch-all-namespaces=false",
                "--metrics-addr=0",
                "--health-addr=0",
                "--log-encoding=console",
            ])
            .args(args)
            .env("RUNTIME_NAMESPACE", namespace)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("{name} starts: {e}"));
        Component {
            child,
            log,
            _dir: dir,
        }
    }

    /// Whether the process still runs.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Component {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// notification-controller in `namespace`, its event endpoint on a port of its own; returns
/// it and that endpoint's URL (what `--events-addr` of a controller names). A port found free
/// can be taken before it binds: then it exits, and another port is tried.
pub async fn notification_controller(namespace: &str) -> (Component, String) {
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let events = format!("--events-addr=127.0.0.1:{port}");
        let mut nc = Component::start(
            "notification-controller",
            namespace,
            &[&events, "--receiverAddr=127.0.0.1:0"],
        );
        let url = format!("http://127.0.0.1:{port}/");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if !nc.running() {
                break;
            }
            // Its event server answers (a GET is not an event: any status will do).
            if reqwest::get(&url).await.is_ok() {
                return (nc, url);
            }
            assert!(
                Instant::now() < deadline,
                "notification-controller never listened:\n{}",
                nc.log_text()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}
