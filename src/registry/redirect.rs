//! Redirects, followed here rather than inside the HTTP client (docs/security.md, "What a
//! registry answers"). A scan whose every page answered 307 to a new host opened 3,020 sockets
//! (2,783 still open a minute and a half later, kept idle in the shared pool) and merged tags
//! from 3,000 other origins into the listing. So:
//! - at most [`MAX_REDIRECTS`] redirects per request, as before;
//! - the origins other than the registry's that one client (one reconcile) is redirected to
//!   are counted, and past [`MAX_REDIRECT_ORIGINS`] distinct ones a redirect is refused;
//! - a request to another origin carries no credentials and goes through a client of this
//!   reconcile that keeps no idle connection, so its sockets close with its answer;
//! - each hop takes a slot of its host in the scheduler, like any request, as the same asker:
//!   a hop's throttling holds back the identity and repository that followed it
//!   (scheduler/throttle.rs), not the hop's host for everyone (13 hops answering 429 in 7 s
//!   once left another tenant 1 request in 4 minutes).
//!
//! Whether an answer from another origin may be used at all is the caller's: a tag list page
//! may not (tags.rs), so a listing's redirect to another origin is refused before the hop is
//! sent ([`Redirects::SameOrigin`]); a blob or manifest checked by its digest may.

use super::client::{hold_slot, retry_after, Redirects, RegistryClient};
use super::describe::{method_name, url_host};
use super::scheduler::Asking;
use super::scope::scheduler_key;
use super::RegistryError;
use reqwest::header::{HeaderMap, AUTHORIZATION, COOKIE, LOCATION, PROXY_AUTHORIZATION};
use reqwest::{Method, Response, Url};

/// Redirects one request may follow.
pub const MAX_REDIRECTS: usize = 5;
/// Distinct origins other than the registry's that one reconcile's requests may be redirected
/// to (a registry's blob storage and a CDN or two).
pub const MAX_REDIRECT_ORIGINS: usize = 4;

impl RegistryClient {
    /// The answer at the end of `response`'s redirects (at most [`MAX_REDIRECTS`]); `headers`
    /// are those the first request carried, `asking` who asked (each hop waits for and records
    /// that asker's backoff), `redirects` where they may lead.
    pub(super) async fn follow_redirects(
        &self,
        method: &Method,
        asked: &Url,
        headers: &HeaderMap,
        mut response: Response,
        (asking, redirects): (&Asking<'_>, Redirects),
    ) -> Result<Response, RegistryError> {
        let refuse = |detail: String| RegistryError::InvalidResponse {
            method: method_name(method),
            url: asked.to_string(),
            host: url_host(asked),
            detail,
        };
        let mut hops = 0;
        while let Some(next) = redirect_target(&response)? {
            let status = response.status().as_u16();
            // Its slot goes before the next hop asks for one.
            drop(response);
            hops += 1;
            if hops > MAX_REDIRECTS {
                return Err(refuse(format!(
                    "more than {MAX_REDIRECTS} redirects; the last went to {}",
                    url_host(&next)
                )));
            }
            let same_origin = next.origin() == asked.origin();
            if !same_origin && redirects == Redirects::SameOrigin {
                return Err(refuse(format!(
                    "redirected to {}, another origin: refused before it was asked, an answer \
                     from there would not be used as the registry's",
                    url_host(&next)
                )));
            }
            if !same_origin && !self.admit_origin(&next) {
                return Err(refuse(format!(
                    "redirected to {}, a further origin past the {MAX_REDIRECT_ORIGINS} this \
                     scan was already redirected to: refused",
                    url_host(&next)
                )));
            }
            let mut forwarded = headers.clone();
            if !same_origin {
                // Credentials go only to the registry's origin (scope.rs).
                for sensitive in [AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION] {
                    forwarded.remove(sensitive);
                }
            }
            let method = match status {
                303 if method != Method::HEAD => Method::GET,
                _ => method.clone(),
            };
            let http = match same_origin {
                true => self.http.clone(),
                false => self.redirect_client()?,
            };
            let host = url_host(&next);
            let key = scheduler_key(&host, &self.options);
            let scheduler = &self.shared.scheduler;
            let slot = scheduler.acquire_for(&key, asking).await?;
            let sent = http
                .request(method.clone(), next.clone())
                .headers(forwarded)
                .send()
                .await;
            response = sent.map_err(|err| {
                scheduler.record_for(&key, asking, None, None);
                self.transport_error(&method, &next, &host, &err)
            })?;
            let status = response.status().as_u16();
            scheduler.record_for(&key, asking, Some(status), retry_after(response.headers()));
            hold_slot(&mut response, slot);
        }
        Ok(response)
    }

    /// Whether this scan may be redirected to `next`'s origin: one it was redirected to
    /// already, or a new one within [`MAX_REDIRECT_ORIGINS`] (then counted).
    fn admit_origin(&self, next: &Url) -> bool {
        let origin = next.origin().ascii_serialization();
        let mut origins = self
            .redirect_origins
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if !origins.contains(&origin) && origins.len() >= MAX_REDIRECT_ORIGINS {
            return false;
        }
        origins.insert(origin);
        true
    }

    /// The client for other origins: this reconcile's own, keeping no idle connection.
    fn redirect_client(&self) -> Result<reqwest::Client, RegistryError> {
        let mut client = self.redirect_http.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(client) = client.as_ref() {
            return Ok(client.clone());
        }
        let built = super::registries::build_http_client(&self.options, false)?;
        *client = Some(built.clone());
        Ok(built)
    }
}

/// Where a redirect answer points (`None`: not a redirect, or one without a usable target,
/// which is then taken as the answer it is).
fn redirect_target(response: &Response) -> Result<Option<Url>, RegistryError> {
    if !matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308) {
        return Ok(None);
    }
    let Some(location) = response
        .headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
    else {
        return Ok(None);
    };
    let next = response.url().join(location).ok();
    Ok(next.filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host()))
}
