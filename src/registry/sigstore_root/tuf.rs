//! Reading the trusted root through TUF, with tough: from the mirror, recording the files it
//! served, or again from the copy of those files kept in the store (at start, or while the
//! mirror cannot be reached). Either way tough verifies the whole chain from the trust anchor,
//! expiry included, and the root is good only until the earliest expiry of the metadata that
//! vouched for it.
//!
//! A read that fails says whether the mirror could not be reached ([`Failure::Unreachable`]:
//! the kept copy may stand in, until it expires) or answered with what TUF refuses
//! ([`Failure::Refused`]: expired, rolled back, frozen, badly signed, a hash that does not
//! match, an unusable target): then nothing that mirror served is trusted.

use super::transport;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use url::Url;

/// A trusted root is at most this large (`verify::keyless::MAX_ROOT_BYTES`).
pub const MAX_ROOT_BYTES: usize = crate::verify::keyless::MAX_ROOT_BYTES;
/// The TUF target that holds the trusted root.
pub const TARGET: &str = "trusted_root.json";

/// tough's own bounds on what it reads, said here so that a new tough cannot move them: a
/// root or timestamp 1 MiB and 1,024 root rotations (its defaults), targets 4 MiB (its default
/// is 10 MiB; the transport reads no file over 4 MiB anyway).
pub const LIMITS: tough::Limits = tough::Limits {
    max_root_size: 1 << 20,
    max_targets_size: 4 << 20,
    max_timestamp_size: 1 << 20,
    max_root_updates: 1024,
};

/// The kept copy of the mirror's files, under the store's `sigstore/` directory.
pub const MIRROR_COPY: &str = "tuf-mirror";

/// A trusted root TUF vouched for.
#[derive(Debug)]
pub struct Verified {
    pub bytes: Vec<u8>,
    /// The earliest expiry of the root, timestamp, snapshot and targets metadata.
    pub expires: SystemTime,
    /// The files the mirror served for it, by their path under the mirror (empty when read
    /// from the kept copy).
    pub files: Vec<(String, Vec<u8>)>,
}

/// Why no root was had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The mirror (or the kept copy) could not be read.
    Unreachable(String),
    /// What was read is refused by TUF, or is no usable trusted root.
    Refused(String),
}

/// What tough starts from: the anchor, and where it keeps what it trusts.
pub struct Trust<'a> {
    pub anchor: &'a [u8],
    /// Where tough keeps what it trusts (the versions seen: rollbacks are refused).
    pub datastore: Option<PathBuf>,
}

/// Reads the mirror at `mirror`.
pub async fn online(trust: &Trust<'_>, mirror: &Url) -> Result<Verified, Failure> {
    let http = transport::Http::new().map_err(Failure::Unreachable)?;
    let (recorded, watched) = (http.recorded(), http.clone());
    let base = |path: &str| {
        let mut url = mirror.clone();
        url.set_path(&format!("{}/{path}", mirror.path().trim_end_matches('/')));
        url
    };
    let loaded = load(trust, base(""), base("targets/"), http).await;
    // Out of reach only when our transport could not fetch a file, and then for that reason
    // (not what tough concluded without the file): what tough refuses of what it did fetch
    // (a size over what targets.json says is a "transport" error to tough) is a refusal.
    let mut verified = loaded.map_err(|why| match watched.failure() {
        Some(failure) => Failure::Unreachable(failure),
        None => Failure::Refused(why),
    })?;
    let prefix = format!("{}/", mirror.path().trim_end_matches('/'));
    let taken = std::mem::take(&mut *recorded.lock().expect("recorded lock"));
    verified.files = taken
        .into_iter()
        .filter_map(|(url, bytes)| Some((url.path().strip_prefix(&prefix)?.to_string(), bytes)))
        .collect();
    Ok(verified)
}

/// Reads the copy of the mirror's files kept in `dir` (a store's `sigstore/`).
pub async fn kept(trust: &Trust<'_>, dir: &Path) -> Result<Verified, Failure> {
    let copy = dir.join(MIRROR_COPY);
    if !copy.join("timestamp.json").is_file() {
        return Err(Failure::Unreachable("no copy is kept in the store".into()));
    }
    let url = |path: &Path| {
        Url::from_directory_path(path)
            .map_err(|()| Failure::Unreachable(format!("{}: not a path", path.display())))
    };
    let (metadata, targets) = (url(&copy)?, url(&copy.join("targets"))?);
    // The copy kept is no mirror: whatever keeps it from being verified, it is not used.
    load(trust, metadata, targets, tough::FilesystemTransport)
        .await
        .map_err(Failure::Refused)
}

/// The trusted root through TUF, or why not (whether that is the mirror's fault is told by
/// the transport: [`online`]).
async fn load(
    trust: &Trust<'_>,
    metadata: Url,
    targets: Url,
    transport: impl tough::Transport + 'static,
) -> Result<Verified, String> {
    let mut loader = tough::RepositoryLoader::new(&trust.anchor, metadata, targets)
        .transport(transport)
        .limits(LIMITS);
    if let Some(datastore) = &trust.datastore {
        std::fs::create_dir_all(datastore).map_err(|e| format!("{}: {e}", datastore.display()))?;
        loader = loader.datastore(datastore);
    }
    let repository = loader.load().await.map_err(|e| describe(&e))?;
    let name = tough::TargetName::new(TARGET).map_err(|e| e.to_string())?;
    let stream = repository
        .read_target(&name)
        .await
        .map_err(|e| describe(&e))?;
    let stream = stream.ok_or_else(|| format!("its targets list no {TARGET}"))?;
    let bytes = tough::IntoVec::into_vec(stream)
        .await
        .map_err(|e| describe(&e))?;
    // Within MAX_ROOT_BYTES, as the parse bounds it before reading anything.
    crate::verify::keyless::TrustedRoot::parse(&bytes)
        .map_err(|e| format!("its {TARGET} is not a usable trusted root: {e}"))?;
    let expires = [
        repository.root().signed.expires,
        repository.timestamp().signed.expires,
        repository.snapshot().signed.expires,
        repository.targets().signed.expires,
    ]
    .into_iter()
    .min()
    .expect("four roles")
    .into();
    Ok(Verified {
        bytes,
        expires,
        files: Vec::new(),
    })
}

/// An error with its causes, as tough nests them.
pub fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
