//! HTTP for the cloud APIs (token endpoints, STS, ECR, the ACR exchange, metadata servers),
//! with the same client as the registry: its TLS roots (a `certSecretRef` CA is trusted here
//! too), its proxy (`proxySecretRef`, else the environment, as Flux passes it to the
//! providers), its timeout, and the per-host scheduler, so a throttling cloud API is backed off
//! like a registry and its `Retry-After` honoured. Node-local metadata endpoints (loopback and
//! link-local addresses, `metadata.google.internal`) are reached directly, never through a
//! proxy, which could not reach them.

use super::super::describe::{chain, url_host};
use super::super::retry_after::parse_retry_after;
use super::super::scheduler::Scheduler;
use super::error::CloudError;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{Method, RequestBuilder, StatusCode, Url};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::SystemTime;

/// The largest cloud API answer read (token answers are a few KiB).
const MAX_BODY: usize = 1 << 20;

/// One answer: status, headers, body.
pub(crate) struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// The clients cloud API calls go through.
#[derive(Clone)]
pub(crate) struct CloudHttp {
    pub(crate) proxied: reqwest::Client,
    pub(crate) direct: reqwest::Client,
    pub(crate) scheduler: Arc<Scheduler>,
    /// The proxy in use, for cache keys (tokens fetched through one proxy are not shared with
    /// another, as in Flux).
    pub(crate) proxy: String,
}

impl std::fmt::Debug for CloudHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CloudHttp")
    }
}

impl CloudHttp {
    /// A request to `url`, on the direct client for node-local hosts.
    pub(super) fn request(&self, method: Method, url: &str) -> Result<RequestBuilder, CloudError> {
        let parsed = Url::parse(url).map_err(|e| format!("invalid URL '{url}': {e}"))?;
        let client = if is_node_local(&parsed) {
            &self.direct
        } else {
            &self.proxied
        };
        Ok(client.request(method, parsed))
    }

    /// Sends `request` in a slot of its host and reads the answer, whatever its status. A
    /// throttling answer backs the host off for every later request (the caller decides
    /// whether to fail now).
    pub(crate) async fn send(&self, request: RequestBuilder) -> Result<Answer, CloudError> {
        let request = request.build().map_err(|e| chain(&e))?;
        let (method, url) = (request.method().clone(), request.url().clone());
        let host = url_host(&url);
        let scheduler = &self.scheduler;
        let slot = scheduler.acquire(&host).await.map_err(|e| e.to_string())?;
        let client = if is_node_local(&url) {
            &self.direct
        } else {
            &self.proxied
        };
        let sent = client.execute(request).await;
        drop(slot);
        let mut response = match sent {
            Ok(response) => response,
            Err(err) => {
                scheduler.record(&host, None, None);
                return Err(format!("{method} {}: {}", redact(&url), chain(&err)).into());
            }
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        scheduler.record(&host, Some(status.as_u16()), retry_after);
        let headers = response.headers().clone();
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) if body.len() + chunk.len() <= MAX_BODY => {
                    body.extend_from_slice(&chunk)
                }
                Ok(Some(_)) => {
                    return Err(format!(
                        "{method} {}: the answer exceeds {MAX_BODY} bytes",
                        redact(&url)
                    )
                    .into())
                }
                Ok(None) => break,
                Err(err) => {
                    return Err(format!("{method} {}: {}", redact(&url), chain(&err)).into())
                }
            }
        }
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// Sends `request` and parses a 2xx JSON answer; any other status is an error holding the
    /// API's own error text (never the request, which carries the credentials).
    pub(super) async fn json<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        request: RequestBuilder,
    ) -> Result<T, CloudError> {
        let answer = self.send(request).await?;
        if !answer.status.is_success() {
            return Err(format!("{what}: {}{}", answer.status, error_text(&answer.body)).into());
        }
        serde_json::from_slice(&answer.body).map_err(|e| {
            CloudError::from(format!("{what}: the answer is not the expected JSON: {e}"))
        })
    }
}

/// `: <error>: <description>` from an OAuth2 or Google/Azure error body, else a short excerpt.
pub(super) fn error_text(body: &[u8]) -> String {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        return match text.is_empty() {
            true => String::new(),
            false => format!(": {}", text.chars().take(300).collect::<String>()),
        };
    };
    let field =
        |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    let nested = value.get("error").filter(|e| e.is_object());
    let parts: Vec<String> = match nested {
        Some(e) => [field(e, "status"), field(e, "message")]
            .into_iter()
            .flatten()
            .collect(),
        None => [
            field(&value, "error"),
            field(&value, "error_description"),
            field(&value, "message"),
        ]
        .into_iter()
        .flatten()
        .collect(),
    };
    match parts.is_empty() {
        true => String::new(),
        false => format!(": {}", parts.join(": ")),
    }
}

/// Loopback and link-local addresses (instance metadata, EKS Pod Identity, the Azure IMDS) and
/// GKE's metadata host.
fn is_node_local(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_link_local(),
        Some(url::Host::Ipv6(ip)) => {
            IpAddr::V6(ip).is_loopback() || (ip.segments()[0] & 0xffc0) == 0xfe80
        }
        Some(url::Host::Domain(d)) => d == "localhost" || d == "metadata.google.internal",
        None => false,
    }
}

/// A URL without its query (which may carry a token) for messages.
fn redact(url: &Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_hosts_are_reached_directly() {
        let local = |u: &str| is_node_local(&Url::parse(u).unwrap());
        assert!(local("http://169.254.169.254/latest/api/token"));
        assert!(local("http://169.254.170.23/v1/credentials"));
        assert!(local("http://127.0.0.1:8080/x"));
        assert!(local("http://metadata.google.internal/computeMetadata/v1/"));
        assert!(local("http://[fe80::1]/"));
        assert!(!local("https://sts.googleapis.com/v1/token"));
        assert!(!local("https://10.0.0.1/"));
    }

    #[test]
    fn error_bodies_give_the_apis_words() {
        let entra =
            br#"{"error":"invalid_client","error_description":"AADSTS700016: app not found"}"#;
        assert_eq!(
            error_text(entra),
            ": invalid_client: AADSTS700016: app not found"
        );
        let google = br#"{"error":{"code":403,"status":"PERMISSION_DENIED","message":"denied"}}"#;
        assert_eq!(error_text(google), ": PERMISSION_DENIED: denied");
        assert_eq!(error_text(b"  "), "");
        assert_eq!(error_text(b"plain words"), ": plain words");
    }
}
