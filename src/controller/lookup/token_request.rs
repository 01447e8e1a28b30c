//! The ServiceAccount an object acts as for object-level workload identity, through the API
//! server: read live, and its tokens minted with the TokenRequest API
//! (`serviceaccounts/token`, create; granted in config/rbac). Tokens are short-lived and
//! bound to the audience the provider names; they are never logged.

use super::api_read::{read_named, ReadError};
use crate::registry::cloud::{
    AccountError, ServiceAccount as CloudServiceAccount, ServiceAccountSource,
};
use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::PostParams;
use kube::{Api, Client};

/// How long minted tokens live: the API server's minimum is 10 minutes; the provider's own
/// token, not this one, is what the cache keeps.
const TOKEN_SECONDS: i64 = 600;

/// Why a ServiceAccount could not be read, or its token minted.
#[derive(Debug, thiserror::Error)]
pub enum AccountReadError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("the TokenRequest answer holds no token")]
    NoToken,
    /// A reader that reads no ServiceAccounts (manifests given to `scan`).
    #[error("no ServiceAccounts can be read here")]
    NoAccounts,
    #[error("no ServiceAccount tokens can be minted here")]
    NoTokens,
}

impl From<AccountReadError> for AccountError {
    fn from(e: AccountReadError) -> Self {
        AccountError(Box::new(e))
    }
}

/// One ServiceAccount, read and minted through `client`.
pub struct KubeServiceAccount {
    pub client: Client,
    pub namespace: String,
    pub name: String,
}

impl ServiceAccountSource for KubeServiceAccount {
    fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    fn get(&self) -> BoxFuture<'_, Result<CloudServiceAccount, AccountError>> {
        Box::pin(async move {
            let api = Api::<ServiceAccount>::namespaced(self.client.clone(), &self.namespace);
            let sa = read_named(&self.name, api.get(&self.name))
                .await
                .map_err(AccountReadError::from)?;
            Ok(CloudServiceAccount {
                namespace: self.namespace.clone(),
                name: self.name.clone(),
                annotations: sa.metadata.annotations.unwrap_or_default(),
            })
        })
    }

    fn token<'a>(&'a self, audiences: &'a [String]) -> BoxFuture<'a, Result<String, AccountError>> {
        Box::pin(async move {
            let request = TokenRequest {
                spec: TokenRequestSpec {
                    audiences: audiences.to_vec(),
                    expiration_seconds: Some(TOKEN_SECONDS),
                    ..Default::default()
                },
                ..Default::default()
            };
            let api = Api::<ServiceAccount>::namespaced(self.client.clone(), &self.namespace);
            let params = PostParams::default();
            let create = api.create_subresource("token", &self.name, &params, &request);
            let answer: TokenRequest = read_named(&self.name, create)
                .await
                .map_err(AccountReadError::from)?;
            let token = answer.status.map(|s| s.token).filter(|t| !t.is_empty());
            Ok(token.ok_or(AccountReadError::NoToken)?)
        })
    }
}
