//! Cloud registry login (`spec.provider: aws | azure | gcp`), lazy as in Flux: nothing is
//! fetched until the registry asks for credentials, so a provider failure is a scan failure
//! carrying the provider's error. With a ServiceAccount (object-level workload identity) the
//! object's own identity is used; without, the controller's. Credentials come from the one
//! shared [`TokenCache`]; a docker config Secret is never consulted for these providers.
//!
//! - `hosts`: which registry hosts each provider serves (Flux's patterns);
//! - `identity`: ServiceAccount annotations → provider identity;
//! - `aws`, `azure`, `gcp`: the providers' token flows;
//! - `http`, `smithy`: our HTTP client for the cloud APIs, and as the AWS SDK's;
//! - `cache`: the token cache.
//!
//! The registry client's side (host rule, credentials on first use) is `registry/login.rs`.

mod aws;
mod azure;
mod cache;
mod error;
pub(crate) mod fuzz;
mod gcp;
mod hosts;
pub(crate) mod http;
mod identity;
mod smithy;

pub use azure::ACR_USER;
pub use cache::TokenCache;
pub(in crate::registry) use cache::MAX_TOKEN_LIFE;
pub use error::CloudError;
pub use gcp::USER as GCP_USER;
pub use hosts::{registry_target, RegistryTarget, ACR_PATTERN, ECR_PATTERN, GCP_PATTERN};
pub use identity::{identity, AccountError, Identity, ServiceAccount, ServiceAccountSource};

use super::Credentials;
use cache::Secret;
use http::CloudHttp;
use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

/// A cloud provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CloudProvider {
    Aws,
    Azure,
    Gcp,
}

impl CloudProvider {
    pub fn name(self) -> &'static str {
        match self {
            CloudProvider::Aws => "aws",
            CloudProvider::Azure => "azure",
            CloudProvider::Gcp => "gcp",
        }
    }

    /// The audiences a ServiceAccount token is minted for (GCP's depend on the cluster).
    async fn audiences(
        self,
        identity: &Identity,
        http: &CloudHttp,
    ) -> Result<Vec<String>, CloudError> {
        Ok(vec![match (self, identity) {
            (CloudProvider::Aws, _) => "sts.amazonaws.com".to_string(),
            (CloudProvider::Azure, _) => azure::AUDIENCE.to_string(),
            (
                CloudProvider::Gcp,
                Identity::Gcp {
                    provider_audience, ..
                },
            ) => gcp::token_audience(provider_audience.as_deref(), http).await?,
            (CloudProvider::Gcp, _) => return Err("not a Google identity".into()),
        }])
    }
}

impl fmt::Display for CloudProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How one object logs in: the provider, and the ServiceAccount it acts as (object-level
/// workload identity), if any.
#[derive(Clone)]
pub struct CloudLogin {
    pub provider: CloudProvider,
    pub service_account: Option<Arc<dyn ServiceAccountSource>>,
}

impl fmt::Debug for CloudLogin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.service_account {
            Some(sa) => write!(
                f,
                "CloudLogin({}, serviceaccount {})",
                self.provider,
                sa.key()
            ),
            None => write!(f, "CloudLogin({})", self.provider),
        }
    }
}

impl CloudLogin {
    pub fn new(provider: CloudProvider) -> Self {
        CloudLogin {
            provider,
            service_account: None,
        }
    }

    /// Registry credentials for `host`; the error is Flux's message chain.
    pub(crate) async fn credentials(
        &self,
        host: &str,
        http: &CloudHttp,
        cache: &TokenCache,
    ) -> Result<Credentials, CloudError> {
        let target = registry_target(self.provider, host)?;
        let access = self
            .access_token(&target, http, cache)
            .await
            .map_err(|e| format!("failed to get access token for artifact registry: {e}"))?;
        let key = format!(
            "{};artifactRepositoryCacheKey={}",
            access.1,
            target.registry_key()
        );
        let secret = cache
            .get_or_fetch(&key, || async {
                let (creds, expires) = self.registry_credentials(&target, access.0, http).await?;
                Ok((Secret::Registry(creds), expires))
            })
            .await
            .map_err(|e| format!("failed to create artifact registry credentials: {e}"))?;
        match secret {
            Secret::Registry(creds) => Ok(creds),
            _ => Err("the token cache holds another kind of secret under this key".into()),
        }
    }

    /// The provider access token and its cache key.
    async fn access_token(
        &self,
        target: &RegistryTarget,
        http: &CloudHttp,
        cache: &TokenCache,
    ) -> Result<(Secret, String), CloudError> {
        let mut key = format!("provider={}", self.provider);
        let resolved = match &self.service_account {
            None => None,
            Some(source) => {
                let sa = source.get().await.map_err(|e| {
                    format!("failed to get service account '{}': {e}", source.key())
                })?;
                let identity = identity(self.provider, &sa).map_err(|e| {
                    format!(
                        "failed to get provider identity from service account '{}/{}' annotations: {e}",
                        sa.namespace, sa.name
                    )
                })?;
                let audiences = self
                    .provider
                    .audiences(&identity, http)
                    .await
                    .map_err(|e| format!("failed to get provider audience: {e}"))?;
                key.push_str(&format!(
                    ";providerIdentity={};serviceAccountName={};serviceAccountNamespace={};serviceAccountTokenAudiences={}",
                    identity.key(),
                    sa.name,
                    sa.namespace,
                    audiences.join(",")
                ));
                Some((source.clone(), sa, identity, audiences))
            }
        };
        key.push_str(&format!(";{};proxyURL={}", target.access_key(), http.proxy));
        let secret = cache
            .get_or_fetch(&key, || async {
                match &resolved {
                    None => self.controller_token(target, http).await.map_err(|e| {
                        e.within("failed to create provider access token for the controller")
                    }),
                    Some((source, sa, identity, audiences)) => {
                        let who = format!("{}/{}", sa.namespace, sa.name);
                        let oidc = source.token(audiences).await.map_err(|e| {
                            CloudError::from(format!("failed to create kubernetes token for service account '{who}': {e}"))
                        })?;
                        self.service_account_token(target, sa, identity, &oidc, http)
                            .await
                            .map_err(|e| {
                                e.within(format!("failed to create provider access token for service account '{who}'"))
                            })
                    }
                }
            })
            .await?;
        Ok((secret, key))
    }

    async fn controller_token(
        &self,
        target: &RegistryTarget,
        http: &CloudHttp,
    ) -> Result<(Secret, SystemTime), CloudError> {
        match (self.provider, target) {
            (CloudProvider::Aws, _) => aws::controller_credentials(target.aws_region(), http)
                .await
                .map(|(c, at)| (Secret::Aws(c), at)),
            (CloudProvider::Azure, RegistryTarget::Acr { scope, .. }) => {
                bearer(azure::controller_token(scope, http).await)
            }
            (CloudProvider::Gcp, _) => bearer(gcp::controller_token(http).await),
            (CloudProvider::Azure, _) => Err("not an Azure registry".into()),
        }
    }

    async fn service_account_token(
        &self,
        target: &RegistryTarget,
        sa: &ServiceAccount,
        identity: &Identity,
        oidc: &str,
        http: &CloudHttp,
    ) -> Result<(Secret, SystemTime), CloudError> {
        match (identity, target) {
            (Identity::Aws { role_arn }, _) => {
                let region = target.aws_region();
                let session = aws::role_session_name(&sa.name, &sa.namespace, region);
                aws::assume_role(region, role_arn, &session, oidc, http)
                    .await
                    .map(|(c, at)| (Secret::Aws(c), at))
            }
            (
                Identity::Azure {
                    tenant_id,
                    client_id,
                },
                RegistryTarget::Acr { scope, .. },
            ) => {
                let proof = azure::ClientProof::Assertion(oidc.to_string());
                bearer(azure::entra_token(tenant_id, client_id, proof, scope, http).await)
            }
            (
                Identity::Gcp {
                    email,
                    provider_audience,
                },
                _,
            ) => bearer(
                gcp::service_account_token(
                    oidc,
                    provider_audience.as_deref(),
                    email.as_deref(),
                    http,
                )
                .await,
            ),
            (Identity::Azure { .. }, _) => Err("not an Azure registry".into()),
        }
    }

    async fn registry_credentials(
        &self,
        target: &RegistryTarget,
        access: Secret,
        http: &CloudHttp,
    ) -> Result<(Credentials, SystemTime), CloudError> {
        match (access, target) {
            (Secret::Aws(creds), _) => aws::registry_credentials(target, creds, http).await,
            (Secret::Bearer(token, _), RegistryTarget::Acr { host, .. }) => {
                azure::registry_credentials(host, &token, http).await
            }
            (Secret::Bearer(token, expires), _) => {
                // A Google access token is the password itself, and expires with it.
                Ok((
                    Credentials {
                        username: gcp::USER.into(),
                        password: token,
                    },
                    expires,
                ))
            }
            (Secret::Registry(_), _) => Err("not a provider access token".into()),
        }
    }
}

fn bearer(
    result: Result<(String, SystemTime), CloudError>,
) -> Result<(Secret, SystemTime), CloudError> {
    result.map(|(token, at)| (Secret::Bearer(token, at), at))
}
