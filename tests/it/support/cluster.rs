//! The cluster side of the end-to-end tests: kubectl, the CRDs, a namespace per test, the
//! controller as a process, and waiting for what it writes.

use super::{root, run};
use std::process::Output;

pub fn kubectl(args: &[&str], stdin: Option<&str>) -> Output {
    run("kubectl", args, stdin)
}

pub fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "kubectl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Applies `crds/` (server-side) and waits until both CRDs are served.
pub fn install_crds() {
    apply_crds(
        &root().join("crds/crds.yaml"),
        &[
            "crd/imagerepositories.image.toolkit.fluxcd.io",
            "crd/imagepolicies.image.toolkit.fluxcd.io",
        ],
    );
}

/// Applies the CRDs in `path` (a file or a directory, server-side) and waits until `served`
/// are Established.
pub fn apply_crds(path: &std::path::Path, served: &[&str]) {
    ok(kubectl(
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            path.to_str().unwrap(),
        ],
        None,
    ));
    let mut wait = vec!["wait", "--for=condition=Established", "--timeout=60s"];
    wait.extend_from_slice(served);
    ok(kubectl(&wait, None));
}

pub struct Namespace(pub String);

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = kubectl(&["delete", "namespace", &self.0, "--wait=false"], None);
    }
}

/// The controller as a local process watching one namespace; SIGTERM on drop.
pub struct Controller {
    child: std::process::Child,
    _storage: tempfile::TempDir,
    pub storage: std::path::PathBuf,
}

/// Installs `config/default` (RBAC, namespace, Deployment: no node runs it here) and returns a
/// kubeconfig for its ServiceAccount, so the controller runs with exactly the permissions the
/// install grants.
pub fn install_and_controller_kubeconfig(dir: &std::path::Path) -> std::path::PathBuf {
    install_and_controller_kubeconfig_from(dir, "config/default")
}

/// The same with another kustomization of the repository (an overlay of config/default).
pub fn install_and_controller_kubeconfig_from(
    dir: &std::path::Path,
    kustomization: &str,
) -> std::path::PathBuf {
    install_and_controller_kubeconfig_with(dir, kustomization, |_| true)
}

/// config/default without its CRDs (the controller running on CRDs installed otherwise).
pub fn install_without_crds_and_controller_kubeconfig(dir: &std::path::Path) -> std::path::PathBuf {
    install_and_controller_kubeconfig_with(dir, "config/default", |doc| {
        !doc.contains("kind: CustomResourceDefinition")
    })
}

/// [`install_and_controller_kubeconfig_from`], applying only the documents `keep` takes.
fn install_and_controller_kubeconfig_with(
    dir: &std::path::Path,
    kustomization: &str,
    keep: impl Fn(&str) -> bool,
) -> std::path::PathBuf {
    let rendered = ok(kubectl(
        &["kustomize", root().join(kustomization).to_str().unwrap()],
        None,
    ));
    let rendered: Vec<&str> = rendered.split("\n---\n").filter(|doc| keep(doc)).collect();
    let rendered = rendered.join("\n---\n");
    ok(kubectl(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(&rendered),
    ));
    let token = ok(kubectl(
        &[
            "create",
            "token",
            "image-reflector-controller",
            "-n",
            "image-reflector-system",
        ],
        None,
    ));
    let view: serde_json::Value = serde_json::from_str(&ok(kubectl(
        &["config", "view", "--raw", "--minify", "-o", "json"],
        None,
    )))
    .unwrap();
    let cluster = &view["clusters"][0]["cluster"];
    let config = serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "controller", "user": {"token": token.trim()}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "controller"}}],
        "current-context": "c"
    });
    let path = dir.join("controller.kubeconfig");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

impl Controller {
    pub fn start(namespace: &str, kubeconfig: &std::path::Path) -> Controller {
        Controller::start_with(namespace, kubeconfig, &[])
    }

    pub fn start_with(namespace: &str, kubeconfig: &std::path::Path, extra: &[&str]) -> Controller {
        Controller::start_with_env(namespace, kubeconfig, extra, &[])
    }

    /// With these environment variables too (a cloud identity of the controller's own).
    pub fn start_with_env(
        namespace: &str,
        kubeconfig: &std::path::Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Controller {
        Controller::start_full(
            namespace,
            kubeconfig,
            extra,
            env,
            std::process::Stdio::inherit(),
        )
    }

    /// With its log (standard error) going to `log`.
    pub fn start_full(
        namespace: &str,
        kubeconfig: &std::path::Path,
        extra: &[&str],
        env: &[(&str, &str)],
        log: std::process::Stdio,
    ) -> Controller {
        let storage = tempfile::tempdir().unwrap();
        let child = spawn(namespace, kubeconfig, extra, env, log, storage.path());
        Controller {
            child,
            storage: storage.path().to_path_buf(),
            _storage: storage,
        }
    }

    /// Stops the process (SIGTERM, as a rollout does) and starts another on the same storage.
    pub fn restart(
        mut self,
        namespace: &str,
        kubeconfig: &std::path::Path,
        extra: &[&str],
        log: std::process::Stdio,
    ) -> Controller {
        let _ = run("kill", &["-TERM", &self.child.id().to_string()], None);
        assert!(self.child.wait().unwrap().success(), "a clean stop");
        self.child = spawn(namespace, kubeconfig, extra, &[], log, &self.storage);
        self
    }

    /// SIGTERM, and the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let _ = run("kill", &["-TERM", &self.child.id().to_string()], None);
        self.child.wait().unwrap()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `image-reflector run` watching `namespace`, its storage at `storage`.
fn spawn(
    namespace: &str,
    kubeconfig: &std::path::Path,
    extra: &[&str],
    env: &[(&str, &str)],
    log: std::process::Stdio,
    storage: &std::path::Path,
) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_image-reflector"))
        .arg("run")
        // One namespace and ephemeral ports, unless the caller says otherwise.
        .args(
            [
                "--watch-all-namespaces=false",
                "--metrics-addr=127.0.0.1:0",
                "--health-addr=127.0.0.1:0",
                "--min-retry-delay=200ms",
            ]
            .into_iter()
            .filter(|flag| {
                let name = flag.split('=').next().unwrap();
                !extra.iter().any(|e| e.starts_with(name))
            }),
        )
        .args(["--log-encoding=console", "--storage-path"])
        .arg(storage)
        .args(extra)
        .env("RUNTIME_NAMESPACE", namespace)
        .env("KUBECONFIG", kubeconfig)
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .expect("image-reflector run starts")
}

/// The port the controller's `server` (`metrics`, `health`) listens on, read back from its
/// console log at `log` (its `listening` line): started with port 0, the kernel picks a port
/// nothing else holds (a port found free and released first can be taken in between).
pub fn listening_port(log: &std::path::Path, server: &str) -> u16 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let port = text
            .lines()
            .filter(|l| l.contains("listening") && l.contains(&format!("server=\"{server}\"")))
            .find_map(|l| {
                let address = l.split("address=").nth(1)?.split_whitespace().next()?;
                address.rsplit(':').next()?.parse().ok()
            });
        match port {
            Some(port) => return port,
            None if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(50))
            }
            None => panic!("no `listening` line for {server} in the controller's log:\n{text}"),
        }
    }
}

/// Asks for a reconcile of `object` with Flux's annotation, as `flux reconcile` does.
pub fn request_reconcile(ns: &str, object: &str, token: &str) {
    ok(kubectl(
        &[
            "annotate",
            "--overwrite",
            "-n",
            ns,
            object,
            &format!("reconcile.fluxcd.io/requestedAt={token}"),
        ],
        None,
    ));
}

/// Waits (up to 60 s) until `kubectl get -o jsonpath` shows `value` for `object`. Not `kubectl
/// wait --for=jsonpath`: kubectl 1.28 (what a version-matching kubectl picks for this API
/// server) splits that flag at every `=`, so a filter such as `[?(@.type=="Ready")]` breaks it.
pub fn wait_for(ns: &str, object: &str, jsonpath: &str, value: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut last = String::new();
    while std::time::Instant::now() < deadline {
        let out = kubectl(
            &[
                "get",
                "-n",
                ns,
                object,
                "-o",
                &format!("jsonpath={jsonpath}"),
            ],
            None,
        );
        last = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && last == value {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    panic!("{ns}/{object}: {jsonpath} is {last:?}, not {value:?}, after 60 s");
}

pub fn get_json(ns: &str, object: &str) -> serde_json::Value {
    serde_json::from_str(&ok(kubectl(&["get", "-n", ns, object, "-o", "json"], None))).unwrap()
}
