//! A request to a registry as the tag and manifest calls make it: over the scheme the image
//! says (HTTPS, plain HTTP, or HTTPS then HTTP, remembering which one the host speaks), each
//! attempt authenticated and retried on throttling by [`super::token_auth`].

use super::client::{Redirects, RegistryClient, Target};
use super::describe::method_name;
use super::scope::Route;
use super::RegistryError;
use crate::reference::{ImageReference, Scheme};
use reqwest::{Method, Response, Url};

impl RegistryClient {
    /// Sends one request and returns the response with the URL it went to. Statuses other
    /// than throttling come back as they are; the caller decides what is an error.
    pub(super) async fn send(
        &self,
        method: Method,
        image: &ImageReference,
        target: Target<'_>,
        accept: Option<&str>,
    ) -> Result<(Url, Response), RegistryError> {
        self.send_with(method, image, target, (accept, Redirects::Anywhere))
            .await
    }

    /// [`RegistryClient::send`], its redirects kept to where `redirects` says.
    pub(super) async fn send_with(
        &self,
        method: Method,
        image: &ImageReference,
        target: Target<'_>,
        asked: (Option<&str>, Redirects),
    ) -> Result<(Url, Response), RegistryError> {
        self.check_login_host(image.registry())?;
        let path = match target {
            Target::Url(url) => {
                let response = self.execute(&method, image, url.clone(), asked).await?;
                return Ok((url, response));
            }
            Target::Path(path) => path,
        };
        let host = image.registry();
        let route = Route::host(host, self.path);
        let known = self.shared.schemes.get(&route);
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
            match self.execute(&method, image, url.clone(), asked).await {
                Ok(response) => {
                    if image.scheme() == Scheme::HttpsThenHttp {
                        self.shared.schemes.put(route.clone(), scheme);
                    }
                    return Ok((url, response));
                }
                // The remembered scheme no longer connects (the registry changed): forget
                // it, so the next request tries both again.
                Err(err @ RegistryError::Transport { .. }) if known.is_some() => {
                    self.shared.schemes.pop(&route);
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
}
