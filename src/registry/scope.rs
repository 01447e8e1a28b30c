//! Whose registry state is whose (docs/security.md, "What a registry teaches the client").
//!
//! The process shares what registries teach it (a host's challenge, the scheme it speaks, its
//! bearer tokens, its backoff) between reconciles, and so between tenants. One rule keeps a
//! tenant from reaching another's access through that sharing:
//!
//! - what is learned is kept for the **route** it was learned over: the registry's origin
//!   (scheme, host, port) and the client's **network path** (its own proxy, or none, and its TLS
//!   settings); a challenge for the **repository** too, since one origin may serve repositories
//!   from different backends with realms of their own. Another proxy may answer for any host name, so its answers never count for
//!   another path; the same origin over the same path shares them (a rate limit is real quota).
//! - a token is kept for the **identity** that fetched it too: a digest of the username and the
//!   secret, never the username alone.
//! - credentials go only to the registry's origin and to the realm that origin announced, and
//!   over TLS when the registry is TLS; a challenge from anywhere else (a redirect's target) is
//!   refused, and a challenge that cannot be used is refused without being remembered.

use super::describe::url_host;
use super::keyring::Credentials;
use super::{ClientOptions, RegistryError};
use reqwest::Url;
use sha2::{Digest, Sha256};

/// A client's network path: its own proxy (or none) and its TLS settings, hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct NetworkPath {
    digest: [u8; 32],
}

impl NetworkPath {
    pub(super) fn of(options: &ClientOptions) -> Self {
        let mut hasher = Sha256::new();
        if let Some(tls) = &options.tls {
            hasher.update(b"tls");
            tls.hash_into(&mut hasher);
        }
        if let Some(proxy) = &options.proxy {
            hasher.update(b"proxy");
            hasher.update(proxy.url_text().as_bytes());
        }
        NetworkPath {
            digest: hasher.finalize().into(),
        }
    }
}

/// A registry origin reached over one network path: the key of its challenge and scheme.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Route {
    origin: String,
    path: NetworkPath,
}

impl Route {
    pub(super) fn new(url: &Url, path: NetworkPath) -> Self {
        Route {
            origin: url.origin().ascii_serialization(),
            path,
        }
    }

    /// For a host whose scheme is not chosen yet (the HTTPS-then-HTTP rule's memory).
    pub(super) fn host(host: &str, path: NetworkPath) -> Self {
        Route {
            origin: host.to_string(),
            path,
        }
    }
}

/// Where a challenge was learnt: a route and the repository asked for. One origin may serve
/// its repositories from different backends, each with a realm of its own (large registries
/// and proxies do): a challenge one repository's path taught, used for another's, sent that
/// other tenant's credentials to the first one's realm. So a challenge is kept per repository;
/// another repository of the origin learns its own with one 401, as Flux asks `/v2/` on every
/// scan.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct RepositoryRoute {
    route: Route,
    repository: String,
}

impl RepositoryRoute {
    pub(super) fn new(url: &Url, repository: &str, path: NetworkPath) -> Self {
        RepositoryRoute {
            route: Route::new(url, path),
            repository: repository.to_string(),
        }
    }
}

/// What one repository's answers teach about the registry's API for that repository alone
/// (its referrers API's 404, remembered): the host over a path, the repository, and who asked.
/// One repository's 404 (a per-path backend without the API) made the host "without referrers
/// API" for every tenant, whose referrer-only signatures were then never seen.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct AskedFor {
    route: Route,
    repository: String,
    identity: Option<[u8; 32]>,
}

impl AskedFor {
    pub(super) fn new(route: Route, repository: &str, creds: Option<&Credentials>) -> Self {
        AskedFor {
            route,
            repository: repository.to_string(),
            identity: identity(creds),
        }
    }
}

/// Who asks: nobody, or a digest of the username and the secret (two tenants with one username
/// and different passwords are two identities).
pub(super) fn identity(creds: Option<&Credentials>) -> Option<[u8; 32]> {
    creds.map(|c| {
        let mut hasher = Sha256::new();
        hasher.update((c.username.len() as u64).to_le_bytes());
        hasher.update(c.username.as_bytes());
        hasher.update(c.password.as_bytes());
        hasher.finalize().into()
    })
}

/// The scheduler's key for requests to `host` (host:port): the host alone over the direct path
/// (or the environment's proxy, the same for every object), `host via proxy` through an
/// object's own proxy, so that proxy's throttling never holds back the direct path.
pub(super) fn scheduler_key(host: &str, options: &ClientOptions) -> String {
    match &options.proxy {
        Some(proxy) => format!("{host} via {}", proxy.origin()),
        None => host.to_string(),
    }
}

/// A challenge may be answered and remembered only when the registry's own origin sent it, and
/// a bearer realm (`realm`, `None` for Basic) only when it is an http(s) URL that keeps TLS when
/// the registry has it.
pub(super) fn admit_challenge(
    method: &'static str,
    asked: &Url,
    answered: &Url,
    realm: Option<&str>,
) -> Result<(), RegistryError> {
    let refuse = |detail: String| RegistryError::InvalidResponse {
        method,
        url: asked.to_string(),
        host: url_host(asked),
        detail,
    };
    if answered.origin() != asked.origin() {
        return Err(refuse(format!(
            "the request was redirected to {}, which asked for credentials: refused, they are \
             sent only to the registry's own origin ({})",
            url_host(answered),
            asked.origin().ascii_serialization()
        )));
    }
    if let Some(realm) = realm {
        let url = Url::parse(realm).map_err(|e| {
            refuse(format!(
                "the token realm '{}' is not a URL ({e})",
                describe_text(realm)
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") || !url.has_host() {
            return Err(refuse(format!(
                "the token realm '{}' is not an http(s) URL",
                describe_text(realm)
            )));
        }
        if asked.scheme() == "https" && url.scheme() != "https" {
            return Err(refuse(format!(
                "the registry is HTTPS but its token realm {} is plain HTTP: refused, the \
                 credentials would travel in clear text",
                url_host(&url)
            )));
        }
    }
    Ok(())
}

/// A registry's text as it may appear in a message: at most 200 characters, control characters
/// escaped.
fn describe_text(text: &str) -> String {
    text.chars()
        .take(200)
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    fn bearer(realm: &str) -> Option<&str> {
        Some(realm)
    }

    #[test]
    fn identities_differ_by_secret_not_only_by_username() {
        let creds = |user: &str, pass: &str| Credentials {
            username: user.into(),
            password: pass.into(),
        };
        assert_ne!(
            identity(Some(&creds("alice", "right"))),
            identity(Some(&creds("alice", "wrong")))
        );
        // The length prefix keeps `ab` + `c` apart from `a` + `bc`.
        assert_ne!(
            identity(Some(&creds("ab", "c"))),
            identity(Some(&creds("a", "bc")))
        );
        assert_eq!(identity(None), None);
    }

    #[test]
    fn routes_differ_by_scheme_port_and_path() {
        let direct = NetworkPath::of(&ClientOptions::default());
        let proxied = NetworkPath::of(&ClientOptions {
            proxy: Some(super::super::ProxySettings::parse("http://127.0.0.1:3128").unwrap()),
            ..Default::default()
        });
        assert_ne!(direct, proxied);
        let r = |u: &str, p| Route::new(&url(u), p);
        assert_eq!(
            r("https://r.example/v2/a", direct),
            r("https://r.example/v2/b", direct)
        );
        assert_ne!(
            r("https://r.example/v2/", direct),
            r("http://r.example/v2/", direct)
        );
        assert_ne!(
            r("https://r.example/v2/", direct),
            r("https://r.example:8443/v2/", direct)
        );
        assert_ne!(
            r("https://r.example/v2/", direct),
            r("https://r.example/v2/", proxied)
        );
    }

    #[test]
    fn challenges_from_elsewhere_or_downgrading_tls_are_refused() {
        let asked = url("https://r.example/v2/a/tags/list");
        let ok = admit_challenge("GET", &asked, &asked, bearer("https://auth.example/token"));
        assert!(
            ok.is_ok(),
            "a realm on another host that the registry announced"
        );
        let err = admit_challenge("GET", &asked, &url("https://evil.example/x"), None).unwrap_err();
        assert!(
            err.to_string().contains("redirected to evil.example"),
            "{err}"
        );
        let err = admit_challenge("GET", &asked, &asked, bearer("http://auth.example/token"))
            .unwrap_err();
        assert!(err.to_string().contains("plain HTTP"), "{err}");
        let err =
            admit_challenge("GET", &asked, &asked, bearer("not a url\u{1b}[31m")).unwrap_err();
        assert!(err.to_string().contains("\\u{1b}"), "escaped: {err}");
        let err = admit_challenge("GET", &asked, &asked, bearer("file:///etc/passwd")).unwrap_err();
        assert!(err.to_string().contains("not an http(s) URL"), "{err}");
        // A plain-HTTP registry may name either kind of realm.
        let plain = url("http://127.0.0.1:5000/v2/");
        assert!(admit_challenge("GET", &plain, &plain, bearer("http://127.0.0.1:5001/t")).is_ok());
    }
}
