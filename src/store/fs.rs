//! The filesystem store, in Flux's "FluxStorage" layout (docs/store.md):
//! `<root>/imagerepository/<namespace>/<name>/tags.fc.gz` (front_coded.rs) from the compression
//! threshold on, and below it whenever that is smaller, else `tags.txt` (Flux's
//! `tags.txt.gz` is read too), plus the `<root>/.storage-version` marker (`2\n`).
//!
//! Crash safety: a write goes to a temporary file that is fsynced, renamed over the old file,
//! and the directory fsynced, so a reader only ever sees a complete old or new list. Corruption
//! is never fatal: a file that does not read back is logged, removed and reported as no tags,
//! and the repository is rescanned.

use super::files::{
    create_private_dir, is_volume_entry, prepare_root, sync_dir, write_atomic, TEMP_PREFIX,
};
use super::first_seen::FirstSeen;
use super::front_coded;
use super::fs_beside::{
    change_seen, read_digests, read_images, read_seen, record_beside, stream_arrivals, SEEN,
};
use super::image_facts::{ImageFacts, ImageFactsFile};
use super::{DigestFact, DigestFacts, RepoKey, Revision, StoreError, TagList, TagStore};
use std::collections::HashSet;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Flux's default `--storage-compression-threshold` (64 KiB).
pub const DEFAULT_COMPRESSION_THRESHOLD: usize = 64 * 1024;

const OBJECTS: &str = "imagerepository";
const PLAIN: &str = "tags.txt";
/// Flux's gzipped list, and ours before the compact file: read, never written.
const GZIP: &str = "tags.txt.gz";
const COMPACT: &str = "tags.fc.gz";
/// Every variant of a repository's tags; a write leaves exactly one.
const VARIANTS: [&str; 3] = [PLAIN, GZIP, COMPACT];
const DIGESTS: &str = "digests.txt";

/// What gated elections learnt per image digest (image_facts.rs).
const IMAGES: &str = "images.jsonl";
const VERSION_FILE: &str = ".storage-version";
const VERSION: &str = "2\n";
const WIPE_MARKER: &str = ".storage-wipe-in-progress";

/// Tags on the local filesystem, one directory per ImageRepository.
#[derive(Debug)]
pub struct FsStore {
    root: PathBuf,
    compression_threshold: usize,
    /// The revision each key's file holds, as last written or read (its digest's bytes): a
    /// scan whose tags did not change then costs no write (no compression, no fsync).
    known: std::sync::Mutex<std::collections::HashMap<RepoKey, [u8; 32]>>,
    /// Serialises the read-modify-write of `digests.txt` files.
    digests: std::sync::Mutex<()>,
}

impl FsStore {
    /// Keeps `revision` as what `key`'s file holds.
    fn remember(&self, key: &RepoKey, revision: &Revision) {
        if let Some(digest) = revision.digest() {
            let mut known = self.known.lock().expect("store lock");
            known.insert(key.clone(), digest);
        }
    }

    /// Opens the store at `root`, creating it (mode 0700) when it does not exist. An existing
    /// directory is used as it is: its mode and owner are the volume's (an emptyDir is
    /// root-owned 0777, or 2777 with fsGroup), and the store's privacy comes from the modes of
    /// what it creates inside. Lists of at least `compression_threshold` bytes are compressed,
    /// smaller ones when that takes fewer bytes ([`FsStore::compacted`]). A directory written
    /// in another format (such as Flux's Badger database) is wiped, as Flux does on a format
    /// switch; an interrupted wipe is completed.
    pub fn open(
        root: impl Into<PathBuf>,
        compression_threshold: usize,
    ) -> Result<Self, StoreError> {
        let root = root.into();
        if compression_threshold == 0 {
            return Err(StoreError::Io {
                op: "opening",
                path: root,
                source: std::io::Error::new(
                    ErrorKind::InvalidInput,
                    "the compression threshold must be above 0",
                ),
            });
        }
        prepare_root(&root)?;
        let store = FsStore {
            root,
            compression_threshold,
            known: Default::default(),
            digests: Default::default(),
        };
        store.reconcile_format()?;
        store.sweep_temporary_files()?;
        Ok(store)
    }

    /// The store's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn object_dir(&self, key: &RepoKey) -> PathBuf {
        self.root
            .join(OBJECTS)
            .join(key.namespace())
            .join(key.name())
    }

    /// An object's directory, created on first write. When the tree under the root is gone
    /// (someone emptied the volume while the controller ran) the format marker is written
    /// again with it, so a restart does not take the store for another format and wipe it.
    fn create_object_dir(&self, dir: &Path) -> Result<(), StoreError> {
        if dir.is_dir() {
            return Ok(());
        }
        let marker_missing = !self.root.join(VERSION_FILE).exists();
        create_private_dir(dir)?;
        if marker_missing {
            write_atomic(&self.root, VERSION_FILE, VERSION.as_bytes())?;
        }
        Ok(())
    }

    fn reconcile_format(&self) -> Result<(), StoreError> {
        let marker = self.root.join(WIPE_MARKER);
        if marker.exists() {
            return self.wipe();
        }
        let version_path = self.root.join(VERSION_FILE);
        match fs::read_to_string(&version_path) {
            Ok(v) if v == VERSION => Ok(()),
            Ok(_) => self.wipe(),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let foreign = fs::read_dir(&self.root)
                    .map_err(StoreError::io("listing", &self.root))?
                    .filter_map(Result::ok)
                    .any(|e| e.file_name() != OBJECTS && !is_volume_entry(&e.file_name()));
                if foreign {
                    self.wipe()
                } else {
                    write_atomic(&self.root, VERSION_FILE, VERSION.as_bytes())
                }
            }
            Err(e) => Err(StoreError::io("reading", version_path)(e)),
        }
    }

    /// Flux's format switch: mark, write the version, delete everything else, unmark.
    fn wipe(&self) -> Result<(), StoreError> {
        tracing::warn!(path = %self.root.display(), "tag store holds another format; wiping it, repositories will be rescanned");
        write_atomic(&self.root, WIPE_MARKER, b"")?;
        write_atomic(&self.root, VERSION_FILE, VERSION.as_bytes())?;
        for entry in fs::read_dir(&self.root).map_err(StoreError::io("listing", &self.root))? {
            let entry = entry.map_err(StoreError::io("listing", &self.root))?;
            let name = entry.file_name();
            if name == WIPE_MARKER || name == VERSION_FILE || is_volume_entry(&name) {
                continue;
            }
            let path = entry.path();
            let removed = if entry.file_type().is_ok_and(|t| t.is_dir()) {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path)
            };
            removed.map_err(StoreError::io("removing", &path))?;
        }
        let marker = self.root.join(WIPE_MARKER);
        fs::remove_file(&marker).map_err(StoreError::io("removing", &marker))?;
        sync_dir(&self.root)
    }

    /// Temporary files are only left behind by a crash mid-write; they are never read.
    fn sweep_temporary_files(&self) -> Result<(), StoreError> {
        for key in self.keys()? {
            let dir = self.object_dir(&key);
            for entry in fs::read_dir(&dir)
                .map_err(StoreError::io("listing", &dir))?
                .filter_map(Result::ok)
            {
                if entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
        Ok(())
    }

    /// The compact file of `tags` (plain text `content`), when it is the one written: from the
    /// compression threshold on, as Flux compresses; below it, when it is the smaller, which a
    /// list of more than a few tags is (100 tags `1.0.x` take 109 bytes for 690). A list of one
    /// or two short tags stays plain: gzip's header and the format's first line outweigh it.
    fn compacted(&self, tags: &TagList, content: &[u8]) -> std::io::Result<Option<Vec<u8>>> {
        if content.is_empty() {
            return Ok(None);
        }
        let bytes = front_coded::compress(tags)?;
        let kept = content.len() >= self.compression_threshold || bytes.len() < content.len();
        Ok(kept.then_some(bytes))
    }

    /// Reads one variant; `Ok(None)` when it vanished meanwhile.
    fn read_variant(&self, path: &Path) -> Result<Option<Result<TagList, StoreError>>, StoreError> {
        let bytes = match fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io("reading", path)(e)),
        };
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        Ok(Some(front_coded::decode_file(name, bytes)))
    }
}

impl TagStore for FsStore {
    fn set(&self, key: &RepoKey, tags: &TagList) -> Result<Revision, StoreError> {
        let dir = self.object_dir(key);
        let revision = tags.revision();
        let unchanged = self.holds(key, &revision);
        if unchanged && [PLAIN, COMPACT].iter().any(|v| dir.join(v).is_file()) {
            tracing::debug!(%key, "tags unchanged; not rewritten");
            return Ok(revision);
        }
        self.create_object_dir(&dir)?;
        let content = tags.as_text().as_bytes();
        let compact = self
            .compacted(tags, content)
            .map_err(StoreError::io("compressing into", &dir))?;
        let name = match compact {
            Some(bytes) => {
                write_atomic(&dir, COMPACT, &bytes)?;
                COMPACT
            }
            None => {
                write_atomic(&dir, PLAIN, content)?;
                PLAIN
            }
        };
        let mut removed = false;
        for stale in VARIANTS.iter().filter(|v| **v != name) {
            match fs::remove_file(dir.join(stale)) {
                Ok(()) => removed = true,
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::io("removing", dir.join(stale))(e)),
            }
        }
        if removed {
            sync_dir(&dir)?;
        }
        tracing::debug!(%key, file = name, tags = tags.len(), "stored tags");
        self.remember(key, &revision);
        Ok(revision)
    }

    fn get(&self, key: &RepoKey) -> Result<(TagList, Revision), StoreError> {
        let mut order = newest_first(&self.object_dir(key));
        if order.is_empty() {
            return Ok(empty());
        }
        while !order.is_empty() {
            let path = order.remove(0);
            match self.read_variant(&path)? {
                None => continue, // vanished: fall back to the other variant
                Some(Ok(tags)) => {
                    for stale in &order {
                        let _ = fs::remove_file(stale);
                    }
                    let revision = tags.revision();
                    self.remember(key, &revision);
                    return Ok((tags, revision));
                }
                Some(Err(err)) => {
                    tracing::warn!(%key, path = %path.display(), %err, "removing unreadable tag file; the repository will be rescanned");
                    fs::remove_file(&path).map_err(StoreError::io("removing", &path))?;
                }
            }
        }
        Ok(empty())
    }

    /// The stored list streamed past the new one, so a changed scan holds one list, not two.
    fn arrivals(&self, key: &RepoKey, tags: &TagList) -> Result<Option<Vec<String>>, StoreError> {
        let stored = newest_first(&self.object_dir(key)).into_iter().next();
        stream_arrivals(key, stored, tags)
    }

    fn delete(&self, key: &RepoKey) -> Result<(), StoreError> {
        self.known.lock().expect("store lock").remove(key);
        let dir = self.object_dir(key);
        // Not while a digest is being recorded: its file appearing under `remove_dir_all` fails
        // the removal ("Directory not empty"), and once the directory is gone none is recorded.
        let _no_digest_writer = self.digests.lock().expect("store lock");
        match fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(StoreError::io("removing", &dir)(e)),
        }
        // Remove the namespace directory when it became empty; a concurrent set may refill it.
        let _ = fs::remove_dir(self.root.join(OBJECTS).join(key.namespace()));
        Ok(())
    }

    fn digest_facts(&self, key: &RepoKey) -> Result<DigestFacts, StoreError> {
        Ok(read_digests(&self.object_dir(key).join(DIGESTS)))
    }

    fn record_digest(&self, key: &RepoKey, tag: &str, fact: DigestFact) -> Result<(), StoreError> {
        let dir = self.object_dir(key);
        record_beside(&dir, &self.digests, (DIGESTS, false), |dir| {
            let mut facts = read_digests(&dir.join(DIGESTS));
            facts.record(tag, fact);
            facts.render()
        })
    }

    fn all_image_facts(&self, key: &RepoKey) -> Result<ImageFactsFile, StoreError> {
        Ok(read_images(&self.object_dir(key).join(IMAGES)))
    }

    fn record_image_facts(&self, key: &RepoKey, facts: ImageFacts) -> Result<(), StoreError> {
        let dir = self.object_dir(key);
        record_beside(&dir, &self.digests, (IMAGES, false), |dir| {
            let mut file = read_images(&dir.join(IMAGES));
            file.record(facts);
            file.render()
        })
    }

    fn first_seen(&self, key: &RepoKey) -> Result<FirstSeen, StoreError> {
        read_seen(&self.object_dir(key).join(SEEN))
    }

    fn update_first_seen(
        &self,
        key: &RepoKey,
        change: &mut dyn FnMut(&mut FirstSeen) -> bool,
    ) -> Result<(), StoreError> {
        change_seen(&self.object_dir(key), &self.digests, change)
    }

    fn holds(&self, key: &RepoKey, revision: &Revision) -> bool {
        let known = self.known.lock().expect("store lock");
        revision
            .digest()
            .is_some_and(|digest| known.get(key) == Some(&digest))
    }

    fn keys(&self) -> Result<Vec<RepoKey>, StoreError> {
        let objects = self.root.join(OBJECTS);
        let mut keys = Vec::new();
        let namespaces = match fs::read_dir(&objects) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(keys),
            Err(e) => return Err(StoreError::io("listing", &objects)(e)),
        };
        for ns in namespaces.filter_map(Result::ok) {
            let Ok(names) = fs::read_dir(ns.path()) else {
                continue;
            };
            for name in names.filter_map(Result::ok) {
                let (n, o) = (ns.file_name(), name.file_name());
                match RepoKey::new(n.to_string_lossy(), o.to_string_lossy()) {
                    Ok(key) => keys.push(key),
                    Err(_) => {
                        tracing::warn!(path = %name.path().display(), "ignoring a directory that is not a repository key")
                    }
                }
            }
        }
        keys.sort();
        Ok(keys)
    }

    fn retain(&self, live: &HashSet<RepoKey>) -> Result<Vec<RepoKey>, StoreError> {
        let removed = super::delete_all_but(self, live)?;
        // Namespace directories left empty by earlier deletions.
        if let Ok(namespaces) = fs::read_dir(self.root.join(OBJECTS)) {
            for ns in namespaces.filter_map(Result::ok) {
                let _ = fs::remove_dir(ns.path());
            }
        }
        Ok(removed)
    }
}

/// The variants of a repository's tags, newest first: more than one exists only after a crash
/// between rename and cleanup (or a list Flux wrote and one of ours), and the newest wins.
fn newest_first(dir: &Path) -> Vec<PathBuf> {
    let modified = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    let mut order: Vec<(std::time::SystemTime, PathBuf)> = VARIANTS
        .iter()
        .map(|v| dir.join(v))
        .filter_map(|p| Some((modified(&p)?, p)))
        .collect();
    order.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    order.into_iter().map(|(_, p)| p).collect()
}

fn empty() -> (TagList, Revision) {
    let tags = TagList::default();
    let revision = tags.revision();
    (tags, revision)
}
