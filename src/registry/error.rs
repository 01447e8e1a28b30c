//! What can go wrong talking to a registry. Every error names the host (and the repository
//! when there is one) and says what to do; callers decide the outcome by the variant:
//! [`RegistryError::RateLimited`] waits until `retry_at`, [`RegistryError::Config`] needs a spec
//! or Secret change, the rest are retried with backoff.

use std::time::{Duration, SystemTime};
use thiserror::Error;

/// An error from a registry call.
#[derive(Debug, Error)]
pub enum RegistryError {
    /// The registry answered with an unexpected status. The text holds the request, the status
    /// (`404 Not Found`) and the registry's OCI error codes (`NAME_UNKNOWN: ...`).
    #[error("{method} {url}: unexpected status code {status}{}; {}", codes_text(.codes), hint(*.status_code, .host, *.credentials_sent, .fixes))]
    Status {
        method: &'static str,
        url: String,
        host: String,
        status_code: u16,
        /// `404 Not Found`.
        status: String,
        /// OCI error codes and messages from the body, e.g. `NAME_UNKNOWN: repository name not known to registry`.
        codes: Vec<String>,
        /// Whether credentials were sent (a 401 then means they were rejected).
        credentials_sent: bool,
        fixes: &'static Fixes,
    },
    /// The host asked us to slow down (429, or 502/503/504 on every attempt). No request to the
    /// host is made before `retry_at`.
    #[error("registry {host} is rate limiting or unavailable (HTTP {status}): no request before {} (in {}s); nothing to change, scanning resumes then", httpdate::fmt_http_date(*.retry_at), secs_until(*.retry_at))]
    RateLimited {
        host: String,
        status: u16,
        retry_at: SystemTime,
    },
    /// The connection failed: DNS, refused, TLS, proxy.
    #[error("{method} {url}: cannot reach registry {host}: {detail}; {}", .fixes.transport)]
    Transport {
        method: &'static str,
        url: String,
        host: String,
        detail: String,
        fixes: &'static Fixes,
    },
    /// The proxy in between cannot be reached, or refused the tunnel: the registry was never
    /// asked, so the proxy is named, not the registry.
    #[error("{method} {url}: cannot reach registry {host} through the proxy {proxy}: {detail}; {}", .fixes.proxy)]
    Proxy {
        method: &'static str,
        url: String,
        host: String,
        /// Shown without credentials.
        proxy: String,
        detail: String,
        fixes: &'static Fixes,
    },
    /// The registry speaks TLS but the handshake failed: an untrusted certificate, or a client
    /// certificate it wants and did not get. Never falls back to plain HTTP.
    #[error("{method} {url}: TLS with registry {host} failed: {detail}; {}", .fixes.tls)]
    Tls {
        method: &'static str,
        url: String,
        host: String,
        detail: String,
        fixes: &'static Fixes,
    },
    /// No answer within the per-request timeout.
    #[error("{method} {url}: registry {host} did not answer within {}s; raise {} or check the registry", .timeout.as_secs_f64(), .fixes.timeout)]
    Timeout {
        method: &'static str,
        url: String,
        host: String,
        timeout: Duration,
        fixes: &'static Fixes,
    },
    /// The cloud provider login failed (`spec.provider`): Flux's message chain, which names the
    /// step (access token, ServiceAccount, registry credentials) and the provider's own error.
    #[error("{detail}")]
    CloudLogin {
        provider: &'static str,
        host: String,
        detail: String,
    },
    /// The registry's answer is not what the distribution API specifies.
    #[error("{method} {url}: invalid response from registry {host}: {detail}")]
    InvalidResponse {
        method: &'static str,
        url: String,
        host: String,
        detail: String,
    },
    /// Listing stopped before the end; no partial list is returned.
    #[error("listing tags of {host}/{repository}: {detail}")]
    Listing {
        host: String,
        repository: String,
        detail: String,
    },
    /// A tag that no registry can hold, so no request is made.
    #[error("invalid tag '{0}': a tag is 1 to 128 characters of A-Z a-z 0-9 _ . - and starts with a letter, digit or _")]
    InvalidTag(String),
    /// Credentials, TLS material or proxy settings that can never work.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// Where the person reading an error changes each setting it points at: an ImageRepository's
/// `spec.*` fields when the controller reports it, command-line flags when a command does.
/// The caller says which ([`ClientOptions::fixes`](super::ClientOptions)); the registry client
/// itself knows neither vocabulary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fixes {
    /// What names the image (`spec.image`).
    pub image: &'static str,
    /// What to check when the registry cannot be reached.
    pub transport: &'static str,
    /// What to check when the proxy cannot be reached.
    pub proxy: &'static str,
    /// What to check when TLS fails.
    pub tls: &'static str,
    /// What sets the per-request timeout.
    pub timeout: &'static str,
    /// Where the credentials come from (when a registry rejects them).
    pub credentials: &'static str,
    /// How to give credentials when a registry wants some and got none; `{host}` is replaced
    /// by the registry host.
    pub give_credentials: &'static str,
}

impl Fixes {
    /// Neutral words, for callers that have neither objects nor flags.
    pub const NEUTRAL: Fixes = Fixes {
        image: "the image reference",
        transport: "check the image host, the TLS settings and the proxy",
        proxy: "check the proxy's address and that it is running",
        tls: "check the CA that signs the registry's certificate and any client certificate",
        timeout: "the timeout",
        credentials: "the credentials",
        give_credentials: "give credentials for {host}",
    };
}

/// Invalid client settings (Secrets or flags). The texts are Flux's where it defines them.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ConfigError {
    #[error("missing private key")]
    MissingPrivateKey,
    #[error("missing certificate")]
    MissingCertificate,
    #[error("no certificate: the TLS Secret needs 'tls.crt' and 'tls.key', or 'ca.crt', or both")]
    NoTlsMaterial,
    #[error("failed to parse TLS certificate and key")]
    InvalidKeyPair,
    #[error("failed to parse CA certificate")]
    InvalidCa,
    #[error("invalid proxy secret: key 'address' not found")]
    MissingProxyAddress,
    #[error("proxy address is empty")]
    EmptyProxyAddress,
    #[error("proxy URL is {0} characters long, the limit is 2048")]
    ProxyTooLong(usize),
    #[error("proxy URL must use one of the supported schemes (http, https, socks5), got '{0}'")]
    ProxyScheme(String),
    #[error("invalid proxy URL '{0}'")]
    ProxyUrl(String),
    #[error("invalid docker config: {0}")]
    DockerConfig(String),
    #[error("building the HTTP client: {0}")]
    Client(String),
}

fn codes_text(codes: &[String]) -> String {
    if codes.is_empty() {
        String::new()
    } else {
        format!(": {}", codes.join("; "))
    }
}

/// What to do about a status, by status.
fn hint(status: u16, host: &str, credentials_sent: bool, fixes: &Fixes) -> String {
    match status {
        401 if credentials_sent => format!(
            "{host} rejected the credentials: check the username and password in {}",
            fixes.credentials
        ),
        401 => format!(
            "{host} wants credentials: {}",
            fixes.give_credentials.replace("{host}", host)
        ),
        403 => format!("the credentials for {host} lack pull access to this repository"),
        404 => format!(
            "check that the repository (and tag) exist and that {} is spelled right",
            fixes.image
        ),
        400..=499 => format!("the registry rejected the request; check {}", fixes.image),
        _ => format!("{host} failed; the request is retried with backoff"),
    }
}

fn secs_until(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::now())
        .map_or(0, |d| d.as_secs_f64().ceil() as u64)
}

/// The longest refusal kept from a registry's answer, in characters.
const MAX_REFUSAL: usize = 300;

impl RegistryError {
    /// The registry's refusal to serve a manifest by its own policy (a cooldown on young
    /// digests, a block on known vulnerabilities): a 403 whose OCI error code is `DENIED`, or a
    /// 451, in the registry's words (cut at 300 characters, control characters as spaces).
    /// `None` for anything else, a 401 or a 403 without `DENIED` included: those keep failing.
    pub fn refusal(&self) -> Option<String> {
        let RegistryError::Status {
            status_code,
            status,
            codes,
            ..
        } = self
        else {
            return None;
        };
        let denied = codes
            .iter()
            .any(|c| c == "DENIED" || c.starts_with("DENIED: "));
        if !(*status_code == 451 || *status_code == 403 && denied) {
            return None;
        }
        let words = match codes.is_empty() {
            true => status.clone(),
            false => format!("{status}: {}", codes.join("; ")),
        };
        let words = words.chars().map(|c| if c.is_control() { ' ' } else { c });
        Some(words.take(MAX_REFUSAL).collect())
    }

    /// The HTTP status, when the registry answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            RegistryError::Status { status_code, .. } => Some(*status_code),
            RegistryError::RateLimited { status, .. } => Some(*status),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, codes: &[&str]) -> RegistryError {
        RegistryError::Status {
            method: "GET",
            url: "https://r.example/v2/app/manifests/1.0.0".into(),
            host: "r.example".into(),
            status_code: code,
            status: format!("{code} Status"),
            codes: codes.iter().map(|c| c.to_string()).collect(),
            credentials_sent: true,
            fixes: &Fixes::NEUTRAL,
        }
    }

    /// Only a policy's refusal is one: 403 `DENIED` or 451, in the registry's words, bounded;
    /// credentials (401, a 403 without `DENIED`) and everything else keep failing.
    #[test]
    fn a_refusal_is_a_403_denied_or_a_451() {
        let denied = status(403, &["DENIED: cooling\ndown"]);
        assert_eq!(
            denied.refusal().as_deref(),
            Some("403 Status: DENIED: cooling down")
        );
        assert!(status(403, &["DENIED"]).refusal().is_some());
        assert_eq!(status(451, &[]).refusal().as_deref(), Some("451 Status"));
        for other in [
            status(401, &["DENIED: no"]),
            status(403, &[]),
            status(403, &["UNAUTHORIZED: token", "DENIEDX"]),
            status(404, &["DENIED: odd"]),
        ] {
            assert_eq!(other.refusal(), None, "{other}");
        }
        let long = status(403, &[&format!("DENIED: {}", "x".repeat(1000))]);
        assert_eq!(long.refusal().unwrap().chars().count(), MAX_REFUSAL);
    }
}
