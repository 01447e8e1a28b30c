//! What the credential lookup reads with and how it fails: the [`ObjectReader`] of Secrets and
//! ServiceAccounts (the API server in the controller, manifest files in `image-reflector
//! scan`), object-level workload identity's settings, and [`AuthError`].

use super::api_read::ReadError;
use super::token_request::AccountReadError;
use crate::api::{ImageRepository, Provider};
use crate::registry::cloud::{AccountError, ServiceAccountSource};
use crate::registry::ConfigError;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use std::future::Future;
use std::sync::Arc;

/// Reads the Secrets and ServiceAccounts an object refers to. `Ok(None)` is "not found".
pub trait ObjectReader: Send + Sync {
    fn secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<Secret>, ReadError>> + Send;

    fn service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<ServiceAccount>, ReadError>> + Send;

    /// The ServiceAccount a cloud login acts as (object-level workload identity): read and
    /// minted lazily, when the registry first asks for credentials. By default, a reader has
    /// none to offer.
    fn service_account_source(&self, namespace: &str, name: &str) -> Arc<dyn ServiceAccountSource> {
        Arc::new(NoServiceAccounts(format!("{namespace}/{name}")))
    }
}

/// For readers without ServiceAccounts: every use fails, naming the account.
struct NoServiceAccounts(String);

impl ServiceAccountSource for NoServiceAccounts {
    fn key(&self) -> String {
        self.0.clone()
    }

    fn get(&self) -> BoxFuture<'_, Result<crate::registry::cloud::ServiceAccount, AccountError>> {
        Box::pin(async { Err(AccountReadError::NoAccounts.into()) })
    }

    fn token<'a>(&'a self, _: &'a [String]) -> BoxFuture<'a, Result<String, AccountError>> {
        Box::pin(async { Err(AccountReadError::NoTokens.into()) })
    }
}

/// Object-level workload identity settings (`--feature-gates=ObjectLevelWorkloadIdentity`,
/// `--default-service-account`).
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkloadIdentity<'a> {
    pub enabled: bool,
    pub default_service_account: Option<&'a str>,
}

impl WorkloadIdentity<'_> {
    /// Whether `repo` asks for object-level workload identity (a cloud provider with a
    /// ServiceAccount) while the gate is off. Unlike Flux, an absent provider counts as
    /// `generic`, as everywhere else (docs/compatibility.md).
    pub fn refuses(&self, repo: &ImageRepository) -> bool {
        let object_level = repo.spec.provider.is_some_and(|p| p != Provider::Generic)
            && repo
                .spec
                .service_account_name
                .as_deref()
                .is_some_and(|s| !s.is_empty());
        object_level && !self.enabled
    }
}

/// Why the options could not be built; shown as `failed to configure authentication options:
/// <text>` with reason `AuthenticationFailed`.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// A Secret or ServiceAccount could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The proxy Secret is missing.
    #[error("secret '{namespace}/{name}' not found")]
    ProxySecretNotFound { namespace: String, name: String },
    /// A Secret is missing: the API server's own NotFound text, as Flux reports it.
    #[error("secrets \"{0}\" not found")]
    SecretNotFound(String),
    #[error("serviceaccount '{namespace}/{name}' not found")]
    ServiceAccountNotFound { namespace: String, name: String },
    /// A Secret's data is not what its field needs.
    #[error("{what}'{name}': {source}")]
    Invalid {
        /// `invalid proxy secret ` or `secret `.
        what: &'static str,
        name: String,
        source: ConfigError,
    },
    /// The `certSecretRef` Secret's data (the text names the key).
    #[error(transparent)]
    Tls(ConfigError),
    /// One of a ServiceAccount's imagePullSecrets.
    #[error("failed to get image pull secret '{name}' for serviceaccount '{namespace}/{account}': {source}")]
    PullSecret {
        name: String,
        namespace: String,
        account: String,
        source: Box<AuthError>,
    },
}
