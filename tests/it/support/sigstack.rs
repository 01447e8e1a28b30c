//! Sigstore's own services on loopback, built from their Go modules by `make sigtools`: a
//! Rekor v2 log (rekor-tiles' POSIX server, an Ed25519 key made here, its checkpoints' origin
//! [`ORIGIN`]), a timestamp authority (timestamp-server, its in-memory signer) and, when asked,
//! Fulcio (its ephemeral CA) trusting an OIDC issuer of the tests' (`support::oidc`). cosign v3
//! signs through them with [`SigstoreStack::signing_config`]; a trusted root names them with
//! [`SigstoreStack::tlog`] and [`SigstoreStack::timestamp_authority`]. Each process stops with
//! the value. timestamp-server serves its metrics on port 2112 whatever it is told (the port is
//! fixed in its code), so one stack runs at a time (a lock) and nothing else may hold that port.

use super::sigtools::bin_dir;
use base64::Engine;
use rcgen::{KeyPair, PublicKeyData};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The log's name in its checkpoints, and the host of its `baseUrl` in a trusted root.
pub const ORIGIN: &str = "rekor.local";

pub struct SigstoreStack {
    /// One stack at a time (timestamp-server's fixed metrics port).
    _one: MutexGuard<'static, ()>,
    children: Vec<Child>,
    dir: tempfile::TempDir,
    rekor: String,
    tsa: String,
    /// Fulcio's URL, once [`SigstoreStack::with_fulcio`] started it.
    fulcio: Option<String>,
    /// Rekor v1's URL and key (SubjectPublicKeyInfo DER), once
    /// [`SigstoreStack::with_rekor_v1`] started it.
    rekor_v1: Option<(String, Vec<u8>)>,
    /// The log key's SubjectPublicKeyInfo (DER).
    rekor_key: Vec<u8>,
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// GET `path` of `port` on loopback (HTTP/1.0): the status and body, or `None` while nothing
/// answers.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n")?.1.to_string();
    Some((status, body))
}

/// Waits until `path` of `port` answers 200, or panics after a minute naming `what` and
/// showing what it wrote to `log`.
fn await_ready(port: u16, path: &str, what: &str, child: &mut Child, log: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some((200, body)) = get(port, path) {
            return body;
        }
        if let Ok(Some(status)) = child.try_wait() {
            let said = std::fs::read_to_string(log).unwrap_or_default();
            panic!("{what} exited ({status}) before it answered:\n{said}");
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not answer {path} in a minute"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl SigstoreStack {
    pub fn start() -> SigstoreStack {
        static ONE: Mutex<()> = Mutex::new(());
        let one = ONE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let bin = bin_dir();
        let dir = tempfile::tempdir().unwrap();
        let key = KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        let key_file = dir.path().join("rekor.pem");
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        let (http, grpc, metrics, tsa) = (free_port(), free_port(), free_port(), free_port());
        let (rekor_log, tsa_log) = (dir.path().join("rekor.log"), dir.path().join("tsa.log"));
        let log = |at: &Path| Stdio::from(std::fs::File::create(at).unwrap());
        let mut rekor = Command::new(bin.join("rekor-server"))
            .arg("serve")
            .args(["--hostname", ORIGIN, "--storage-dir"])
            .arg(dir.path().join("log"))
            .arg("--signer-filepath")
            .arg(&key_file)
            .args(["--http-address", "127.0.0.1", "--grpc-address", "127.0.0.1"])
            .args([
                "--http-port",
                &http.to_string(),
                "--grpc-port",
                &grpc.to_string(),
            ])
            .args(["--http-metrics-port", &metrics.to_string()])
            // Entries are sequenced and a checkpoint published within a second, so that a
            // signing waits that long for its inclusion proof rather than ten seconds.
            .args(["--batch-max-age", "100ms", "--checkpoint-interval", "500ms"])
            .stdout(Stdio::null())
            .stderr(log(&rekor_log))
            .spawn()
            .expect("rekor-server starts");
        let mut timestamps = Command::new(bin.join("timestamp-server"))
            .args(["serve", "--host", "127.0.0.1", "--port", &tsa.to_string()])
            .args(["--timestamp-signer", "memory"])
            .stdout(Stdio::null())
            .stderr(log(&tsa_log))
            .spawn()
            .expect("timestamp-server starts");
        await_ready(http, "/healthz", "rekor-server", &mut rekor, &rekor_log);
        let chain = "/api/v1/timestamp/certchain";
        await_ready(tsa, chain, "timestamp-server", &mut timestamps, &tsa_log);
        SigstoreStack {
            _one: one,
            children: vec![rekor, timestamps],
            dir,
            fulcio: None,
            rekor_v1: None,
            rekor: format!("http://127.0.0.1:{http}"),
            tsa: format!("http://127.0.0.1:{tsa}"),
            rekor_key: key.subject_public_key_info(),
        }
    }

    /// Starts Fulcio too (its ephemeral CA, no CT log), trusting ID tokens of `issuer` for the
    /// audience `sigstore` as email identities.
    pub fn with_fulcio(mut self, issuer: &str) -> SigstoreStack {
        let config = self.dir.path().join("fulcio.json");
        let issuers = json!({"OIDCIssuers": {issuer: {"IssuerURL": issuer, "ClientID": "sigstore",
            "Type": "email"}}});
        std::fs::write(&config, issuers.to_string()).unwrap();
        let (http, grpc, metrics) = (free_port(), free_port(), free_port());
        let log = self.dir.path().join("fulcio.log");
        let mut fulcio = Command::new(bin_dir().join("fulcio"))
            .args(["serve", "--host", "127.0.0.1", "--grpc-host", "127.0.0.1"])
            .args([
                "--port",
                &http.to_string(),
                "--grpc-port",
                &grpc.to_string(),
            ])
            .args(["--metrics-port", &metrics.to_string()])
            .args(["--legacy-unix-domain-socket", &format!("@fulcio-{http}")])
            .args(["--ca", "ephemeralca", "--ct-log-url", ""])
            .arg("--config-path")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
            .spawn()
            .expect("fulcio starts");
        await_ready(http, "/api/v2/trustBundle", "fulcio", &mut fulcio, &log);
        self.children.push(fulcio);
        self.fulcio = Some(format!("http://127.0.0.1:{http}"));
        self
    }

    /// Starts Rekor v1 too, over an in-memory Trillian (tests/sigtools/trillian). After the
    /// timestamp authority, which must hold the metrics port both want (Rekor v1 does without).
    pub fn with_rekor_v1(mut self) -> SigstoreStack {
        let bin = bin_dir();
        let trillian_log = self.dir.path().join("trillian.log");
        let mut trillian = Command::new(bin.join("trillian"))
            .stdout(Stdio::piped())
            .stderr(Stdio::from(std::fs::File::create(&trillian_log).unwrap()))
            .spawn()
            .expect("trillian starts");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(trillian.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        self.children.push(trillian);
        let (address, tree) = line.trim().split_once(' ').unwrap_or_else(|| {
            let said = std::fs::read_to_string(&trillian_log).unwrap_or_default();
            panic!("trillian said {line:?}:\n{said}")
        });
        let port = free_port();
        let log = self.dir.path().join("rekor-v1.log");
        let mut rekor = Command::new(bin.join("rekor-v1-server"))
            .arg("serve")
            .args(["--trillian_log_server.address", "127.0.0.1"])
            .args([
                "--trillian_log_server.port",
                address.rsplit(':').next().unwrap(),
            ])
            .args(["--trillian_log_server.tlog_id", tree])
            .args([
                "--rekor_server.address",
                "127.0.0.1",
                "--port",
                &port.to_string(),
            ])
            .args(["--rekor_server.hostname", "rekor-v1.local"])
            .arg("--enable_retrieve_api=false")
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
            .spawn()
            .expect("rekor-v1-server starts");
        await_ready(port, "/api/v1/log", "rekor-v1-server", &mut rekor, &log);
        let (status, pem) = get(port, "/api/v1/log/publicKey").unwrap();
        assert_eq!(status, 200, "Rekor v1's key: {pem}");
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap();
        self.children.push(rekor);
        self.rekor_v1 = Some((format!("http://127.0.0.1:{port}"), der));
        self
    }

    /// A signing config that logs in Rekor v1 and gets certificates from Fulcio: no timestamp
    /// authority, as the public-good instance signed before Rekor v2.
    pub fn signing_config_v1(&self) -> String {
        let (url, _) = self.rekor_v1.as_ref().expect("with_rekor_v1 first");
        let mut config: Value = serde_json::from_str(&self.signing_config()).unwrap();
        config["rekorTlogUrls"] = json!([{"url": url, "majorApiVersion": 1, "operator": "test",
            "validFor": {"start": "2020-01-01T00:00:00Z"}}]);
        config["tsaUrls"] = json!([]);
        config.to_string()
    }

    /// Rekor v1 in a trusted root's `tlogs`: its id is the SHA-256 of its key.
    pub fn tlog_v1(&self) -> Value {
        let (url, der) = self.rekor_v1.as_ref().expect("with_rekor_v1 first");
        json!({"baseUrl": url, "hashAlgorithm": "SHA2_256",
            "publicKey": {"rawBytes": b64(der), "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                "validFor": {"start": "2020-01-01T00:00:00Z"}},
            "logId": {"keyId": b64(&Sha256::digest(der))}})
    }

    /// A cosign signing config (v0.2) that logs in this Rekor v2 and timestamps with this
    /// authority, and gets certificates from this Fulcio when it runs (else the tests bring
    /// their certificates).
    pub fn signing_config(&self) -> String {
        let service = |url: String, version: u32| {
            json!({"url": url, "majorApiVersion": version, "operator": "test",
                "validFor": {"start": "2020-01-01T00:00:00Z"}})
        };
        let ca: Vec<Value> = self
            .fulcio
            .iter()
            .map(|url| service(url.clone(), 1))
            .collect();
        json!({"mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json",
            "caUrls": ca,
            "rekorTlogUrls": [service(self.rekor.clone(), 2)],
            "tsaUrls": [service(format!("{}/api/v1/timestamp", self.tsa), 1)],
            "rekorTlogConfig": {"selector": "ANY"}, "tsaConfig": {"selector": "ANY"}})
        .to_string()
    }

    /// Fulcio's CA in a trusted root's `certificateAuthorities`: its chain as it serves it.
    pub fn certificate_authority(&self) -> Value {
        let url = self.fulcio.as_ref().expect("with_fulcio first");
        let port = url.rsplit(':').next().unwrap().parse().unwrap();
        let (status, text) = get(port, "/api/v2/trustBundle").unwrap();
        assert_eq!(status, 200, "Fulcio's chain: {text}");
        let bundle: Value = serde_json::from_str(&text).unwrap();
        let pems = bundle["chains"][0]["certificates"].as_array().unwrap();
        let certificates: Vec<Value> = pems
            .iter()
            .map(|pem| json!({"rawBytes": pem_body(pem.as_str().unwrap())}))
            .collect();
        json!({"subject": {"organization": "test", "commonName": "fulcio"}, "uri": url,
            "certChain": {"certificates": certificates},
            "validFor": {"start": "2020-01-01T00:00:00Z"}})
    }

    /// This log in a trusted root's `tlogs`: its id is rekor-tiles' (the SHA-256 of the origin,
    /// a newline, the Ed25519 algorithm byte and the key).
    pub fn tlog(&self) -> Value {
        let raw = &self.rekor_key[self.rekor_key.len() - 32..];
        let id = Sha256::new()
            .chain_update(ORIGIN.as_bytes())
            .chain_update(b"\n\x01")
            .chain_update(raw)
            .finalize();
        json!({"baseUrl": format!("http://{ORIGIN}"), "hashAlgorithm": "SHA2_256",
            "publicKey": {"rawBytes": b64(&self.rekor_key), "keyDetails": "PKIX_ED25519",
                "validFor": {"start": "2020-01-01T00:00:00Z"}},
            "logId": {"keyId": b64(&id)}})
    }

    /// This authority in a trusted root's `timestampAuthorities`: its chain as it serves it
    /// (leaf, intermediate, root).
    pub fn timestamp_authority(&self) -> Value {
        let port = self.tsa.rsplit(':').next().unwrap().parse().unwrap();
        let (status, pem) = get(port, "/api/v1/timestamp/certchain").unwrap();
        assert_eq!(status, 200, "the authority's chain: {pem}");
        let certificates: Vec<Value> = pem
            .split("-----BEGIN CERTIFICATE-----")
            .skip(1)
            .map(|c| json!({"rawBytes": pem_body(c)}))
            .collect();
        assert_eq!(certificates.len(), 3, "leaf, intermediate, root: {pem}");
        json!({"subject": {"organization": "local", "commonName": "Test TSA"}, "uri": self.tsa,
            "certChain": {"certificates": certificates},
            "validFor": {"start": "2020-01-01T00:00:00Z"}})
    }
}

/// The base64 of a PEM certificate (with or without its BEGIN line).
fn pem_body(pem: &str) -> String {
    let after = pem.split("-----BEGIN CERTIFICATE-----").last().unwrap();
    let body = after.split("-----END CERTIFICATE-----").next().unwrap();
    body.split_whitespace().collect()
}

impl Drop for SigstoreStack {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
