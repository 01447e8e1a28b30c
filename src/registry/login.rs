//! The registry client's side of cloud login: the provider's host rule before any request, and
//! the credentials fetched (once per client, through the shared token cache) when the registry
//! first asks for them, so a provider failure fails that request, as in Flux.

use super::client::RegistryClient;
use super::cloud::http::CloudHttp;
use super::cloud::CloudError;
use super::describe::chain;
use super::registries::Registries;
use super::{ConfigError, Credentials, RegistryError};
use futures::future::BoxFuture;
use std::time::Duration;

impl RegistryClient {
    /// With a cloud login, `host` must be one the provider serves: no request, not even an
    /// anonymous one, goes elsewhere (the error is the scan failure Flux reports).
    pub(in crate::registry) fn check_login_host(&self, host: &str) -> Result<(), RegistryError> {
        let Some(login) = &self.options.login else {
            return Ok(());
        };
        super::cloud::registry_target(login.provider, host)
            .map(|_| ())
            .map_err(|e| RegistryError::CloudLogin {
                provider: login.provider.name(),
                host: host.to_string(),
                detail: e.to_string(),
            })
    }

    /// The credentials to send: the static ones, or the cloud login's, fetched on first use.
    pub(in crate::registry) async fn credentials(
        &self,
        host: &str,
    ) -> Result<Option<&Credentials>, RegistryError> {
        let Some(login) = &self.options.login else {
            return Ok(self.options.credentials.as_ref());
        };
        let http = CloudHttp {
            proxied: self.http.clone(),
            direct: self.shared.direct_client()?,
            scheduler: self.shared.scheduler.clone(),
            proxy: self
                .options
                .proxy
                .as_ref()
                .map(|p| p.url_text().to_string())
                .unwrap_or_default(),
        };
        let creds = self
            .login_credentials
            .get_or_try_init(|| async {
                // A boxed `dyn` future: the provider flows (the AWS SDK's above all) are deep
                // types, kept out of every caller's future type.
                let fetch: BoxFuture<'_, Result<Credentials, CloudError>> =
                    Box::pin(login.credentials(host, &http, &self.shared.token_cache));
                fetch.await.map_err(|e| RegistryError::CloudLogin {
                    provider: login.provider.name(),
                    host: host.to_string(),
                    detail: e.to_string(),
                })
            })
            .await?;
        Ok(Some(creds))
    }
}

impl Registries {
    /// The client for node-local metadata endpoints: no proxy, short timeouts.
    fn direct_client(&self) -> Result<reqwest::Client, RegistryError> {
        let mut direct = self.direct.lock().expect("direct client lock");
        if let Some(client) = &*direct {
            return Ok(client.clone());
        }
        let client = reqwest::Client::builder()
            .user_agent(concat!("image-reflector/", env!("CARGO_PKG_VERSION")))
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| ConfigError::Client(chain(&e)))?;
        *direct = Some(client.clone());
        Ok(client)
    }
}
