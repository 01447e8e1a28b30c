//! The HTTP side of the registry client: one request, through the host's scheduler, with
//! authentication, the HTTPS-then-HTTP rule for local hosts, and error mapping.
//!
//! Built on reqwest, not oci-client: oci-client drops the `Link` header tag listing needs,
//! has no hook for a scheduler around each request or for `Retry-After`, and sends its own
//! Accept list on HEAD with no GET fallback. The requests here are few and simple; owning them
//! costs less than working around those gaps. (oci-client pushes the images in the tests.)

use super::auth::{parse_challenge, AuthCache, Challenge, TokenKey, TokenResponse};
use super::budget::MemoryBudget;
use super::cloud::TokenCache;
use super::keyring::Credentials;
use super::scheduler::{parse_retry_after, Scheduler, SchedulerConfig};
use super::{ClientOptions, ImageReference, RegistryError, Scheme};
use base64::Engine;
use reqwest::header::{HeaderMap, ACCEPT, AUTHORIZATION, RETRY_AFTER, WWW_AUTHENTICATE};
use reqwest::{Method, Response, StatusCode, Url};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Once};
use std::time::{Instant, SystemTime};
use tracing::Instrument;

/// State shared by every client of the process: the per-host scheduler, tokens and challenges,
/// and which scheme each HTTPS-then-HTTP host speaks (a property of the host, so a reconcile's
/// fresh client does not try HTTPS again on a plain-HTTP registry).
#[derive(Debug, Default)]
pub struct Registries {
    scheduler: Scheduler,
    auth: AuthCache,
    schemes: Mutex<HashMap<String, &'static str>>,
    /// One HTTP client per distinct TLS, proxy and timeout setting (credentials travel per
    /// request, so they are not part of it): building one loads and parses the system roots,
    /// and a shared one keeps connections to a registry alive between reconciles.
    http: Mutex<HashMap<[u8; 32], reqwest::Client>>,
    /// Cloud provider tokens and the registry credentials made from them.
    pub(super) token_cache: TokenCache,
    /// For node-local metadata endpoints: never through a proxy (cloud/login.rs).
    pub(super) direct: Mutex<Option<reqwest::Client>>,
    /// What all tag listings may hold in memory at once (budget.rs).
    pub(super) memory: MemoryBudget,
}

/// How many distinct HTTP clients are kept; past that the cache starts over.
const MAX_HTTP_CLIENTS: usize = 256;

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
            scheduler: Scheduler::new(config),
            auth: AuthCache::default(),
            schemes: Mutex::default(),
            http: Mutex::default(),
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
    fn http_client(&self, options: &ClientOptions) -> Result<reqwest::Client, RegistryError> {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        hasher.update(options.timeout.as_nanos().to_le_bytes());
        if let Some(tls) = &options.tls {
            hasher.update(b"tls");
            tls.hash_into(&mut hasher);
        }
        if let Some(proxy) = &options.proxy {
            hasher.update(b"proxy");
            hasher.update(proxy.url_text().as_bytes());
        }
        let key: [u8; 32] = hasher.finalize().into();
        if let Some(client) = self.http.lock().expect("http clients lock").get(&key) {
            return Ok(client.clone());
        }
        let client = build_http_client(options)?;
        let mut clients = self.http.lock().expect("http clients lock");
        if clients.len() >= MAX_HTTP_CLIENTS {
            clients.clear();
        }
        clients.insert(key, client.clone());
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

/// A client for one set of settings (credentials, TLS, proxy, timeout).
#[derive(Debug)]
pub struct RegistryClient {
    pub(super) http: reqwest::Client,
    pub(super) options: ClientOptions,
    pub(super) shared: Arc<Registries>,
    /// Credentials from the cloud login, fetched once per client when first needed.
    pub(super) login_credentials: tokio::sync::OnceCell<Credentials>,
}

/// Where a request goes: a path under the registry root, or a URL the registry gave us.
pub(super) enum Target<'a> {
    Path(&'a str),
    Url(Url),
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
    pub fn new(options: ClientOptions, shared: Arc<Registries>) -> Result<Self, RegistryError> {
        install_crypto_provider();
        let http = shared.http_client(&options)?;
        Ok(RegistryClient {
            http,
            options,
            shared,
            login_credentials: tokio::sync::OnceCell::new(),
        })
    }

    /// Sends one request and returns the response with the URL it went to. Statuses other
    /// than throttling come back as they are; the caller decides what is an error.
    pub(super) async fn send(
        &self,
        method: Method,
        image: &ImageReference,
        target: Target<'_>,
        accept: Option<&str>,
    ) -> Result<(Url, Response), RegistryError> {
        self.check_login_host(image.registry())?;
        let path = match target {
            Target::Url(url) => {
                let response = self.execute(&method, image, url.clone(), accept).await?;
                return Ok((url, response));
            }
            Target::Path(path) => path,
        };
        let host = image.registry();
        let known = self
            .shared
            .schemes
            .lock()
            .expect("schemes lock")
            .get(host)
            .copied();
        let schemes: &[&'static str] = match image.scheme() {
            Scheme::Https => &["https"],
            Scheme::Http => &["http"],
            Scheme::HttpsThenHttp => match known {
                Some("http") => &["http"],
                Some(_) => &["https"],
                None => &["https", "http"],
            },
        };
        let mut first_error = None;
        for scheme in schemes {
            let url = Url::parse(&format!("{scheme}://{host}{path}")).map_err(|e| {
                RegistryError::InvalidResponse {
                    method: method_name(&method),
                    url: format!("{scheme}://{host}{path}"),
                    host: host.into(),
                    detail: e.to_string(),
                }
            })?;
            match self.execute(&method, image, url.clone(), accept).await {
                Ok(response) => {
                    if image.scheme() == Scheme::HttpsThenHttp {
                        self.shared
                            .schemes
                            .lock()
                            .expect("schemes lock")
                            .insert(host.to_string(), scheme);
                    }
                    return Ok((url, response));
                }
                // The remembered scheme no longer connects (the registry changed): forget
                // it, so the next request tries both again.
                Err(err @ RegistryError::Transport { .. }) if known.is_some() => {
                    self.shared
                        .schemes
                        .lock()
                        .expect("schemes lock")
                        .remove(host);
                    return Err(err);
                }
                // Only a failed connection (e.g. a TLS handshake with a plain-HTTP server)
                // falls back; an answer over HTTPS is final.
                Err(err @ RegistryError::Transport { .. }) if first_error.is_none() => {
                    first_error = Some(err);
                }
                // Both schemes unreachable: the HTTPS failure says more. A plain-HTTP
                // answer (throttling, a timeout) is the registry's own and wins.
                Err(err @ RegistryError::Transport { .. }) => {
                    return Err(first_error.unwrap_or(err))
                }
                Err(err) => return Err(err),
            }
        }
        Err(first_error.expect("at least one scheme was tried"))
    }

    /// One request with retries on throttling and one re-send after an auth challenge.
    async fn execute(
        &self,
        method: &Method,
        image: &ImageReference,
        url: Url,
        accept: Option<&str>,
    ) -> Result<Response, RegistryError> {
        let host = url_host(&url);
        let scheduler = &self.shared.scheduler;
        let attempts = scheduler.config().attempts.max(1);
        let mut attempt = 0;
        let mut challenged = false;
        loop {
            let authorization = self.authorization(&host, image).await?;
            let mut request = self.http.request(method.clone(), url.clone());
            if let Some(accept) = accept {
                request = request.header(ACCEPT, accept);
            }
            if let Some(value) = &authorization {
                request = request.header(AUTHORIZATION, value);
            }
            let (response, throttled_until) = self.send_once(request, method, &url, &host).await?;
            let status = response.status().as_u16();
            if status == 401 && !challenged {
                challenged = true;
                let challenge = response
                    .headers()
                    .get(WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .and_then(parse_challenge);
                if let Some(challenge) = challenge {
                    let changed = self.shared.auth.challenge(&host).as_ref() != Some(&challenge);
                    // A token refused before its expiry: fetch a new one, once.
                    let refused_token = !changed
                        && authorization
                            .as_deref()
                            .is_some_and(|a| a.starts_with("Bearer "));
                    if let (true, Challenge::Bearer { realm, service }) =
                        (refused_token, &challenge)
                    {
                        let creds = self.credentials(&host).await?;
                        self.shared.auth.forget_token(&TokenKey::new(
                            realm,
                            service.as_deref(),
                            &pull_scope(image),
                            creds,
                        ));
                    }
                    self.shared.auth.remember_challenge(&host, challenge);
                    // Re-send when we now know how to authenticate and did not already.
                    if (changed || authorization.is_none() || refused_token)
                        && self.authorization(&host, image).await?.is_some()
                    {
                        continue;
                    }
                }
                return Ok(response);
            }
            if let Some(until) = throttled_until {
                attempt += 1;
                let wait = until.saturating_duration_since(Instant::now());
                if attempt < attempts && wait <= scheduler.config().max_wait {
                    continue; // `acquire` waits until the host's backoff ends
                }
                return Err(rate_limited(host, status, until));
            }
            return Ok(response);
        }
    }

    /// Sends one request in a slot of the host and records the answer; returns the response
    /// and, for a throttling answer, when the host may be asked again.
    async fn send_once(
        &self,
        request: reqwest::RequestBuilder,
        method: &Method,
        url: &Url,
        host: &str,
    ) -> Result<(Response, Option<Instant>), RegistryError> {
        let scheduler = &self.shared.scheduler;
        let slot = scheduler.acquire(host).await?;
        let span = tracing::info_span!(
            "registry request",
            http.method = %method,
            host,
            path = url.path(),
            http.status_code = tracing::field::Empty,
        );
        let result = request.send().instrument(span.clone()).await;
        if let Ok(response) = &result {
            span.record("http.status_code", response.status().as_u16());
        }
        drop(slot);
        let response = result.map_err(|err| {
            scheduler.record(host, None, None);
            self.transport_error(method, url, host, &err)
        })?;
        let status = response.status().as_u16();
        let until = scheduler.record(host, Some(status), retry_after(response.headers()));
        Ok((response, until))
    }

    /// The `Authorization` value for the host's known challenge, fetching a token if needed.
    async fn authorization(
        &self,
        host: &str,
        image: &ImageReference,
    ) -> Result<Option<String>, RegistryError> {
        match self.shared.auth.challenge(host) {
            None => Ok(None),
            Some(Challenge::Basic) => Ok(self.credentials(host).await?.map(basic)),
            Some(Challenge::Bearer { realm, service }) => {
                let creds = self.credentials(host).await?;
                let key = TokenKey::new(&realm, service.as_deref(), &pull_scope(image), creds);
                let token = match self.shared.auth.token(&key) {
                    Some(token) => token,
                    None => self.fetch_token(key, creds).await?,
                };
                Ok(Some(format!("Bearer {token}")))
            }
        }
    }

    /// GETs a token from the realm (with the credentials, when there are any).
    async fn fetch_token(
        &self,
        key: TokenKey,
        creds: Option<&Credentials>,
    ) -> Result<String, RegistryError> {
        let mut url = Url::parse(&key.realm).map_err(|e| RegistryError::InvalidResponse {
            method: "GET",
            url: key.realm.clone(),
            host: key.realm.clone(),
            detail: format!("the token realm is not a URL: {e}"),
        })?;
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = &key.service {
                query.append_pair("service", service);
            }
            query.append_pair("scope", &key.scope);
        }
        let host = url_host(&url);
        let mut request = self.http.get(url.clone());
        if let Some(creds) = creds {
            request = request.header(AUTHORIZATION, basic(creds));
        }
        let (response, throttled_until) =
            self.send_once(request, &Method::GET, &url, &host).await?;
        if let Some(until) = throttled_until {
            return Err(rate_limited(host, response.status().as_u16(), until));
        }
        if response.status() != StatusCode::OK {
            return Err(status_error(Method::GET, &url, &host, response, &self.options).await);
        }
        let body = read_limited(&Method::GET, &url, &host, response, 1 << 20).await?;
        let invalid = |detail: String| RegistryError::InvalidResponse {
            method: "GET",
            url: url.to_string(),
            host: host.clone(),
            detail,
        };
        let (token, life) = serde_json::from_slice::<TokenResponse>(&body)
            .map_err(|e| invalid(format!("token response: {e}")))?
            .into_token()
            .ok_or_else(|| invalid("the token response holds no token".into()))?;
        self.shared.auth.store_token(key, token.clone(), life);
        Ok(token)
    }

    fn transport_error(
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

fn rate_limited(host: String, status: u16, until: Instant) -> RegistryError {
    RegistryError::RateLimited {
        host,
        status,
        retry_at: SystemTime::now() + until.saturating_duration_since(Instant::now()),
    }
}

fn pull_scope(image: &ImageReference) -> String {
    format!("repository:{}:pull", image.repository())
}

fn basic(creds: &Credentials) -> String {
    let raw = format!("{}:{}", creds.username, creds.password);
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

fn retry_after(headers: &HeaderMap) -> Option<std::time::Duration> {
    headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()))
}

/// `host[:port]` of a URL, as the scheduler keys hosts.
pub(super) fn url_host(url: &Url) -> String {
    match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_string(),
        (None, _) => String::new(),
    }
}

pub(super) fn method_name(method: &Method) -> &'static str {
    match *method {
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        _ => "GET",
    }
}

/// The error and its causes, `: `-joined (reqwest's own text alone is "error sending request").
pub(super) fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Reads a body, refusing more than `limit` bytes (checked as it streams, not after).
pub(super) async fn read_limited(
    method: &Method,
    url: &Url,
    host: &str,
    response: Response,
    limit: usize,
) -> Result<Vec<u8>, RegistryError> {
    read_limited_with(method, url, host, response, limit, |_| Ok(())).await
}

/// [`read_limited`], asking `grow` for each chunk's bytes before keeping it (a memory budget);
/// its refusal ends the read with that reason.
pub(super) async fn read_limited_with(
    method: &Method,
    url: &Url,
    host: &str,
    mut response: Response,
    limit: usize,
    mut grow: impl FnMut(usize) -> Result<(), String>,
) -> Result<Vec<u8>, RegistryError> {
    let too_big = || RegistryError::InvalidResponse {
        method: method_name(method),
        url: url.to_string(),
        host: host.into(),
        detail: format!("the body exceeds the {limit}-byte limit"),
    };
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(too_big());
    }
    // A known length is allocated once (growing a large buffer copies it: twice the memory
    // for a moment); otherwise the buffer doubles as chunks arrive.
    let mut body = Vec::new();
    if let Some(length) = response.content_length() {
        let length = length as usize;
        grow(length).map_err(|detail| RegistryError::InvalidResponse {
            method: method_name(method),
            url: url.to_string(),
            host: host.into(),
            detail,
        })?;
        body.reserve_exact(length);
    }
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let needed = body.len() + chunk.len();
                if needed > limit {
                    return Err(too_big());
                }
                // `grow` is charged what is allocated (capacity), not only what is used.
                if needed > body.capacity() {
                    let capacity = needed.max(body.capacity() * 2).min(limit);
                    grow(capacity - body.capacity()).map_err(|detail| {
                        RegistryError::InvalidResponse {
                            method: method_name(method),
                            url: url.to_string(),
                            host: host.into(),
                            detail,
                        }
                    })?;
                    body.reserve_exact(capacity - body.len());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(err) => {
                return Err(RegistryError::InvalidResponse {
                    method: method_name(method),
                    url: url.to_string(),
                    host: host.into(),
                    detail: format!("reading the body: {}", chain(&err)),
                })
            }
        }
    }
}

#[derive(Deserialize)]
struct OciErrors {
    #[serde(default)]
    errors: Vec<OciError>,
}

#[derive(Deserialize)]
struct OciError {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

/// A [`RegistryError::Status`] with the OCI error codes from the body (GET only: HEAD has none).
/// `options` say whether the client had credentials for the host (so a 401 means they were
/// rejected rather than missing) and how to name the settings to change.
pub(super) async fn status_error(
    method: Method,
    url: &Url,
    host: &str,
    response: Response,
    options: &ClientOptions,
) -> RegistryError {
    let status = response.status();
    let codes = if method == Method::HEAD {
        Vec::new()
    } else {
        read_limited(&method, url, host, response, 64 << 10)
            .await
            .ok()
            .and_then(|body| serde_json::from_slice::<OciErrors>(&body).ok())
            .map(|e| {
                e.errors
                    .into_iter()
                    .map(|e| match e.message.is_empty() {
                        true => e.code,
                        false => format!("{}: {}", e.code, e.message),
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    RegistryError::Status {
        method: method_name(&method),
        url: url.to_string(),
        host: host.into(),
        status_code: status.as_u16(),
        status: status.to_string(),
        codes,
        credentials_sent: options.credentials.is_some() || options.login.is_some(),
        fixes: options.fixes,
    }
}
