//! Store errors. Corruption is not among the errors `get` returns: a corrupt entry is removed
//! and reported as "no tags", so the repository is rescanned instead of failing forever.

use std::path::PathBuf;
use thiserror::Error;

/// What can go wrong in the tag store.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The ImageRepository key would not make a safe, valid path.
    #[error("invalid repository key {namespace:?}/{name:?}: {reason}")]
    InvalidKey {
        namespace: String,
        name: String,
        reason: &'static str,
    },
    /// A tag that cannot be stored as one line.
    #[error("invalid tag {0:?}: tags must be 1 to 1024 bytes without line breaks")]
    InvalidTag(String),
    /// Stored content that does not read back (handled inside `get`).
    #[error("corrupt tag file: {0}")]
    Corrupt(String),
    /// The filesystem refused an operation.
    #[error(
        "tag store I/O on {path}: {source}; check that the storage path is writable and not full"
    )]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl StoreError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = path.into();
        move |source| StoreError::Io { path, source }
    }
}
