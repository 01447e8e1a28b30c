//! Sigstore's public-good trusted root, for keyless policies with no `trusted_root.json` of
//! their own (docs/imagepolicy.md, "Keyless with no Secret"). It fails closed: a root is used
//! only while TUF vouches for it, and the one shipped in the binary only under the anchor it
//! was shipped with. The sources, best first:
//!
//! 1. the mirror: Sigstore's TUF repository (`--sigstore-tuf-mirror`, by default
//!    `https://tuf-repo-cdn.sigstore.dev`), read by tough from a trust anchor (the TUF root
//!    embedded in the binary, or `--sigstore-tuf-root`): root rotations, expiry, rollback,
//!    lengths and hashes are checked there; its target `trusted_root.json` is the root;
//! 2. while the mirror cannot be reached, the copy of what it served last, kept in the store
//!    (`<storage>/sigstore/`) and verified again by TUF from its own metadata, until that
//!    metadata expires;
//! 3. with the embedded anchor only, and nothing verified, the root embedded in the binary
//!    (Sigstore's, as `sigstore/sigstore` v1.10.8 ships it): never under another anchor.
//!
//! A mirror that answers with what TUF refuses (expired, rolled back, frozen, badly signed, a
//! hash that does not match) is trusted for nothing, its kept copy included: no root, and
//! keyless elections wait, saying which mirror refused what ([`Current::stale`]). The mirror
//! is read again every [`REFRESH_EVERY`], [`RETRY_AFTER_FAILURE`] after a failure, at start,
//! and as soon as the root in use expires. A read that puts another root in use (or none) is
//! told to [`PublicGoodRoot::changes`]' subscribers: the policies it judges are judged again.

mod kept;
mod transport;
pub mod tuf;

use tuf::{Failure, Trust, Verified};
pub use tuf::{MAX_ROOT_BYTES, TARGET};

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};
use url::Url;

/// Sigstore's public-good TUF repository.
pub const DEFAULT_MIRROR: &str = "https://tuf-repo-cdn.sigstore.dev";
/// How often the mirror is read again; after a failed read, sooner.
pub const REFRESH_EVERY: Duration = Duration::from_secs(24 * 3600);
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(10 * 60);
/// A whole read of the mirror (several files, each within the transport's 30 s).
pub const READ_DEADLINE: Duration = Duration::from_secs(60);

/// The public-good TUF root (its metadata, the trust anchor) and trusted root as shipped.
const EMBEDDED_ANCHOR: &[u8] = include_bytes!("public-good/root.json");
const EMBEDDED_ROOT: &[u8] = include_bytes!("public-good/trusted_root.json");

/// Where the root in use came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Mirror,
    Cached,
    Embedded,
    /// No root may be used: keyless elections wait ([`Current::stale`] says why).
    Nothing,
}

/// The root in use.
#[derive(Debug)]
pub struct Current {
    /// `None` with [`Source::Nothing`].
    pub bytes: Option<Arc<[u8]>>,
    pub source: Source,
    /// Why the mirror's root is not in use (`None`: it is).
    pub stale: Option<String>,
    /// When the TUF metadata that vouched for it expires (`None`: the embedded root).
    pub expires: Option<SystemTime>,
}

impl Current {
    fn nothing(stale: String) -> Current {
        Current {
            bytes: None,
            source: Source::Nothing,
            stale: Some(stale),
            expires: None,
        }
    }

    /// Whether the metadata that vouched for it has expired at `now`.
    pub fn expired(&self, now: SystemTime) -> bool {
        self.expires.is_some_and(|expires| expires <= now)
    }
}

/// What [`PublicGoodRoot::fresh`] does about the mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MirrorRead {
    /// The caller waits for a read: none has been tried, or the root in use has expired.
    Now,
    /// A read is due; the root in use serves meanwhile.
    InBackground,
    NotYet,
}

/// Whether a read of the mirror is due, `last` tried at that instant (`None`: never).
fn read_due(
    last: Option<std::time::Instant>,
    current: &Current,
    has_mirror: bool,
    now: SystemTime,
    instant: std::time::Instant,
) -> MirrorRead {
    let Some(last) = last else {
        return MirrorRead::Now;
    };
    if current.expired(now) {
        return MirrorRead::Now;
    }
    let wait = match current.stale {
        None => REFRESH_EVERY,
        Some(_) => RETRY_AFTER_FAILURE,
    };
    if has_mirror && instant.saturating_duration_since(last) >= wait {
        MirrorRead::InBackground
    } else {
        MirrorRead::NotYet
    }
}

/// How the root is had.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The TUF repository (`None`: never read; the cached or embedded root is used).
    pub mirror: Option<Url>,
    /// A TUF root to trust instead of the embedded public-good one (another instance's).
    pub anchor: Option<Vec<u8>>,
    /// Where the TUF metadata and the last good root are kept (`None`: nowhere).
    pub cache: Option<PathBuf>,
}

#[derive(Debug)]
pub struct PublicGoodRoot {
    settings: Settings,
    current: RwLock<Arc<Current>>,
    /// When the mirror was last read (`None`: never), held while a read runs.
    attempted: tokio::sync::Mutex<Option<std::time::Instant>>,
    /// How many times another root (or none) was put in use.
    changed: tokio::sync::watch::Sender<u64>,
}

impl PublicGoodRoot {
    /// Nothing read yet: the embedded root under the embedded anchor, else none; the first
    /// [`PublicGoodRoot::fresh`] reads the mirror (or the kept copy).
    pub fn new(settings: Settings) -> PublicGoodRoot {
        let stale = match &settings.mirror {
            Some(mirror) => format!("the TUF mirror {mirror} has not been read yet"),
            None => "no TUF mirror is set (--sigstore-tuf-mirror)".to_string(),
        };
        let current = match settings.anchor {
            None => embedded(stale),
            Some(_) => Current::nothing(stale),
        };
        PublicGoodRoot {
            settings,
            current: RwLock::new(Arc::new(current)),
            attempted: tokio::sync::Mutex::new(None),
            changed: tokio::sync::watch::channel(0).0,
        }
    }

    /// The root to judge with now. The first time, and whenever the root in use has expired,
    /// the caller waits for a read (at most [`READ_DEADLINE`]); later, when a read is due
    /// ([`REFRESH_EVERY`], or [`RETRY_AFTER_FAILURE`] after a failed one), it runs in the
    /// background and the current root is used meanwhile.
    pub async fn fresh(self: &Arc<Self>) -> Arc<Current> {
        let mut attempted = self.attempted.lock().await;
        let current = self.current();
        let now = std::time::Instant::now();
        let has_mirror = self.settings.mirror.is_some();
        match read_due(*attempted, &current, has_mirror, SystemTime::now(), now) {
            MirrorRead::Now => {
                *attempted = Some(now);
                self.refresh().await
            }
            MirrorRead::InBackground => {
                *attempted = Some(now);
                let this = self.clone();
                tokio::spawn(async move { this.refresh().await });
                current
            }
            MirrorRead::NotYet => current,
        }
    }

    /// The root in use.
    pub fn current(&self) -> Arc<Current> {
        self.current.read().expect("root lock").clone()
    }

    /// Reads the mirror (or, without one, the kept copy) and puts what it comes to in use.
    pub async fn refresh(&self) -> Arc<Current> {
        let read = match &self.settings.mirror {
            Some(mirror) => {
                let trust = self.trust();
                match tokio::time::timeout(READ_DEADLINE, tuf::online(&trust, mirror)).await {
                    Ok(read) => read,
                    Err(_) => Err(Failure::Unreachable(format!(
                        "no answer within {} s",
                        READ_DEADLINE.as_secs()
                    ))),
                }
            }
            None => Err(Failure::Unreachable("no TUF mirror is set".into())),
        };
        let next = Arc::new(self.after(read).await);
        let previous =
            std::mem::replace(&mut *self.current.write().expect("root lock"), next.clone());
        if previous.bytes != next.bytes {
            self.changed.send_modify(|count| *count += 1);
        }
        next
    }

    /// Told each time a read puts another root in use, or none: a root rotated or revoked by
    /// its TUF repository counts at once for the policies it judges, not at their next timer.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// What a read of the mirror comes to.
    async fn after(&self, read: Result<Verified, Failure>) -> Current {
        let mirror = self.mirror_name();
        match read {
            Ok(verified) => {
                if let Some(dir) = &self.settings.cache {
                    if let Err(e) = kept::keep(dir, &verified) {
                        tracing::warn!(error = %e, "the public-good trusted root could not be kept in the store");
                    }
                }
                Current {
                    bytes: Some(verified.bytes.into()),
                    source: Source::Mirror,
                    stale: None,
                    expires: Some(verified.expires),
                }
            }
            Err(Failure::Refused(why)) => {
                tracing::error!(%mirror, error = %why, "the Sigstore TUF mirror served what TUF refuses: nothing it served is trusted; keyless elections wait");
                if let Some(dir) = &self.settings.cache {
                    kept::forget(dir);
                }
                Current::nothing(format!(
                    "the TUF mirror {mirror} served what TUF refuses ({why}): nothing it served \
                     is trusted until it serves metadata TUF accepts"
                ))
            }
            Err(Failure::Unreachable(why)) => self.without_the_mirror(&mirror, why).await,
        }
    }

    /// The mirror out of reach (or none): the kept copy while TUF still vouches for it, else
    /// the embedded root under the embedded anchor, else nothing.
    async fn without_the_mirror(&self, mirror: &str, why: String) -> Current {
        let unread = match &self.settings.mirror {
            Some(_) => format!("the TUF mirror {mirror} could not be read ({why})"),
            None => "no TUF mirror is set (--sigstore-tuf-mirror)".to_string(),
        };
        let kept = match &self.settings.cache {
            Some(dir) => tuf::kept(&self.trust(), dir).await,
            None => Err(Failure::Unreachable("no store".into())),
        };
        match kept {
            Ok(verified) => {
                tracing::warn!(%mirror, error = %why, "the Sigstore TUF mirror could not be read; the root it served before, verified again, stays in use until its metadata expires");
                Current {
                    bytes: Some(verified.bytes.into()),
                    source: Source::Cached,
                    stale: Some(format!(
                        "{unread}; the root it served before, verified again from the TUF \
                         metadata kept in the store, is in use until {}",
                        httpdate::fmt_http_date(verified.expires)
                    )),
                    expires: Some(verified.expires),
                }
            }
            Err(Failure::Unreachable(_) | Failure::Refused(_))
                if self.settings.anchor.is_none() =>
            {
                tracing::warn!(%mirror, error = %why, "the Sigstore TUF mirror could not be read; the root embedded in the binary is in use");
                embedded(format!(
                    "{unread}; the root embedded in the binary is in use"
                ))
            }
            Err(Failure::Unreachable(kept) | Failure::Refused(kept)) => {
                tracing::error!(%mirror, error = %why, "the Sigstore TUF mirror could not be read and no root it served is verified: keyless elections wait");
                Current::nothing(format!(
                    "{unread}, and no root verified under the --sigstore-tuf-root anchor is kept \
                     ({kept})"
                ))
            }
        }
    }

    fn trust(&self) -> Trust<'_> {
        let datastore = self.settings.cache.as_ref().map(|dir| dir.join("tuf"));
        Trust {
            anchor: self.settings.anchor.as_deref().unwrap_or(EMBEDDED_ANCHOR),
            datastore,
        }
    }

    fn mirror_name(&self) -> String {
        self.settings
            .mirror
            .as_ref()
            .map_or_else(String::new, Url::to_string)
    }
}

/// The root embedded in the binary, saying why it is in use.
fn embedded(stale: String) -> Current {
    Current {
        bytes: Some(EMBEDDED_ROOT.into()),
        source: Source::Embedded,
        stale: Some(stale),
        expires: None,
    }
}

#[cfg(test)]
mod tests;
