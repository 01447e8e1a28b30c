//! Sigstore's public-good trusted root, for keyless policies with no `trusted_root.json` of
//! their own (docs/imagepolicy.md, "Keyless with no Secret"). Three sources, best first:
//!
//! 1. the mirror: Sigstore's TUF repository (`--sigstore-tuf-mirror`, by default
//!    `https://tuf-repo-cdn.sigstore.dev`), read by tough from a trust anchor (the TUF root
//!    embedded in the binary, or `--sigstore-tuf-root`): root rotations, expiry, rollback,
//!    lengths and hashes are checked there; its target `trusted_root.json` is the root;
//! 2. the copy the last good read kept in the store (`<storage>/sigstore/trusted_root.json`);
//! 3. the root embedded in the binary (Sigstore's, as `sigstore/sigstore` v1.10.8 ships it).
//!
//! Each read of the mirror that fails leaves the current root in place and says why
//! ([`Current::stale`]), which the policies that use it report; it is read again every
//! [`REFRESH_EVERY`], and at start.

mod transport;

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use url::Url;

/// Sigstore's public-good TUF repository.
pub const DEFAULT_MIRROR: &str = "https://tuf-repo-cdn.sigstore.dev";
/// How often the mirror is read again; after a failed read, sooner.
pub const REFRESH_EVERY: Duration = Duration::from_secs(24 * 3600);
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(10 * 60);
/// A whole read of the mirror (several files, each within the transport's 30 s).
pub const READ_DEADLINE: Duration = Duration::from_secs(60);
/// A trusted root is at most this large (`verify::keyless::MAX_ROOT_BYTES`).
pub const MAX_ROOT_BYTES: usize = crate::verify::keyless::MAX_ROOT_BYTES;
/// The TUF target that holds the trusted root.
pub const TARGET: &str = "trusted_root.json";

/// The public-good TUF root (its metadata, the trust anchor) and trusted root as shipped.
const EMBEDDED_ANCHOR: &[u8] = include_bytes!("public-good/root.json");
const EMBEDDED_ROOT: &[u8] = include_bytes!("public-good/trusted_root.json");

/// Where the root in use came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Mirror,
    Cached,
    Embedded,
}

/// The root in use.
#[derive(Debug)]
pub struct Current {
    pub bytes: Arc<[u8]>,
    pub source: Source,
    /// Why the mirror's root is not in use (`None`: it is).
    pub stale: Option<String>,
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
}

impl PublicGoodRoot {
    /// The cached root if it parses as one, else the embedded one; the mirror is not read yet.
    pub fn new(settings: Settings) -> PublicGoodRoot {
        let cached = settings
            .cache
            .as_ref()
            .and_then(|dir| std::fs::read(dir.join(TARGET)).ok())
            .filter(|bytes| crate::verify::keyless::TrustedRoot::parse(bytes).is_ok());
        let stale = match &settings.mirror {
            Some(mirror) => format!("the TUF mirror {mirror} has not been read yet"),
            None => "no TUF mirror is set (--sigstore-tuf-mirror)".to_string(),
        };
        let current = match cached {
            Some(bytes) => Current {
                bytes: bytes.into(),
                source: Source::Cached,
                stale: Some(stale),
            },
            None => Current {
                bytes: EMBEDDED_ROOT.into(),
                source: Source::Embedded,
                stale: Some(stale),
            },
        };
        PublicGoodRoot {
            settings,
            current: RwLock::new(Arc::new(current)),
            attempted: tokio::sync::Mutex::new(None),
        }
    }

    /// The root to judge with now. The mirror is read only once a policy needs the root: the
    /// first time, that policy waits for the read (at most [`READ_DEADLINE`]); later, when a
    /// read is due ([`REFRESH_EVERY`], or [`RETRY_AFTER_FAILURE`] after a failed one), it runs
    /// in the background and the current root is used meanwhile.
    pub async fn fresh(self: &Arc<Self>) -> Arc<Current> {
        if self.settings.mirror.is_none() {
            return self.current();
        }
        let mut attempted = self.attempted.lock().await;
        match *attempted {
            None => {
                *attempted = Some(std::time::Instant::now());
                return self.refresh().await;
            }
            Some(at) => {
                // Sooner while the last read failed, whatever root is in use.
                let wait = match self.current().stale {
                    None => REFRESH_EVERY,
                    Some(_) => RETRY_AFTER_FAILURE,
                };
                if at.elapsed() >= wait {
                    *attempted = Some(std::time::Instant::now());
                    let this = self.clone();
                    tokio::spawn(async move { this.refresh().await });
                }
            }
        }
        drop(attempted);
        self.current()
    }

    /// The root in use.
    pub fn current(&self) -> Arc<Current> {
        self.current.read().expect("root lock").clone()
    }

    /// Reads the mirror; on success its root is in use (and kept in the store), else the
    /// current one stays, saying why.
    pub async fn refresh(&self) -> Arc<Current> {
        let Some(mirror) = self.settings.mirror.clone() else {
            return self.current();
        };
        let read = match tokio::time::timeout(READ_DEADLINE, self.read(&mirror)).await {
            Ok(read) => read,
            Err(_) => Err(format!("no answer within {} s", READ_DEADLINE.as_secs())),
        };
        let mut current = self.current.write().expect("root lock");
        *current = Arc::new(match read {
            Ok(bytes) => {
                if let Some(dir) = &self.settings.cache {
                    if let Err(e) = keep(dir, &bytes) {
                        tracing::warn!(error = %e, "the public-good trusted root could not be kept in the store");
                    }
                }
                Current {
                    bytes: bytes.into(),
                    source: Source::Mirror,
                    stale: None,
                }
            }
            Err(why) => {
                let kept = match current.source {
                    Source::Mirror => "the root it served before",
                    Source::Cached => "the root kept in the store",
                    Source::Embedded => "the root embedded in the binary",
                };
                tracing::warn!(%mirror, error = %why, "the Sigstore TUF mirror could not be read; {kept} stays in use");
                Current {
                    bytes: current.bytes.clone(),
                    source: current.source,
                    stale: Some(format!(
                        "the TUF mirror {mirror} could not be read ({why}); {kept} is in use"
                    )),
                }
            }
        });
        current.clone()
    }

    /// The trusted root the mirror serves, verified through TUF.
    async fn read(&self, mirror: &Url) -> Result<Vec<u8>, String> {
        let anchor = self.settings.anchor.as_deref().unwrap_or(EMBEDDED_ANCHOR);
        let base = |path: &str| {
            let mut url = mirror.clone();
            url.set_path(&format!("{}/{path}", mirror.path().trim_end_matches('/')));
            url
        };
        let mut loader = tough::RepositoryLoader::new(&anchor, base(""), base("targets/"))
            .transport(transport::Http::new()?)
            .limits(tough::Limits {
                max_root_size: 1 << 20,
                max_targets_size: 4 << 20,
                max_timestamp_size: 1 << 20,
                max_root_updates: 1024,
            });
        if let Some(dir) = &self.settings.cache {
            // tough keeps the metadata it trusts there (a rotated root, the versions seen).
            let datastore = dir.join("tuf");
            std::fs::create_dir_all(&datastore)
                .map_err(|e| format!("{}: {e}", datastore.display()))?;
            loader = loader.datastore(datastore);
        }
        let repository = loader.load().await.map_err(|e| describe(&e))?;
        let name = tough::TargetName::new(TARGET).map_err(|e| e.to_string())?;
        let stream = repository
            .read_target(&name)
            .await
            .map_err(|e| describe(&e))?
            .ok_or_else(|| format!("its targets list no {TARGET}"))?;
        let bytes = tough::IntoVec::into_vec(stream)
            .await
            .map_err(|e| describe(&e))?;
        if bytes.len() > MAX_ROOT_BYTES {
            return Err(format!("its {TARGET} is over {MAX_ROOT_BYTES} bytes"));
        }
        crate::verify::keyless::TrustedRoot::parse(&bytes)
            .map_err(|e| format!("its {TARGET} is not a usable trusted root: {e}"))?;
        Ok(bytes)
    }
}

/// An error with its causes, as tough nests them.
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Writes the root into `dir` whole or not at all.
fn keep(dir: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let partial = dir.join(format!("{TARGET}.partial"));
    std::fs::write(&partial, bytes)?;
    std::fs::rename(partial, dir.join(TARGET))
}

#[cfg(test)]
mod tests;
