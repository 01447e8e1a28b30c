//! Store errors. Corruption is not among the errors `get` returns: a corrupt entry is removed
//! and reported as "no tags", so the repository is rescanned instead of failing forever.

use std::io::ErrorKind;
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
    /// The filesystem refused an operation: what was done, where, the system's answer and,
    /// from that answer's kind, what to change.
    #[error("{op} {path}: {source}{}", hint(source))]
    Io {
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

impl StoreError {
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = path.into();
        move |source| StoreError::Io { op, path, source }
    }
}

/// The fix for the causes an operator can act on, named from the error itself (never a guess:
/// other errors carry only the system's text).
fn hint(err: &std::io::Error) -> String {
    match err.kind() {
        ErrorKind::PermissionDenied => format!(
            "; the controller runs as {}: the storage path must be writable by it (in a Pod, an \
             emptyDir or a volume made writable with fsGroup)",
            whoami()
        ),
        ErrorKind::ReadOnlyFilesystem => {
            "; the filesystem is read-only: mount a writable volume at --storage-path".into()
        }
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded => {
            "; the filesystem is full or over quota: free space or enlarge the volume".into()
        }
        ErrorKind::NotADirectory => {
            "; the storage path and every directory above it must be directories, not files".into()
        }
        _ => String::new(),
    }
}

/// The process's effective user and group: `/proc/self` belongs to them.
fn whoami() -> String {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata("/proc/self") {
        Ok(m) => format!("uid {}, gid {}", m.uid(), m.gid()),
        Err(_) => "its own user".into(),
    }
}
