//! The distribution auth flow: a `401` carries a `WWW-Authenticate` challenge; `Basic` means
//! send the credentials, `Bearer` means get a token from the realm for the scope
//! `repository:<repo>:pull` (with the credentials, if any) and send that. Tokens are cached
//! until they expire, and each route's challenge is remembered so later requests authenticate
//! up front instead of paying a 401 round trip every time. Whose state is whose: scope.rs.

use super::bounded::Bounded;
pub(super) use super::cloud::MAX_TOKEN_LIFE;
use super::keyring::Credentials;
use super::scope::{identity, NetworkPath, RepositoryRoute};
use serde::Deserialize;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What a registry asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Challenge {
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
    },
}

/// Parses a `WWW-Authenticate` value; `None` for schemes we cannot answer.
pub(super) fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim();
    let (scheme, params) = header.split_once(' ').unwrap_or((header, ""));
    let params = parse_params(params);
    match scheme.to_ascii_lowercase().as_str() {
        "basic" => Some(Challenge::Basic),
        "bearer" => Some(Challenge::Bearer {
            realm: params.get("realm")?.clone(),
            service: params.get("service").cloned(),
        }),
        _ => None,
    }
}

/// `key="value", key2=value2`; quoted values may hold commas (`scope="repository:a:pull,push"`).
fn parse_params(text: &str) -> HashMap<String, String> {
    let mut params = HashMap::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else {
            break;
        };
        let key = key
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let after = after.trim_start();
        let (value, remaining) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            (value, &quoted[end..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_string(), &after[end..])
        };
        params.insert(key, value);
        rest = remaining.trim_start().trim_start_matches(',').trim_start();
    }
    params
}

/// The token endpoint's answer (Docker's `token` or OAuth2's `access_token`).
#[derive(Deserialize)]
pub(super) struct TokenResponse {
    #[serde(default)]
    token: String,
    #[serde(default)]
    access_token: String,
    /// Seconds; the spec's default is 60.
    expires_in: Option<u64>,
}

impl TokenResponse {
    pub(super) fn into_token(self) -> Option<(String, Duration)> {
        let token = if self.token.is_empty() {
            self.access_token
        } else {
            self.token
        };
        // Cut at ten years, as the cloud path cuts its tokens: a token server's
        // `expires_in: 18446744073709551615` overflowed the clock's arithmetic and panicked.
        let life = Duration::from_secs(self.expires_in.unwrap_or(60).max(1)).min(MAX_TOKEN_LIFE);
        (!token.is_empty()).then_some((token, life))
    }
}

/// What a cached token is for: one realm, service and scope, fetched by one identity over one
/// network path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct TokenKey {
    pub(super) realm: String,
    pub(super) service: Option<String>,
    pub(super) scope: String,
    identity: Option<[u8; 32]>,
    path: NetworkPath,
}

/// Tokens kept at most; past that the least recently used goes (it is fetched again if needed).
pub(super) const MAX_TOKENS: usize = 4096;
/// Repositories (per route) whose challenge is kept at most; past that the least recently
/// used goes (its next request pays one 401 round trip again). Sized for the objects of the
/// largest scenarios (10,000 repositories a process), so a steady state pays no 401s.
pub(super) const MAX_CHALLENGES: usize = 16384;

/// Bearer tokens and each route's challenge, shared by every client.
#[derive(Debug, Default)]
pub(super) struct AuthCache {
    tokens: Bounded<TokenKey, (String, Instant), MAX_TOKENS>,
    challenges: Bounded<RepositoryRoute, Challenge, MAX_CHALLENGES>,
}

impl AuthCache {
    pub(super) fn challenge(&self, route: &RepositoryRoute) -> Option<Challenge> {
        self.challenges.get(route)
    }

    /// Only a challenge `scope::admit_challenge` let through is remembered.
    pub(super) fn remember_challenge(&self, route: RepositoryRoute, challenge: Challenge) {
        self.challenges.put(route, challenge);
    }

    pub(super) fn token(&self, key: &TokenKey) -> Option<String> {
        match self.tokens.get(key) {
            Some((token, expires)) if expires > Instant::now() => Some(token),
            Some(_) => {
                self.tokens.pop(key);
                None
            }
            None => None,
        }
    }

    /// Drops a token the registry refused before its expiry (revoked, or the server restarted).
    pub(super) fn forget_token(&self, key: &TokenKey) {
        self.tokens.pop(key);
    }

    /// Keeps a token until shortly before it expires (10% or 5 s early, whichever is less).
    /// The life is cut at [`MAX_TOKEN_LIFE`] here too, whoever computed it, and the sum
    /// saturates: no answer of a token server can make the clock's arithmetic panic.
    pub(super) fn store_token(&self, key: TokenKey, token: String, life: Duration) {
        let life = life.min(MAX_TOKEN_LIFE);
        let margin = (life / 10).min(Duration::from_secs(5));
        let now = Instant::now();
        let expires = now
            .checked_add(life - margin)
            .unwrap_or(now + Duration::from_secs(3600));
        self.tokens.put(key, (token, expires));
    }

    /// How many tokens and challenges are kept.
    pub(super) fn sizes(&self) -> (usize, usize) {
        (self.tokens.len(), self.challenges.len())
    }

    /// Drops tokens and challenges not used for `idle`.
    pub(super) fn forget_idle(&self, idle: Duration, now: Instant) -> usize {
        self.tokens.forget_idle(idle, now) + self.challenges.forget_idle(idle, now)
    }
}

impl TokenKey {
    /// A token is for one realm, service and scope, one identity and one network path.
    pub(super) fn new(
        realm: &str,
        service: Option<&str>,
        scope: &str,
        creds: Option<&Credentials>,
        path: NetworkPath,
    ) -> Self {
        TokenKey {
            realm: realm.into(),
            service: service.map(Into::into),
            scope: scope.into(),
            identity: identity(creds),
            path,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_challenges() {
        assert_eq!(
            parse_challenge(
                r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/alpine:pull,push""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.docker.io/token".into(),
                service: Some("registry.docker.io".into())
            })
        );
        assert_eq!(
            parse_challenge(r#"Basic realm="test""#),
            Some(Challenge::Basic)
        );
        assert_eq!(
            parse_challenge("bearer realm=https://r.example/t, service=r"),
            Some(Challenge::Bearer {
                realm: "https://r.example/t".into(),
                service: Some("r".into())
            })
        );
        assert_eq!(parse_challenge("Bearer service=x"), None, "no realm");
        assert_eq!(parse_challenge("Negotiate"), None);
    }

    #[test]
    fn tokens_and_challenges_are_bounded() {
        let cache = AuthCache::default();
        let path = NetworkPath::of(&super::super::ClientOptions::default());
        for i in 0..MAX_TOKENS + 100 {
            let key = TokenKey::new(&format!("https://r{i}.example/t"), None, "s", None, path);
            cache.store_token(key, "t".into(), Duration::from_secs(60));
            let url = reqwest::Url::parse(&format!("https://r{i}.example/v2/")).unwrap();
            cache.remember_challenge(
                RepositoryRoute::new(&url, "team/app", path),
                Challenge::Basic,
            );
        }
        for i in 0..16384 + 100 {
            let url = reqwest::Url::parse("https://r.example/v2/").unwrap();
            let repository = format!("team/app-{i}");
            cache.remember_challenge(
                RepositoryRoute::new(&url, &repository, path),
                Challenge::Basic,
            );
        }
        // The documented bounds (docs/security.md), not the constants.
        assert_eq!(cache.sizes(), (4096, 16384));
        let newest = TokenKey::new(
            &format!("https://r{}.example/t", MAX_TOKENS + 99),
            None,
            "s",
            None,
            path,
        );
        assert_eq!(
            cache.token(&newest).as_deref(),
            Some("t"),
            "the newest stays"
        );
    }

    #[test]
    fn tokens_expire_and_are_per_identity() {
        let cache = AuthCache::default();
        let alice = Credentials {
            username: "alice".into(),
            password: "x".into(),
        };
        let path = NetworkPath::of(&super::super::ClientOptions::default());
        let key = |scope: &str, creds| TokenKey::new("r", None, scope, creds, path);
        let wrong = Credentials {
            username: "alice".into(),
            password: "wrong".into(),
        };
        cache.store_token(key("s", Some(&alice)), "t1".into(), Duration::from_secs(60));
        assert_eq!(cache.token(&key("s", Some(&alice))).as_deref(), Some("t1"));
        assert_eq!(cache.token(&key("s", None)), None);
        assert_eq!(
            cache.token(&key("s", Some(&wrong))),
            None,
            "same user, other secret"
        );
        assert_eq!(cache.token(&key("other", Some(&alice))), None);
        cache.forget_token(&key("s", Some(&alice)));
        assert_eq!(cache.token(&key("s", Some(&alice))), None, "forgotten");
        cache.store_token(key("s", None), "t2".into(), Duration::ZERO);
        assert_eq!(cache.token(&key("s", None)), None, "expired at once");
    }

    /// A token server's `expires_in` of `u64::MAX` panicked the cache (`Instant + Duration`
    /// overflowed) and, re-raised in the reconcile, stopped every tenant's reconciles.
    #[test]
    fn an_endless_token_life_is_cut_at_ten_years_and_stored() {
        let answer = br#"{"token": "t", "expires_in": 18446744073709551615}"#;
        let (token, life) = serde_json::from_slice::<TokenResponse>(answer)
            .unwrap()
            .into_token()
            .unwrap();
        assert_eq!(life, Duration::from_secs(10 * 365 * 24 * 3600), "ten years");
        let cache = AuthCache::default();
        let path = NetworkPath::of(&super::super::ClientOptions::default());
        let key = TokenKey::new("r", None, "s", None, path);
        cache.store_token(key.clone(), token, life);
        assert_eq!(cache.token(&key).as_deref(), Some("t"));
        // Whoever computes the life, storing it saturates.
        cache.store_token(key.clone(), "u".into(), Duration::MAX);
        assert_eq!(cache.token(&key).as_deref(), Some("u"));
    }
}
