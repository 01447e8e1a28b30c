//! The HTTP side of the registry client: one request, through the host's scheduler, with
//! authentication, the HTTPS-then-HTTP rule for local hosts, and error mapping.
//!
//! Built on reqwest, not oci-client: oci-client drops the `Link` header tag listing needs,
//! has no hook for a scheduler around each request or for `Retry-After`, and sends its own
//! Accept list on HEAD with no GET fallback. The requests here are few and simple; owning them
//! costs less than working around those gaps. (oci-client pushes the images in the tests.)

use super::body::taken_back_error;
use super::describe::{chain, method_name};
use super::keyring::Credentials;
use super::registries::Registries;
use super::retry_after::parse_retry_after;
use super::scheduler::{Asking, Slot};
use super::scope::{identity, scheduler_key, NetworkPath};
use super::{ClientOptions, RegistryError};
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{Method, Response, Url};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, Once};
use std::time::{Instant, SystemTime};
use tracing::Instrument;

/// A client for one set of settings (credentials, TLS, proxy, timeout).
#[derive(Debug)]
pub struct RegistryClient {
    pub(super) http: reqwest::Client,
    pub(super) options: ClientOptions,
    pub(super) shared: Arc<Registries>,
    /// The proxy and TLS settings: what the registry state this client uses is kept for.
    pub(super) path: NetworkPath,
    /// Credentials from the cloud login, fetched once per client when first needed.
    pub(super) login_credentials: tokio::sync::OnceCell<Credentials>,
    /// Origins other than the registry's this client was redirected to (redirect.rs).
    pub(super) redirect_origins: Mutex<HashSet<String>>,
    /// This client's own HTTP client for those origins, keeping no idle connection.
    pub(super) redirect_http: Mutex<Option<reqwest::Client>>,
}

/// Where a request goes: a path under the registry root, or a URL the registry gave us.
pub(super) enum Target<'a> {
    Path(&'a str),
    Url(Url),
}

/// Where a request's redirects may lead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Redirects {
    /// Anywhere, within redirect.rs's bounds: the answer is checked by its digest.
    Anywhere,
    /// Only the registry's own origin: the answer (a tag list page) is used as the registry's.
    SameOrigin,
}

/// Installs ring as rustls' crypto provider, once per process (reqwest is built without one,
/// like kube, so there is exactly one provider in the tree).
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

impl RegistryClient {
    /// Whose reads these are (the object's namespace), for the shares that count by tenant.
    pub fn tenant(&self) -> Option<&str> {
        self.options.tenant.as_deref()
    }

    pub fn new(options: ClientOptions, shared: Arc<Registries>) -> Result<Self, RegistryError> {
        install_crypto_provider();
        let http = shared.http_client(&options)?;
        Ok(RegistryClient {
            http,
            path: NetworkPath::of(&options),
            options,
            shared,
            login_credentials: tokio::sync::OnceCell::new(),
            redirect_origins: Mutex::default(),
            redirect_http: Mutex::default(),
        })
    }

    /// Who this client asks as, about `repository`: its identity (the credentials it sends,
    /// static or from the cloud login once fetched), the repository and its tenant, which
    /// the host's backoff is kept for (scheduler/throttle.rs).
    pub(super) fn asking<'a>(&'a self, repository: &'a str) -> Asking<'a> {
        let creds = match &self.options.login {
            Some(_) => self.login_credentials.get(),
            None => self.options.credentials.as_ref(),
        };
        Asking {
            identity: identity(creds),
            repository: Some(repository),
            tenant: self.options.tenant.as_deref(),
        }
    }

    /// Sends one request about `repository` in a slot of the host and records the answer;
    /// returns the response and, for a throttling answer, when this client may ask about the
    /// repository again (backoff is its identity's on the repository, scheduler/throttle.rs).
    /// `redirects` says where its redirects may lead (redirect.rs).
    pub(super) async fn send_once(
        &self,
        request: reqwest::RequestBuilder,
        method: &Method,
        url: &Url,
        (host, repository): (&str, &str),
        redirects: Redirects,
    ) -> Result<(Response, Option<Instant>), RegistryError> {
        let scheduler = &self.shared.scheduler;
        // Throttling learnt through this client's own proxy stays on that path (scope.rs).
        let key = scheduler_key(host, &self.options);
        let asking = self.asking(repository);
        let waiting = self
            .options
            .waits
            .as_ref()
            .map(crate::fair::WaitClock::start);
        let slot = scheduler.acquire_for(&key, &asking).await?;
        drop(waiting);
        let span = tracing::info_span!(
            "registry request",
            http.method = %method,
            host,
            path = url.path(),
            http.status_code = tracing::field::Empty,
        );
        let request = request
            .build()
            .map_err(|err| self.transport_error(method, url, host, &err))?;
        let headers = request.headers().clone();
        let executing = self.http.execute(request).instrument(span.clone());
        let result = tokio::select! {
            result = executing => result,
            () = slot.stopped() => return Err(taken_back_error(method, url, host)),
        };
        if let Ok(response) = &result {
            span.record("http.status_code", response.status().as_u16());
        }
        let mut response = result.map_err(|err| {
            scheduler.record_for(&key, &asking, None, None);
            self.transport_error(method, url, host, &err)
        })?;
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let until = scheduler.record_for(&key, &asking, Some(status), retry_after);
        hold_slot(&mut response, slot);
        let response = self
            .follow_redirects(method, url, &headers, response, (&asking, redirects))
            .await?;
        Ok((response, until))
    }

    pub(super) fn transport_error(
        &self,
        method: &Method,
        url: &Url,
        host: &str,
        err: &reqwest::Error,
    ) -> RegistryError {
        if err.is_timeout() {
            RegistryError::Timeout {
                method: method_name(method),
                url: url.to_string(),
                host: host.into(),
                timeout: self.options.timeout,
                fixes: self.options.fixes,
            }
        } else if let Some(proxy) = self.options.proxy.as_ref().filter(|_| err.is_connect()) {
            // Through a proxy every connection goes to it: a failed connect (refused, or a
            // tunnel it would not open) is the proxy's.
            RegistryError::Proxy {
                method: method_name(method),
                url: url.to_string(),
                host: host.into(),
                proxy: proxy.to_string(),
                detail: super::proxy::without_credentials(&chain(err)),
                fixes: self.options.fixes,
            }
        } else if speaks_tls(err) {
            RegistryError::Tls {
                method: method_name(method),
                url: url.to_string(),
                host: host.into(),
                detail: chain(err),
                fixes: self.options.fixes,
            }
        } else {
            RegistryError::Transport {
                method: method_name(method),
                url: url.to_string(),
                host: host.into(),
                detail: chain(err),
                fixes: self.options.fixes,
            }
        }
    }
}

/// Keeps the host's slot with `response` until it is dropped (its body read, or not wanted):
/// a caller that sends another request to the host must drop or [`release_slot`] the answer
/// it holds first, or it may wait on its own slot.
pub(super) fn hold_slot(response: &mut Response, slot: Slot) {
    response.extensions_mut().insert(Arc::new(slot));
}

/// Frees the slot `response` holds, for an answer kept while the next request is sent.
pub(super) fn release_slot(response: &mut Response) {
    response.extensions_mut().remove::<Arc<Slot>>();
}

/// Whether the failure came from a TLS peer (a certificate or an alert), as opposed to a
/// server that does not speak TLS at all (its answer is not a TLS record). Only the latter may
/// fall back to plain HTTP.
fn speaks_tls(err: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        // io::Errors nest (hyper's Other around tokio-rustls' InvalidData around rustls'), and
        // their `source()` skips the wrapped error itself: unwrap them by hand.
        let mut inner: &(dyn std::error::Error + 'static) = e;
        while let Some(wrapped) = inner
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            inner = wrapped;
        }
        if let Some(tls) = inner.downcast_ref::<rustls::Error>() {
            return !matches!(tls, rustls::Error::InvalidMessage(_));
        }
        source = e.source();
    }
    false
}

pub(super) fn rate_limited(host: String, status: u16, until: Instant) -> RegistryError {
    RegistryError::RateLimited {
        host,
        status,
        retry_at: SystemTime::now() + until.saturating_duration_since(Instant::now()),
    }
}

pub(super) fn retry_after(headers: &HeaderMap) -> Option<std::time::Duration> {
    headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()))
}
