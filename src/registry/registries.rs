//! What every registry client of the process shares: the per-host scheduler, tokens and
//! challenges, the scheme each host speaks, the HTTP clients, the cloud token cache and the
//! memory budget of tag listings.

use super::access::{NetworkPath, Route};
use super::auth::AuthCache;
use super::bounded::Bounded;
use super::budget::MemoryBudget;
use super::cloud::TokenCache;
use super::describe::chain;
use super::scheduler::{Scheduler, SchedulerConfig};
use super::{ClientOptions, RegistryError};
use std::sync::{Arc, Mutex};

/// State shared by every client of the process: the per-host scheduler, tokens and challenges,
/// and which scheme each HTTPS-then-HTTP host speaks (a property of the host over a network
/// path, so a reconcile's fresh client does not try HTTPS again on a plain-HTTP registry). What
/// is learnt from a registry is kept per route and identity (access.rs).
#[derive(Debug, Default)]
pub struct Registries {
    pub(super) scheduler: Arc<Scheduler>,
    pub(super) auth: AuthCache,
    pub(super) schemes: Bounded<Route, &'static str, MAX_SCHEMES>,
    /// One HTTP client per distinct TLS, proxy and timeout setting (credentials travel per
    /// request, so they are not part of it): building one loads and parses the system roots,
    /// and a shared one keeps connections to a registry alive between reconciles.
    http: Bounded<(std::time::Duration, NetworkPath), reqwest::Client, MAX_HTTP_CLIENTS>,
    /// Cloud provider tokens and the registry credentials made from them.
    pub(super) token_cache: TokenCache,
    /// For node-local metadata endpoints: never through a proxy (login.rs).
    pub(super) direct: Mutex<Option<reqwest::Client>>,
    /// What all tag listings may hold in memory at once (budget.rs).
    pub(super) memory: MemoryBudget,
}

/// How many distinct HTTP clients are kept; past that the least recently used goes (its
/// connections close when no client of it is left).
const MAX_HTTP_CLIENTS: usize = 256;
/// Hosts (per network path) whose scheme is remembered; past that the least recently used goes.
const MAX_SCHEMES: usize = 1024;

impl Registries {
    pub fn new(config: SchedulerConfig) -> Arc<Self> {
        Self::with_token_cache(config, TokenCache::default())
    }

    /// With tag listings sharing `memory` instead of the default budget.
    pub fn with_memory_budget(config: SchedulerConfig, memory: MemoryBudget) -> Arc<Self> {
        let mut registries = Self::with_token_cache(config, TokenCache::default());
        Arc::get_mut(&mut registries)
            .expect("a new Registries has one owner")
            .memory = memory;
        registries
    }

    /// With the cloud token cache bounded as `--token-cache-max-size/-duration` say.
    pub fn with_token_cache(config: SchedulerConfig, token_cache: TokenCache) -> Arc<Self> {
        Arc::new(Registries {
            scheduler: Arc::new(Scheduler::new(config)),
            auth: AuthCache::default(),
            schemes: Bounded::default(),
            http: Bounded::default(),
            token_cache,
            direct: Mutex::default(),
            memory: MemoryBudget::default(),
        })
    }

    pub fn token_cache(&self) -> &TokenCache {
        &self.token_cache
    }

    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// The HTTP client for `options`' TLS, proxy and timeout, built on first use.
    pub(super) fn http_client(
        &self,
        options: &ClientOptions,
    ) -> Result<reqwest::Client, RegistryError> {
        let key = (options.timeout, NetworkPath::of(options));
        if let Some(client) = self.http.lock().get(&key) {
            return Ok(client.clone());
        }
        let client = build_http_client(options)?;
        self.http.lock().put(key, client.clone());
        Ok(client)
    }
}

fn build_http_client(options: &ClientOptions) -> Result<reqwest::Client, RegistryError> {
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("image-reflector/", env!("CARGO_PKG_VERSION")))
        .timeout(options.timeout)
        .connect_timeout(options.timeout.min(std::time::Duration::from_secs(30)))
        // Registries redirect blob downloads; tags and manifests may be redirected too.
        .redirect(reqwest::redirect::Policy::limited(5));
    if let Some(tls) = &options.tls {
        builder = tls.apply(builder)?;
    }
    if let Some(proxy) = &options.proxy {
        builder = proxy.apply(builder)?;
    }
    builder
        .build()
        .map_err(|e| super::ConfigError::Client(chain(&e)).into())
}
