//! The signing tools the signature tests run, built from their Go modules by `make sigtools`
//! (hack/sigtools-build.sh) into `SIGTOOLS_BIN_DIR`: the cosign CLI v3 and the last v2, the
//! notation CLI, a registry that serves the OCI referrers API, and the judge that runs the
//! reference verifiers (sigstore-go, notation-go) over cases. Each tool runs with a home
//! of its own (keys, caches), never the user's.

use super::distribution::Distribution;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where `make sigtools` put the binaries.
pub fn bin_dir() -> PathBuf {
    let dir = std::env::var_os("SIGTOOLS_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache"));
            cache.join("image-reflector-sigtools/bin")
        });
    for tool in [
        "cosign",
        "cosign-v2",
        "notation",
        "referrers-registry",
        "signature-judge",
        "rekor-server",
        "timestamp-server",
        "fulcio",
        "tufrepo",
        "trillian",
        "rekor-v1-server",
    ] {
        assert!(
            dir.join(tool).is_file(),
            "no {tool} in {}: run `make sigtools` (make e2e-signatures does)",
            dir.display()
        );
    }
    dir
}

/// An in-memory registry that serves the referrers API, on loopback, pushed to and stopped
/// like Distribution.
pub fn referrers_registry() -> Distribution {
    let mut child = Command::new(bin_dir().join("referrers-registry"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("referrers-registry starts");
    let mut line = String::new();
    let stdout = child.stdout.take().unwrap();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let host = line.trim().to_string();
    assert!(
        host.starts_with("127.0.0.1:"),
        "referrers-registry said {line:?}"
    );
    Distribution::adopt(host, child)
}

/// A cosign CLI (v3, or the last v2) with a home of its own.
pub struct Cosign {
    bin: PathBuf,
    home: tempfile::TempDir,
}

/// A key pair `cosign generate-key-pair` made (no password): the private key's path and the
/// public key's PEM.
pub struct CosignKey {
    pub private: PathBuf,
    pub public: String,
}

impl Cosign {
    pub fn v3() -> Cosign {
        Cosign::at(bin_dir().join("cosign"))
    }

    pub fn v2() -> Cosign {
        Cosign::at(bin_dir().join("cosign-v2"))
    }

    fn at(bin: PathBuf) -> Cosign {
        Cosign {
            bin,
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// Runs cosign in its home; panics with its output when it fails.
    pub fn run(&self, args: &[&str]) -> String {
        succeed("cosign", args, self.command(args))
    }

    /// Runs cosign as a judge: whether it succeeded, and what it said.
    pub fn judge(&self, args: &[&str]) -> (bool, String) {
        let out = self.command(args).output().expect("cosign runs");
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.bin);
        command
            .args(args)
            .current_dir(self.home.path())
            .env("HOME", self.home.path())
            .env("COSIGN_PASSWORD", "")
            .env("TUF_ROOT", self.home.path().join("tuf"))
            .env_remove("SIGSTORE_ROOT_FILE");
        command
    }

    /// A new key pair, named `name` (`<name>.key`, `<name>.pub`).
    pub fn key(&self, name: &str) -> CosignKey {
        self.run(&["generate-key-pair", "--output-key-prefix", name]);
        let dir = self.home.path();
        CosignKey {
            private: dir.join(format!("{name}.key")),
            public: std::fs::read_to_string(dir.join(format!("{name}.pub"))).unwrap(),
        }
    }

    /// A key pair imported from a PKCS#8 PEM private key (one a test certificate names).
    pub fn import_key(&self, name: &str, pem: &str) -> CosignKey {
        let source = self.file(&format!("{name}.pem"), pem);
        self.run(&[
            "import-key-pair",
            "--key",
            path(&source),
            "--output-key-prefix",
            name,
        ]);
        let dir = self.home.path();
        CosignKey {
            private: dir.join(format!("{name}.key")),
            public: std::fs::read_to_string(dir.join(format!("{name}.pub"))).unwrap(),
        }
    }

    /// Writes `text` into the home as `name`, for flags that take a file.
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let at = self.home.path().join(name);
        std::fs::write(&at, text).unwrap();
        at
    }

    /// `cosign sign` with `key` of `image@digest`, as cosign v3 signs by default: a Sigstore
    /// bundle attached as a referrer (the referrers tag schema where the registry has no
    /// API), with no transparency log (none runs here: a signing config without one).
    pub fn sign_bundle(&self, key: &CosignKey, reference: &str) {
        self.sign_bundle_with(key, reference, &[]);
    }

    /// [`Cosign::sign_bundle`] with more flags (`--certificate`, `--certificate-chain`).
    pub fn sign_bundle_with(&self, key: &CosignKey, reference: &str, extra: &[&str]) {
        let config = self.home.path().join("signing-config.json");
        if !config.exists() {
            self.run(&["signing-config", "create", "--out", path(&config)]);
        }
        let key = path(&key.private);
        let mut args = vec![
            "sign",
            "--key",
            key,
            "--signing-config",
            path(&config),
            "--yes",
        ];
        args.extend(extra);
        args.push(reference);
        self.run(&args);
    }

    /// `cosign attest` with `key`: a statement of `predicate_type` (cosign's `--type`, a URI or
    /// one of its short names) over `predicate` (JSON), kept as v3 keeps signatures (a bundle
    /// referrer, or its tag schema), through the same signing config.
    pub fn attest(&self, key: &CosignKey, reference: &str, predicate_type: &str, predicate: &str) {
        let config = self.home.path().join("signing-config.json");
        if !config.exists() {
            self.run(&["signing-config", "create", "--out", path(&config)]);
        }
        let file = self.file("predicate.json", predicate);
        self.run(&[
            "attest",
            "--key",
            path(&key.private),
            "--signing-config",
            path(&config),
            "--type",
            predicate_type,
            "--predicate",
            path(&file),
            "--yes",
            reference,
        ]);
    }

    /// `cosign attest` with `key` in the legacy layout (a DSSE envelope under the
    /// `sha256-<hex>.att` tag), no transparency log: cosign v2's default.
    pub fn attest_legacy(&self, key: &CosignKey, reference: &str, kind: &str, predicate: &str) {
        let file = self.file("predicate.json", predicate);
        let key = path(&key.private);
        let mut args = vec!["attest", "--key", key, "--tlog-upload=false", "--yes"];
        if !self.bin.ends_with("cosign-v2") {
            args.extend(["--new-bundle-format=false", "--use-signing-config=false"]);
        }
        args.extend(["--type", kind, "--predicate", path(&file), reference]);
        self.run(&args);
    }

    /// `cosign sign` with `key` in the legacy layout (the `sha256-<hex>.sig` tag, simple
    /// signing), no transparency log: cosign v2's default, v3's with the old-format flags.
    pub fn sign_legacy(&self, key: &CosignKey, reference: &str) {
        self.sign_legacy_with(key, reference, &[]);
    }

    /// [`Cosign::sign_legacy`] with more flags (`--certificate`, `--certificate-chain`).
    pub fn sign_legacy_with(&self, key: &CosignKey, reference: &str, extra: &[&str]) {
        let key = path(&key.private);
        let mut args = vec!["sign", "--key", key, "--tlog-upload=false", "--yes"];
        if !self.bin.ends_with("cosign-v2") {
            args.extend(["--new-bundle-format=false", "--use-signing-config=false"]);
        }
        args.extend(extra);
        args.push(reference);
        self.run(&args);
    }
}

/// Runs `command` (the tool `tool` with `args`); its output, or a panic that shows it.
fn succeed(tool: &str, args: &[&str], mut command: Command) -> String {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{tool} runs: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{tool} {args:?} failed:\n{text}");
    text
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The notation CLI with a configuration directory of its own (keys, trust store).
pub struct Notation {
    home: tempfile::TempDir,
}

impl Notation {
    pub fn new() -> Notation {
        Notation {
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// Runs notation; panics with its output when it fails.
    pub fn run(&self, args: &[&str]) -> String {
        let mut command = Command::new(bin_dir().join("notation"));
        command
            .args(args)
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path());
        succeed("notation", args, command)
    }

    /// A test key and its self-signed certificate (`notation cert generate-test`): what the
    /// trust store must hold for its signatures to count. Returns the certificate's PEM.
    pub fn test_key(&self, name: &str) -> String {
        self.run(&["cert", "generate-test", name]);
        let cert = self
            .home
            .path()
            .join(format!("notation/localkeys/{name}.crt"));
        std::fs::read_to_string(cert).unwrap()
    }

    /// `notation sign` of `image@digest` with the key `name`, in `format` (`jws`, `cose`).
    pub fn sign(&self, name: &str, reference: &str, format: &str) {
        self.run(&[
            "sign",
            "--insecure-registry",
            "--key",
            name,
            "--signature-format",
            format,
            reference,
        ]);
    }
}

/// Runs the judge program `bin` (of SIGTOOLS_BIN_DIR) over `lines` (one JSON case each) and
/// returns its verdicts by id: whether valid, and its reason.
pub fn judge_lines(
    bin: &str,
    lines: Vec<String>,
) -> std::collections::BTreeMap<String, (bool, String)> {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let judge = bin_dir().join(bin);
    let mut child = Command::new(&judge)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", judge.display()));
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for line in lines {
            writeln!(stdin, "{line}").unwrap();
        }
    });
    let mut verdicts = std::collections::BTreeMap::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        let reason = v["reason"].as_str().unwrap_or_default().to_string();
        verdicts.insert(
            v["id"].as_str().unwrap().to_string(),
            (v["valid"] == true, reason),
        );
    }
    writer.join().unwrap();
    assert!(child.wait().unwrap().success(), "{bin} failed");
    verdicts
}
