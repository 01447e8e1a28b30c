//! The one cloud token cache of the process (`--token-cache-max-size`,
//! `--token-cache-max-duration`), shared by every object of both kinds: provider access tokens
//! and the registry credentials made from them, each under a key of provider, identity and
//! registry. Entries are dropped before their expiry, so a token is refreshed while still valid;
//! concurrent misses of one key make one fetch. Keys are SHA-256 digests and values are never
//! formatted, so nothing secret reaches logs.

use super::error::CloudError;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// The longest a provider's answer may say a token lives: an absurd `expires_in` or `exp`
/// (a hostile or broken endpoint) is cut here rather than overflowing the clock's arithmetic.
pub(in crate::registry) const MAX_TOKEN_LIFE: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// `now + life`, with `life` cut at [`MAX_TOKEN_LIFE`].
pub(super) fn expiry_in(life: Duration) -> SystemTime {
    SystemTime::now() + life.min(MAX_TOKEN_LIFE)
}

/// The Unix time `secs`, cut at [`MAX_TOKEN_LIFE`] from now.
pub(super) fn expiry_at(secs: u64) -> SystemTime {
    let latest = SystemTime::now() + MAX_TOKEN_LIFE;
    SystemTime::UNIX_EPOCH
        .checked_add(Duration::from_secs(secs))
        .map_or(latest, |at| at.min(latest))
}

/// A cached secret: provider credentials or registry credentials.
#[derive(Clone)]
pub(super) enum Secret {
    /// AWS credentials (access key, secret, session token).
    Aws(aws_credential_types::Credentials),
    /// An OAuth2 access token (Entra ID, Google) and its expiry.
    Bearer(String, SystemTime),
    /// A registry username and password.
    Registry(crate::registry::Credentials),
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(****)")
    }
}

struct Entry {
    secret: Secret,
    /// When the entry stops being served: before the secret expires.
    until: Instant,
}

/// The shared cache. A size of 0 turns caching off (every login fetches).
pub struct TokenCache {
    max_size: usize,
    max_duration: Duration,
    entries: Mutex<HashMap<[u8; 32], Entry>>,
    /// One lock per key being fetched, so concurrent misses wait for one fetch.
    fetching: Mutex<HashMap<[u8; 32], Arc<tokio::sync::Mutex<()>>>>,
}

impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TokenCache(max_size={}, max_duration={:?})",
            self.max_size, self.max_duration
        )
    }
}

impl Default for TokenCache {
    /// Flux's defaults: 100 entries, one hour.
    fn default() -> Self {
        TokenCache::new(100, Duration::from_secs(3600))
    }
}

impl TokenCache {
    pub fn new(max_size: usize, max_duration: Duration) -> Self {
        TokenCache {
            max_size,
            max_duration,
            entries: Mutex::default(),
            fetching: Mutex::default(),
        }
    }

    /// Entries held now (for tests and metrics).
    pub fn len(&self) -> usize {
        let now = Instant::now();
        let entries = self.entries.lock().expect("token cache lock");
        entries.values().filter(|e| e.until > now).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The secret under `key`, fetched (with its expiry) when absent or about to expire.
    pub(super) async fn get_or_fetch<F, Fut>(
        &self,
        key: &str,
        fetch: F,
    ) -> Result<Secret, CloudError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(Secret, SystemTime), CloudError>>,
    {
        if self.max_size == 0 {
            return fetch().await.map(|(secret, _)| secret);
        }
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        if let Some(secret) = self.lookup(&digest) {
            return Ok(secret);
        }
        let lock = self
            .fetching
            .lock()
            .expect("token cache lock")
            .entry(digest)
            .or_default()
            .clone();
        let _guard = lock.lock().await;
        // Another task may have fetched it while this one waited.
        if let Some(secret) = self.lookup(&digest) {
            return Ok(secret);
        }
        let result = fetch().await;
        self.fetching
            .lock()
            .expect("token cache lock")
            .remove(&digest);
        let (secret, expires) = result?;
        self.insert(digest, secret.clone(), expires);
        Ok(secret)
    }

    fn lookup(&self, digest: &[u8; 32]) -> Option<Secret> {
        let entries = self.entries.lock().expect("token cache lock");
        entries
            .get(digest)
            .filter(|e| e.until > Instant::now())
            .map(|e| e.secret.clone())
    }

    fn insert(&self, digest: [u8; 32], secret: Secret, expires: SystemTime) {
        let life = expires
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        let served = serve_for(life).min(self.max_duration);
        if served.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut entries = self.entries.lock().expect("token cache lock");
        entries.retain(|_, e| e.until > now);
        while entries.len() >= self.max_size {
            // Full: the entry that would be refreshed soonest goes first.
            let Some(soonest) = entries.iter().min_by_key(|(_, e)| e.until).map(|(k, _)| *k) else {
                break;
            };
            entries.remove(&soonest);
        }
        entries.insert(
            digest,
            Entry {
                secret,
                until: now + served,
            },
        );
    }
}

/// How long a secret valid for `life` is served: until 80% of its life has passed, and at
/// least 30 s before it expires (so a request never starts with a secret about to lapse).
pub(super) fn serve_for(life: Duration) -> Duration {
    let early = (life / 5).max(Duration::from_secs(30));
    life.saturating_sub(early)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn bearer(s: &Secret) -> &str {
        match s {
            Secret::Bearer(t, _) => t,
            _ => panic!("not a bearer token"),
        }
    }

    async fn fetcher(
        calls: &AtomicUsize,
        life: Duration,
    ) -> Result<(Secret, SystemTime), CloudError> {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        let at = SystemTime::now() + life;
        Ok((Secret::Bearer(format!("t{n}"), at), at))
    }

    #[tokio::test]
    async fn serves_until_shortly_before_expiry_and_per_key() {
        let cache = TokenCache::default();
        let calls = AtomicUsize::new(0);
        let hour = Duration::from_secs(3600);
        let a = cache
            .get_or_fetch("a", || fetcher(&calls, hour))
            .await
            .unwrap();
        let again = cache
            .get_or_fetch("a", || fetcher(&calls, hour))
            .await
            .unwrap();
        assert_eq!((bearer(&a), bearer(&again)), ("t0", "t0"));
        let b = cache
            .get_or_fetch("b", || fetcher(&calls, hour))
            .await
            .unwrap();
        assert_eq!(bearer(&b), "t1", "another key fetches");
        // A secret that expires within the refresh margin is not served again.
        let short = Duration::from_secs(20);
        cache
            .get_or_fetch("c", || fetcher(&calls, short))
            .await
            .unwrap();
        let c = cache
            .get_or_fetch("c", || fetcher(&calls, short))
            .await
            .unwrap();
        assert_eq!(bearer(&c), "t3");
        assert_eq!(cache.len(), 2);
    }

    #[tokio::test]
    async fn bounded_by_size_and_duration_and_off_at_zero() {
        let calls = AtomicUsize::new(0);
        let hour = Duration::from_secs(3600);
        let small = TokenCache::new(2, hour);
        for key in ["a", "b", "c"] {
            small
                .get_or_fetch(key, || fetcher(&calls, hour))
                .await
                .unwrap();
        }
        assert_eq!(small.len(), 2, "the oldest is evicted");
        let off = TokenCache::new(0, hour);
        off.get_or_fetch("a", || fetcher(&calls, hour))
            .await
            .unwrap();
        off.get_or_fetch("a", || fetcher(&calls, hour))
            .await
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 5, "size 0 caches nothing");
        let brief = TokenCache::new(10, Duration::ZERO);
        brief
            .get_or_fetch("a", || fetcher(&calls, hour))
            .await
            .unwrap();
        assert!(brief.is_empty(), "max duration 0 keeps nothing");
    }

    #[tokio::test]
    async fn concurrent_misses_fetch_once_and_errors_are_not_cached() {
        let cache = Arc::new(TokenCache::default());
        let calls = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (cache, calls) = (cache.clone(), calls.clone());
                tokio::spawn(async move {
                    cache
                        .get_or_fetch("k", || async {
                            tokio::task::yield_now().await;
                            calls.fetch_add(1, Ordering::SeqCst);
                            let at = SystemTime::now() + Duration::from_secs(600);
                            Ok((Secret::Bearer("t".into(), at), at))
                        })
                        .await
                        .unwrap();
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let failed = cache
            .get_or_fetch("e", || async { Err("boom".into()) })
            .await;
        assert_eq!(failed.unwrap_err().to_string(), "boom");
        assert!(cache.lookup(&Sha256::digest(b"e").into()).is_none());
        assert_eq!(
            format!("{:?}", Secret::Bearer("x".into(), SystemTime::now())),
            "Secret(****)"
        );
    }

    #[test]
    fn refreshes_early() {
        let hour = Duration::from_secs(3600);
        assert_eq!(serve_for(hour), Duration::from_secs(2880));
        assert_eq!(serve_for(Duration::from_secs(60)), Duration::from_secs(30));
        assert_eq!(serve_for(Duration::from_secs(10)), Duration::ZERO);
    }
}
