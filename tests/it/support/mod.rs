//! Helpers shared by the integration tests: the real Distribution registry and the images the gate tests push to it (dated, multi-platform, cosign-signed), a fault server, the mocked API server, cloud fakes, a CONNECT proxy, and the cluster side of the end-to-end tests.

pub mod api_mock;
pub mod cloud_fakes;
pub mod cluster;
pub mod connect_proxy;
pub mod distribution;
pub mod fault_server;
pub mod flux;
pub mod fulcio;
pub mod git_server;
pub mod github_attested;
pub mod images;
pub mod oidc;
pub mod policy_bench;
pub mod policy_cluster;
pub mod registry_cooldown;
pub mod same_named;
pub mod sigstack;
pub mod sigtools;
pub mod slow_relay;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The project root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the `image-reflector` binary with `args` and optional standard input.
pub fn run_bin(args: &[&str], stdin: Option<&str>) -> Output {
    run(env!("CARGO_BIN_EXE_image-reflector"), args, stdin)
}

/// Runs `program` with `args`, feeding `stdin`, and collects its output.
pub fn run(program: &str, args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut child = Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let input = stdin.unwrap_or("").to_string();
    let mut pipe = child.stdin.take().expect("stdin is piped");
    std::thread::spawn(move || pipe.write_all(input.as_bytes()));
    child.wait_with_output().expect("the binary finishes")
}

/// Writes `content` to `dir/name` and returns the path as a string.
pub fn write(dir: &Path, name: &str, content: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, content).expect("test file is written");
    path.to_string_lossy().into_owned()
}

/// What `image-reflector scan -f manifests --storage-path storage -o yaml` wrote: its exit
/// code, the status of its (first) ImagePolicy, all of its standard output and error.
pub struct Scanned {
    pub code: Option<i32>,
    pub policy_status: serde_json::Value,
    pub output: String,
}

pub fn scan_yaml(manifests: &str, storage: &Path) -> Scanned {
    let storage = storage.to_str().unwrap();
    let args = [
        "scan",
        "-f",
        manifests,
        "--storage-path",
        storage,
        "-o",
        "yaml",
    ];
    let out = run_bin(&args, None);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let docs = serde_saphyr::from_multiple::<serde_json::Value>(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let policy = docs.iter().find(|d| d["kind"] == "ImagePolicy");
    let policy_status = policy.map(|p| p["status"].clone()).unwrap_or_default();
    let output = stdout + &String::from_utf8_lossy(&out.stderr);
    Scanned {
        code: out.status.code(),
        policy_status,
        output,
    }
}

/// A `minAge` hold as the gates word it, to the second: `until <at + hours>: <asked> after
/// <clock> (<at>)`, `clock` being `its creation` or `it was first seen at this digest`.
pub fn held_until(asked: &str, hours: i64, clock: &str, at: jiff::Timestamp) -> String {
    let at = jiff::Timestamp::from_second(at.as_second()).unwrap();
    let until = at + jiff::SignedDuration::from_hours(hours);
    format!("until {until}: {asked} after {clock} ({at})")
}

/// Reads a YAML file into a JSON value.
pub fn yaml_file(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The log lines written on this thread while the guard lives (a current-thread runtime's
/// tasks included), as text.
#[derive(Clone, Default)]
pub struct LogLines(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl LogLines {
    /// Captures INFO and above until the guard is dropped.
    pub fn capture() -> (LogLines, tracing::subscriber::DefaultGuard) {
        let lines = LogLines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .finish();
        (lines, tracing::subscriber::set_default(subscriber))
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl std::io::Write for LogLines {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
