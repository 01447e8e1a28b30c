//! Crash-safe file writes: a temporary file, fsynced, renamed over the old one, and the
//! directory fsynced, so a reader only ever sees a complete old or new file; bounded reads; the
//! store's root and private directories.

use super::StoreError;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Names of temporary files, swept at start-up.
pub(super) const TEMP_PREFIX: &str = ".tmp-";

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Creates `path` and any missing parent with mode 0700 (less the umask): only the
/// directories the store makes, never one it was given.
pub(super) fn create_private_dir(path: &Path) -> Result<(), StoreError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(StoreError::io("creating directory", path))
}

/// Writes `dir/name` so that a crash at any point leaves either the old or the new content.
pub(super) fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
    write_file(dir, name, bytes, true)
}

/// Writes `dir/name` through a temporary file and a rename; `durable` adds the fsyncs that
/// make the new content survive a crash.
pub(super) fn write_file(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    durable: bool,
) -> Result<(), StoreError> {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = dir.join(format!("{TEMP_PREFIX}{name}-{}-{n}", std::process::id()));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(bytes)?;
        if durable {
            file.sync_all()?;
        }
        Ok(())
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(StoreError::io("writing", &temp)(e));
    }
    let target = dir.join(name);
    fs::rename(&temp, &target).map_err(|e| {
        let _ = fs::remove_file(&temp);
        StoreError::io("renaming a new file to", &target)(e)
    })?;
    if durable {
        sync_dir(dir)?;
    }
    Ok(())
}

pub(super) fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(StoreError::io("syncing directory", dir))
}

/// The text at `path` if it is at most `max` bytes and UTF-8; `None` when missing, larger or
/// unreadable (the store's advisory files are then not read at all).
pub(super) fn read_bounded(path: &Path, max: u64) -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    File::open(path)
        .and_then(|f| f.take(max + 1).read_to_string(&mut text))
        .ok()?;
    (text.len() as u64 <= max).then_some(text)
}

/// What a filesystem puts in its own root (ext4's `lost+found` on a fresh PVC): neither the
/// store's nor another format's, so never a reason to wipe, and never removed.
const VOLUME_ENTRIES: &[&str] = &["lost+found"];

/// The store's root as a Pod gets it: an existing directory is used as it is (never chmod-ed:
/// on a root-owned emptyDir that is refused, and the volume's mode is not ours to change); a
/// missing one is created private.
pub(super) fn prepare_root(root: &Path) -> Result<(), StoreError> {
    match fs::metadata(root) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(StoreError::io("opening", root)(
            ErrorKind::NotADirectory.into(),
        )),
        Err(e) if e.kind() == ErrorKind::NotFound => create_private_dir(root),
        Err(e) => Err(StoreError::io("opening", root)(e)),
    }
}

pub(super) fn is_volume_entry(name: &std::ffi::OsStr) -> bool {
    VOLUME_ENTRIES.iter().any(|v| name == *v)
}
