//! A registry's token authentication (the Docker/OCI token flow): the `Authorization` for a
//! host's challenge, and the bearer token fetched from its realm, cached per scope and
//! credentials.

use super::auth::{parse_challenge, Challenge, TokenKey, TokenResponse};
use super::body::{read_limited, status_error};
use super::client::{rate_limited, release_slot, Redirects, RegistryClient};
use super::describe::{method_name, url_host};
use super::keyring::Credentials;
use super::scope::{admit_challenge, RepositoryRoute};
use super::RegistryError;
use crate::reference::ImageReference;
use base64::Engine;
use reqwest::header::{ACCEPT, AUTHORIZATION, WWW_AUTHENTICATE};
use reqwest::{Method, Response, StatusCode, Url};
use std::time::Instant;

impl RegistryClient {
    /// One request with retries on throttling and one re-send after an auth challenge.
    pub(super) async fn execute(
        &self,
        method: &Method,
        image: &ImageReference,
        url: Url,
        (accept, redirects): (Option<&str>, Redirects),
    ) -> Result<Response, RegistryError> {
        let host = url_host(&url);
        let route = RepositoryRoute::new(&url, image.repository(), self.path);
        let scheduler = &self.shared.scheduler;
        let attempts = scheduler.config().attempts.max(1);
        let mut attempt = 0;
        let mut challenged = false;
        loop {
            let authorization = self.authorization(&route, &host, image).await?;
            let mut request = self.http.request(method.clone(), url.clone());
            if let Some(accept) = accept {
                request = request.header(ACCEPT, accept);
            }
            if let Some(value) = &authorization {
                request = request.header(AUTHORIZATION, value);
            }
            let about = (host.as_str(), image.repository());
            let (mut response, throttled_until) = self
                .send_once(request, method, &url, about, redirects)
                .await?;
            let status = response.status().as_u16();
            if status == 401 && !challenged {
                challenged = true;
                // A token may be fetched from this host before the answer is dropped.
                release_slot(&mut response);
                let asked = Asked {
                    method,
                    image,
                    url: &url,
                    route: &route,
                    host: &host,
                    authorization: authorization.as_deref(),
                };
                match self.challenged(asked, &response).await? {
                    true => continue,
                    false => return Ok(response),
                }
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

    /// A 401's challenge, taken: whether the request is to be sent again (the challenge is
    /// new, or none was answered, or the token it refused was forgotten) and now can be
    /// answered. A challenge from elsewhere than the registry's origin, or with an unfit realm,
    /// is refused: an error for this request alone, nothing remembered.
    async fn challenged(
        &self,
        asked: Asked<'_>,
        response: &Response,
    ) -> Result<bool, RegistryError> {
        let Asked {
            method,
            image,
            url,
            route,
            host,
            authorization,
        } = asked;
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_challenge);
        let Some(challenge) = challenge else {
            return Ok(false);
        };
        let realm = match &challenge {
            Challenge::Bearer { realm, .. } => Some(realm.as_str()),
            Challenge::Basic => None,
        };
        admit_challenge(method_name(method), url, response.url(), realm)?;
        let changed = self.shared.auth.challenge(route).as_ref() != Some(&challenge);
        // A token refused before its expiry: fetch a new one, once.
        let refused_token = !changed && authorization.is_some_and(|a| a.starts_with("Bearer "));
        if let (true, Challenge::Bearer { realm, service }) = (refused_token, &challenge) {
            let creds = self.credentials(host).await?;
            self.shared.auth.forget_token(&TokenKey::new(
                realm,
                service.as_deref(),
                &pull_scope(image),
                creds,
                self.path,
            ));
        }
        self.shared
            .auth
            .remember_challenge(route.clone(), challenge);
        // Re-send when we now know how to authenticate and did not already.
        let again = changed || authorization.is_none() || refused_token;
        Ok(again && self.authorization(route, host, image).await?.is_some())
    }

    /// The `Authorization` value for the route's known challenge, fetching a token if needed.
    pub(super) async fn authorization(
        &self,
        route: &RepositoryRoute,
        host: &str,
        image: &ImageReference,
    ) -> Result<Option<String>, RegistryError> {
        match self.shared.auth.challenge(route) {
            None => Ok(None),
            Some(Challenge::Basic) => Ok(self.credentials(host).await?.map(basic)),
            Some(Challenge::Bearer { realm, service }) => {
                let creds = self.credentials(host).await?;
                let key = TokenKey::new(
                    &realm,
                    service.as_deref(),
                    &pull_scope(image),
                    creds,
                    self.path,
                );
                let token = match self.shared.auth.token(&key) {
                    Some(token) => token,
                    None => self.fetch_token(key, creds, image.repository()).await?,
                };
                Ok(Some(format!("Bearer {token}")))
            }
        }
    }

    /// GETs a token for `repository` from the realm (with the credentials, when there are any).
    async fn fetch_token(
        &self,
        key: TokenKey,
        creds: Option<&Credentials>,
        repository: &str,
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
        // Throttling of the realm holds back the repository the token is for (throttle.rs).
        let (response, throttled_until) = self
            .send_once(
                request,
                &Method::GET,
                &url,
                (&host, repository),
                Redirects::Anywhere,
            )
            .await?;
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
}

pub(super) fn pull_scope(image: &ImageReference) -> String {
    format!("repository:{}:pull", image.repository())
}

fn basic(creds: &Credentials) -> String {
    let raw = format!("{}:{}", creds.username, creds.password);
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// The request a 401 answered, as [`RegistryClient::challenged`] reads it.
struct Asked<'a> {
    method: &'a Method,
    image: &'a ImageReference,
    url: &'a Url,
    route: &'a RepositoryRoute,
    host: &'a str,
    authorization: Option<&'a str>,
}
