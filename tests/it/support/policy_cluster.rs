//! The cluster an ImagePolicy reconcile reads, without an API server: ImageRepositories by
//! name, the pull-credentials Secret `creds` (its reads counted) and the trusted keys' Secret
//! `cosign-keys`. The gate tests and `benches/gates.rs` share it.

use image_reflector::api::ImageRepository;
use image_reflector::controller::image_policy::decide::PolicyReader;
use image_reflector::controller::lookup::api_read::ReadError;
use image_reflector::controller::lookup::credentials::ObjectReader;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::ByteString;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The name of the trusted keys' Secret.
pub const KEYS_SECRET: &str = "cosign-keys";

pub struct Cluster {
    pub repositories: Vec<ImageRepository>,
    /// The entries of the keys' Secret (`cosign.pub` → PEM).
    pub keys: BTreeMap<String, String>,
    creds_reads: AtomicUsize,
}

impl Cluster {
    pub fn new(repositories: Vec<ImageRepository>) -> Cluster {
        Cluster {
            repositories,
            keys: BTreeMap::new(),
            creds_reads: AtomicUsize::new(0),
        }
    }

    /// How many times the Secret `creds` was read.
    pub fn creds_reads(&self) -> usize {
        self.creds_reads.load(Ordering::SeqCst)
    }
}

fn secret(type_: Option<&str>, entries: impl IntoIterator<Item = (String, String)>) -> Secret {
    Secret {
        type_: type_.map(String::from),
        data: Some(
            entries
                .into_iter()
                .map(|(k, v)| (k, ByteString(v.into_bytes())))
                .collect(),
        ),
        ..Default::default()
    }
}

impl ObjectReader for Cluster {
    async fn secret(&self, _: &str, name: &str) -> Result<Option<Secret>, ReadError> {
        Ok(match name {
            "creds" => {
                self.creds_reads.fetch_add(1, Ordering::SeqCst);
                let config = r#"{"auths": {"unused.example": {"auth": "dTpw"}}}"#;
                Some(secret(
                    Some("kubernetes.io/dockerconfigjson"),
                    [(".dockerconfigjson".to_string(), config.to_string())],
                ))
            }
            KEYS_SECRET => Some(secret(None, self.keys.clone())),
            _ => None,
        })
    }

    async fn service_account(&self, _: &str, _: &str) -> Result<Option<ServiceAccount>, ReadError> {
        Ok(None)
    }
}

impl PolicyReader for Cluster {
    async fn image_repository(
        &self,
        _: &str,
        name: &str,
    ) -> Result<Option<ImageRepository>, ReadError> {
        let named = |r: &&ImageRepository| r.metadata.name.as_deref() == Some(name);
        Ok(self.repositories.iter().find(named).cloned())
    }

    async fn namespace_labels(
        &self,
        _: &str,
    ) -> Result<Option<BTreeMap<String, String>>, ReadError> {
        Ok(Some(BTreeMap::new()))
    }
}
