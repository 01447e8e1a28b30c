//! What every registry client of the process shares: the per-host scheduler, tokens and
//! challenges, the scheme each host speaks, the HTTP clients, the cloud token cache and the
//! memory budget of tag listings.

use super::auth::AuthCache;
use super::bounded::Bounded;
use super::budget::MemoryBudget;
use super::cloud::TokenCache;
use super::describe::chain;
use super::scheduler::{Scheduler, SchedulerConfig};
use super::scope::{AskedFor, NetworkPath, Route};
use super::{ClientOptions, RegistryError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// State shared by every client of the process: the per-host scheduler, tokens and challenges,
/// and which scheme each HTTPS-then-HTTP host speaks (a property of the host over a network
/// path, so a reconcile's fresh client does not try HTTPS again on a plain-HTTP registry). What
/// is learnt from a registry is kept per route and identity (scope.rs).
#[derive(Debug, Default)]
pub struct Registries {
    pub(super) scheduler: Arc<Scheduler>,
    pub(super) auth: AuthCache,
    pub(super) schemes: Bounded<Route, &'static str, MAX_SCHEMES>,
    /// Repositories (of a host, for one identity) that answered the referrers API with 404,
    /// and when: their signatures are read from the referrers tag schema without asking the API
    /// again for [`IDLE_AFTER`].
    pub(super) no_referrers_api: Bounded<AskedFor, Instant, MAX_REPOSITORIES>,
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

/// State of a host, route, identity or configuration unused this long is dropped (hosts no
/// object uses any more); the next request learns it again, at the cost Flux pays on every
/// scan (one 401 round trip, a token).
pub const IDLE_AFTER: Duration = Duration::from_secs(60 * 60);
/// How often idle state is looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(5 * 60);

/// How many entries each table keeps now (metrics, and the bounds' tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kept {
    pub hosts: usize,
    pub tokens: usize,
    pub challenges: usize,
    pub schemes: usize,
    pub http_clients: usize,
}

/// How many distinct HTTP clients are kept; past that the least recently used goes (its
/// connections close when no client of it is left).
const MAX_HTTP_CLIENTS: usize = 256;
/// Hosts (per network path) whose scheme is remembered; past that the least recently used goes.
const MAX_SCHEMES: usize = 1024;
/// Repositories (per host, path and identity) whose lack of a referrers API is remembered.
const MAX_REPOSITORIES: usize = 16384;

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
            no_referrers_api: Bounded::default(),
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

    /// What registry answers may hold in memory, process-wide and per tenant (budget.rs).
    pub fn memory_budget(&self) -> &MemoryBudget {
        &self.memory
    }

    /// How many entries each table keeps.
    pub fn kept(&self) -> Kept {
        let (tokens, challenges) = self.auth.sizes();
        Kept {
            hosts: self.scheduler.host_count(),
            tokens,
            challenges,
            schemes: self.schemes.len(),
            http_clients: self.http.len(),
        }
    }

    /// Drops every entry not used since `now - idle` (a host only when nothing is in flight
    /// and no backoff holds it); returns how many went.
    pub fn forget_idle(&self, idle: Duration, now: Instant) -> usize {
        self.scheduler.forget_idle(idle, now)
            + self.auth.forget_idle(idle, now)
            + self.schemes.forget_idle(idle, now)
            + self.no_referrers_api.forget_idle(idle, now)
            + self.http.forget_idle(idle, now)
    }

    /// Forgets idle state ([`IDLE_AFTER`]) every few minutes, for as long as these registries
    /// are in use (the task ends once the last other reference is dropped).
    pub fn forget_idle_in_background(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let registries = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(SWEEP_EVERY);
            every.tick().await;
            loop {
                every.tick().await;
                let Some(registries) = registries.upgrade() else {
                    return;
                };
                let gone = registries.forget_idle(IDLE_AFTER, Instant::now());
                if gone > 0 {
                    tracing::debug!(
                        entries = gone,
                        "registry state of hosts unused for an hour dropped"
                    );
                }
            }
        })
    }

    /// The HTTP client for `options`' TLS, proxy and timeout, built on first use.
    pub(super) fn http_client(
        &self,
        options: &ClientOptions,
    ) -> Result<reqwest::Client, RegistryError> {
        let key = (options.timeout, NetworkPath::of(options));
        if let Some(client) = self.http.get(&key) {
            return Ok(client);
        }
        let client = build_http_client(options, true)?;
        self.http.put(key, client.clone());
        Ok(client)
    }
}

/// A client for `options`' TLS, proxy and timeout; `pooled`: keeping idle connections (the
/// registry's own), else closing each with its answer (redirect targets, redirect.rs).
pub(super) fn build_http_client(
    options: &ClientOptions,
    pooled: bool,
) -> Result<reqwest::Client, RegistryError> {
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("image-reflector/", env!("CARGO_PKG_VERSION")))
        .timeout(options.timeout)
        .connect_timeout(options.timeout.min(std::time::Duration::from_secs(30)))
        // Registries redirect blob downloads; tags and manifests may be redirected too:
        // followed by redirect.rs, which bounds them.
        .redirect(reqwest::redirect::Policy::none());
    if !pooled {
        builder = builder.pool_max_idle_per_host(0);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The documented bounds (docs/security.md), as literal numbers: changing a constant
    /// without the docs fails here. Memory: 96 MiB for all registry answers at once.
    #[test]
    fn the_tables_and_the_memory_budget_hold_their_documented_bounds() {
        super::super::install_crypto_provider();
        let registries = Registries::new(SchedulerConfig::default());
        let path = NetworkPath::of(&ClientOptions::default());
        for i in 0..1100 {
            registries
                .schemes
                .put(Route::host(&format!("r{i}.example"), path), "https");
        }
        for ms in 0..300 {
            let options = ClientOptions {
                timeout: Duration::from_millis(1000 + ms),
                ..Default::default()
            };
            registries.http_client(&options).unwrap();
        }
        let kept = registries.kept();
        assert_eq!((kept.schemes, kept.http_clients), (1024, 256));

        let mut held = super::super::Held::default();
        registries.memory.reserve(&mut held, 96 << 20).unwrap();
        let err = registries.memory.reserve(&mut held, 1).unwrap_err();
        assert!(err.contains("(96 MiB"), "{err}");
    }

    /// State not used for an hour goes, every table's; what was used since stays.
    #[test]
    fn state_unused_for_an_hour_goes() {
        assert_eq!(IDLE_AFTER, Duration::from_secs(3600));
        super::super::install_crypto_provider();
        let registries = Registries::new(SchedulerConfig::default());
        let path = NetworkPath::of(&ClientOptions::default());
        registries
            .schemes
            .put(Route::host("old.example", path), "http");
        registries.http_client(&ClientOptions::default()).unwrap();
        let later = Instant::now() + IDLE_AFTER;
        assert_eq!(registries.forget_idle(IDLE_AFTER, Instant::now()), 0);
        assert_eq!(registries.forget_idle(IDLE_AFTER, later), 2);
        let kept = registries.kept();
        assert_eq!((kept.schemes, kept.http_clients), (0, 0));
    }
}
