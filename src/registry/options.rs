//! How a registry client is set up: its credentials, TLS, proxy, timeout and listing bounds.
//! Beside the rooms that read them (client.rs, body.rs, tags.rs), none of which defines them,
//! so none imports another back through `mod.rs`.

use super::budget::MAX_KEPT_BYTES;
use super::{cloud, Credentials, Fixes, ProxySettings, TlsMaterial};
use std::time::Duration;

/// How a [`RegistryClient`] talks to registries.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// `None`: anonymous (a registry's challenge is still answered with a token when it allows).
    pub credentials: Option<Credentials>,
    /// Cloud login (`spec.provider`): credentials fetched from the provider when the registry
    /// first asks for them; `credentials` is then unused.
    pub login: Option<cloud::CloudLogin>,
    pub tls: Option<TlsMaterial>,
    /// `None`: `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` from the environment.
    pub proxy: Option<ProxySettings>,
    /// Per request, connection included.
    pub timeout: Duration,
    pub limits: ListLimits,
    /// How errors name the settings to change (`spec.*` or flags).
    pub fixes: &'static Fixes,
    /// Whose reads these are (the object's namespace): each tenant holds at most its share of
    /// the memory budget (budget.rs). `None`: the process budget only (the command line).
    pub tenant: Option<String>,
    /// Where the time spent waiting for a host's slot or backoff is counted (the scan's own
    /// clock: waiting is not slowness, controller/image_repository/running_scans.rs).
    pub waits: Option<crate::fair::WaitClock>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            credentials: None,
            login: None,
            tls: None,
            proxy: None,
            timeout: Duration::from_secs(60),
            limits: ListLimits::default(),
            fixes: &Fixes::NEUTRAL,
            tenant: None,
            waits: None,
        }
    }
}

/// Bounds on one listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListLimits {
    /// `n` on the first request (ECR rejects more than 1000).
    pub page_size: u32,
    /// Page size after the registry rejected `page_size`.
    pub small_page_size: u32,
    pub max_pages: usize,
    pub max_tags: usize,
    /// Per page.
    pub max_body_bytes: usize,
    /// Bytes of tags kept (text and ends, `tag_buf::tag_cost`), for the whole listing.
    pub max_kept_bytes: usize,
}

impl Default for ListLimits {
    fn default() -> Self {
        ListLimits {
            page_size: 1000,
            small_page_size: 100,
            max_pages: 10_000,
            max_tags: 1_000_000,
            max_body_bytes: 64 << 20,
            max_kept_bytes: MAX_KEPT_BYTES,
        }
    }
}
