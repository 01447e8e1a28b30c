//! A real CNCF Distribution registry (Debian's `docker-registry`) on 127.0.0.1 with a free port
//! and its own storage, in the variants the tests need: plain HTTP, htpasswd Basic auth, TLS
//! with a CA made here, and mTLS. Images are pushed with oci-client, an independent client, so
//! our digests are checked against bytes we wrote and another implementation uploaded.

use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Reference, RegistryOperation};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};
use reqwest::header::HeaderValue;
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BINARY: &str = "/usr/bin/docker-registry";

/// A CA, a server certificate for 127.0.0.1/localhost and a client certificate, all PEM.
pub struct Pki {
    pub ca: String,
    pub server_cert: String,
    pub server_key: String,
    pub client_cert: String,
    pub client_key: String,
}

impl Pki {
    pub fn new() -> Pki {
        let ca = test_ca("image-reflector test CA");
        let leaf = |purpose: ExtendedKeyUsagePurpose| {
            let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
            params
                .subject_alt_names
                .push(SanType::IpAddress([127, 0, 0, 1].into()));
            params.extended_key_usages = vec![purpose];
            let key = KeyPair::generate().unwrap();
            let cert = params.signed_by(&key, &ca).unwrap();
            (cert.pem(), key.serialize_pem())
        };
        let (server_cert, server_key) = leaf(ExtendedKeyUsagePurpose::ServerAuth);
        let (client_cert, client_key) = leaf(ExtendedKeyUsagePurpose::ClientAuth);
        Pki {
            ca: ca.pem(),
            server_cert,
            server_key,
            client_cert,
            client_key,
        }
    }
}

impl Pki {
    /// A CA and one server certificate naming `hosts` (cloud registry and API host names,
    /// reached on loopback through a CONNECT proxy); no client certificate.
    pub fn for_hosts(hosts: &[&str]) -> Pki {
        let ca = test_ca("image-reflector cloud test CA");
        let names: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca).unwrap();
        Pki {
            ca: ca.pem(),
            server_cert: cert.pem(),
            server_key: key.serialize_pem(),
            client_cert: String::new(),
            client_key: String::new(),
        }
    }
}

/// A self-signed CA named `name`.
fn test_ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

/// How to run the registry.
#[derive(Default)]
pub struct Variant<'a> {
    pub tls: Option<&'a Pki>,
    /// Require a client certificate signed by the test CA.
    pub mutual_tls: bool,
    pub basic: Option<(&'a str, &'a str)>,
    /// Serve this storage (another instance's) instead of a fresh one.
    pub storage: Option<PathBuf>,
}

/// A running registry; stopped (by its own PID) when dropped.
pub struct Distribution {
    /// `127.0.0.1:<port>`.
    pub host: String,
    pub storage: PathBuf,
    tls: bool,
    basic: Option<(String, String)>,
    ca: Option<String>,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Distribution {
    pub fn start(variant: Variant<'_>) -> Distribution {
        assert!(
            Path::new(BINARY).exists(),
            "{BINARY} is missing: run `make deps` (apt-get install docker-registry apache2-utils)"
        );
        let dir = tempfile::tempdir().unwrap();
        let storage = variant
            .storage
            .clone()
            .unwrap_or_else(|| dir.path().join("data"));
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let host = format!("127.0.0.1:{port}");
        let mut config = format!(
            "version: 0.1\nlog: {{level: info}}\nstorage:\n  filesystem: {{rootdirectory: {}}}\n  \
             delete: {{enabled: true}}\n  maintenance: {{uploadpurging: {{enabled: false}}}}\n\
             http:\n  addr: {host}\n  secret: test-only\n",
            storage.display()
        );
        if let Some(pki) = variant.tls {
            let write = |name: &str, text: &str| {
                let path = dir.path().join(name);
                std::fs::write(&path, text).unwrap();
                path.display().to_string()
            };
            config.push_str(&format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                write("server.crt", &pki.server_cert),
                write("server.key", &pki.server_key)
            ));
            if variant.mutual_tls {
                config.push_str(&format!("    clientcas: [{}]\n", write("ca.crt", &pki.ca)));
            }
        }
        if let Some((user, pass)) = variant.basic {
            let out = Command::new("htpasswd")
                .args(["-Bbn", user, pass])
                .output()
                .expect("htpasswd runs: run `make deps` (apt-get install apache2-utils)");
            assert!(out.status.success(), "htpasswd failed");
            let path = dir.path().join("htpasswd");
            std::fs::write(&path, out.stdout).unwrap();
            config.push_str(&format!(
                "auth:\n  htpasswd: {{realm: test, path: {}}}\n",
                path.display()
            ));
        }
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config).unwrap();
        let mut child = Command::new(BINARY)
            .arg("serve")
            .arg(&config_path)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("docker-registry starts");
        // Ready when it logs that it listens; the log is drained for the registry's lifetime.
        let stderr = child.stderr.take().unwrap();
        let (ready, listening) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stderr).lines();
            for line in lines.by_ref().map_while(Result::ok) {
                if line.contains("listening on") {
                    let _ = ready.send(Ok(()));
                    break;
                }
                if line.contains("level=fatal") || line.contains("level=panic") {
                    let _ = ready.send(Err(line));
                    return;
                }
            }
            for _ in lines {}
        });
        match listening.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(())) => {}
            other => {
                let _ = child.kill();
                panic!("docker-registry did not start: {other:?}");
            }
        }
        Distribution {
            host,
            storage,
            tls: variant.tls.is_some(),
            basic: variant.basic.map(|(u, p)| (u.into(), p.into())),
            ca: variant.tls.map(|p| p.ca.clone()),
            child,
            _dir: dir,
        }
    }

    /// An oci-client set up for this registry, and the auth to push with.
    pub(crate) async fn pusher(&self, repository: &str) -> (oci_client::Client, RegistryAuth) {
        image_reflector::registry::install_crypto_provider();
        let config = ClientConfig {
            protocol: if self.tls {
                ClientProtocol::Https
            } else {
                ClientProtocol::Http
            },
            extra_root_certificates: self
                .ca
                .iter()
                .map(|pem| Certificate {
                    encoding: CertificateEncoding::Pem,
                    data: pem.as_bytes().to_vec(),
                })
                .collect(),
            ..Default::default()
        };
        let client = oci_client::Client::try_from(config).expect("oci-client builds");
        let auth = match &self.basic {
            Some((u, p)) => RegistryAuth::Basic(u.clone(), p.clone()),
            None => RegistryAuth::Anonymous,
        };
        let reference = self.reference(repository, "x");
        client
            .auth(&reference, &auth, RegistryOperation::Push)
            .await
            .expect("push auth");
        (client, auth)
    }

    pub(crate) fn reference(&self, repository: &str, tag: &str) -> Reference {
        Reference::with_tag(self.host.clone(), repository.into(), tag.into())
    }

    /// Deletes the manifest `digest` (the registry allows deletes): Distribution removes the
    /// tags that named it from the listing, as a publisher deleting a release does.
    pub async fn delete_manifest(&self, repository: &str, digest: &str) {
        assert!(
            !self.tls && self.basic.is_none(),
            "delete_manifest speaks plain HTTP without auth"
        );
        let url = format!("http://{}/v2/{repository}/manifests/{digest}", self.host);
        let response = reqwest::Client::new().delete(&url).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 202, "DELETE {url}");
    }

    /// Pushes a single-platform image under every tag of `tags`; returns the manifest digest.
    pub async fn push_image(&self, repository: &str, tags: &[String]) -> String {
        self.push_image_variant(repository, tags, "").await
    }

    /// As [`Distribution::push_image`], with `variant` in the layer: another variant is another
    /// image (a re-pushed tag moves to a new digest).
    pub async fn push_image_variant(
        &self,
        repository: &str,
        tags: &[String],
        variant: &str,
    ) -> String {
        let (client, _) = self.pusher(repository).await;
        let reference = self.reference(repository, "x");
        let manifest = push_platform(&client, &reference, "amd64", false, variant).await;
        let mut tasks = tokio::task::JoinSet::new();
        for chunk in tags.chunks(tags.len().div_ceil(8).max(1)) {
            let (client, manifest, chunk) = (client.clone(), manifest.clone(), chunk.to_vec());
            let references: Vec<Reference> = chunk
                .iter()
                .map(|t| self.reference(repository, t))
                .collect();
            tasks.spawn(async move {
                for reference in references {
                    client
                        .push_manifest_raw(&reference, manifest.clone(), media(OCI_MANIFEST))
                        .await
                        .expect("manifest push");
                }
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.unwrap();
        }
        digest(&manifest)
    }

    /// Pushes two platform images and an index over them (OCI index, or a Docker manifest
    /// list with Docker manifests); returns the index digest.
    pub async fn push_index(&self, repository: &str, tag: &str, docker: bool) -> String {
        let (client, _) = self.pusher(repository).await;
        let reference = self.reference(repository, tag);
        let (kind, child_kind) = if docker {
            (DOCKER_LIST, DOCKER_MANIFEST)
        } else {
            (OCI_INDEX, OCI_MANIFEST)
        };
        let mut entries = Vec::new();
        for arch in ["amd64", "arm64"] {
            let manifest = push_platform(&client, &reference, arch, docker, "").await;
            entries.push(serde_json::json!({
                "mediaType": child_kind,
                "digest": digest(&manifest),
                "size": manifest.len(),
                "platform": { "architecture": arch, "os": "linux" },
            }));
        }
        let index = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": kind,
            "manifests": entries,
        }))
        .unwrap();
        client
            .push_manifest_raw(&reference, index.clone(), media(kind))
            .await
            .expect("index push");
        digest(&index)
    }
}

impl Distribution {
    /// Another registry process on loopback (plain HTTP, no auth), started by the caller:
    /// pushed to and stopped like Distribution (the referrers registry of `support::sigtools`).
    pub fn adopt(host: String, child: Child) -> Distribution {
        let dir = tempfile::tempdir().unwrap();
        Distribution {
            host,
            storage: dir.path().join("data"),
            tls: false,
            basic: None,
            ca: None,
            child,
            _dir: dir,
        }
    }

    /// Stops the registry: its host then refuses connections.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Distribution {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";

pub(crate) fn media(kind: &str) -> HeaderValue {
    HeaderValue::from_str(kind).unwrap()
}

pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// Uploads a config and a layer for `arch` and returns the manifest bytes (not yet pushed
/// under a tag, except by the digest an index refers to).
async fn push_platform(
    client: &oci_client::Client,
    reference: &Reference,
    arch: &str,
    docker: bool,
    variant: &str,
) -> Vec<u8> {
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": arch, "os": "linux",
        "rootfs": { "type": "layers", "diff_ids": [] },
    }))
    .unwrap();
    let layer = format!("layer for {arch}{variant}").into_bytes();
    for blob in [&config, &layer] {
        client
            .push_blob(reference, blob.clone(), &digest(blob))
            .await
            .expect("blob push");
    }
    let (manifest_kind, config_kind, layer_kind) = if docker {
        (
            DOCKER_MANIFEST,
            "application/vnd.docker.container.image.v1+json",
            "application/vnd.docker.image.rootfs.diff.tar.gzip",
        )
    } else {
        (
            OCI_MANIFEST,
            "application/vnd.oci.image.config.v1+json",
            "application/vnd.oci.image.layer.v1.tar",
        )
    };
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": manifest_kind,
        "config": { "mediaType": config_kind, "digest": digest(&config), "size": config.len() },
        "layers": [{ "mediaType": layer_kind, "digest": digest(&layer), "size": layer.len() }],
    }))
    .unwrap();
    let by_digest = Reference::with_digest(
        reference.registry().to_string(),
        reference.repository().to_string(),
        digest(&manifest),
    );
    client
        .push_manifest_raw(&by_digest, manifest.clone(), media(manifest_kind))
        .await
        .expect("manifest push");
    manifest
}
