//! What the filesystem store keeps beside a repository's tags (docs/store.md): `digests.txt`
//! and `images.jsonl` (advisory: no fsync, bounded, unreadable means unknown) and `seen.txt`
//! (first sightings: fsynced, unreadable means "seen now"); and the stored list streamed past
//! a new one, so a changed scan holds one list in memory, not two.

use super::digests::MAX_FILE_BYTES;
use super::files::{read_bounded, write_file};
use super::first_seen::{FirstSeen, MAX_SEEN_BYTES};
use super::image_facts::{ImageFactsFile, MAX_IMAGE_FILE_BYTES};
use super::{front_coded, DigestFacts, RepoKey, StoreError, TagList};
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// When each tag was first seen (first_seen.rs).
pub(super) const SEEN: &str = "seen.txt";

/// Rewrites `dir/name` with what `render` makes of the directory, under `writer`, the one
/// writer lock of the files beside the tags (none while a repository's directory is
/// removed); nothing when the repository has no tags. `durable`: fsync it.
pub(super) fn record_beside(
    dir: &Path,
    writer: &Mutex<()>,
    (name, durable): (&str, bool),
    render: impl FnOnce(&Path) -> String,
) -> Result<(), StoreError> {
    let _one_writer = writer.lock().expect("store lock");
    if !dir.is_dir() {
        return Ok(());
    }
    let text = render(dir);
    write_file(dir, name, text.as_bytes(), durable)
}

/// Changes the first sightings in `dir` under `writer`; written (fsynced) when changed.
pub(super) fn change_seen(
    dir: &Path,
    writer: &Mutex<()>,
    change: &mut dyn FnMut(&mut FirstSeen) -> bool,
) -> Result<(), StoreError> {
    let _one_writer = writer.lock().expect("store lock");
    if !dir.is_dir() {
        return Ok(());
    }
    let mut seen = read_seen(&dir.join(SEEN))?;
    if change(&mut seen) {
        // Not advisory: a lost file makes new tags count as seen long ago.
        write_file(dir, SEEN, seen.render().as_bytes(), true)?;
    }
    Ok(())
}

/// The tags of `tags` the stored list at `stored` (the newest variant) does not hold, read as
/// a stream; `None` when nothing (readable) is stored.
pub(super) fn stream_arrivals(
    key: &RepoKey,
    stored: Option<PathBuf>,
    tags: &TagList,
) -> Result<Option<Vec<String>>, StoreError> {
    let Some(path) = stored else {
        return Ok(None);
    };
    let file = match fs::File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io("reading", &path)(e)),
    };
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let (mut new, mut arrived, mut stored) = (tags.iter().peekable(), Vec::new(), false);
    // Both in descending byte order: one walk of each.
    let walked = front_coded::for_each_stored(name, file, |old| {
        stored = true;
        while let Some(tag) = new.next_if(|t| t.as_bytes() > old.as_bytes()) {
            arrived.push(tag.to_string());
        }
        while new.next_if(|t| *t == old).is_some() {}
        true
    });
    if let Err(err) = walked {
        // As `get` takes it: no list (it is removed at the next read), a first scan.
        tracing::warn!(%key, path = %path.display(), %err, "unreadable tag file");
        return Ok(None);
    }
    arrived.extend(new.map(String::from));
    Ok(stored.then_some(arrived))
}

/// The first sightings at `path`: none recorded when missing; an error when over its bound or
/// unreadable (the walk then counts every tag as seen now).
pub(super) fn read_seen(path: &Path) -> Result<FirstSeen, StoreError> {
    match fs::metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(FirstSeen::default()),
        Err(e) => return Err(StoreError::io("reading", path)(e)),
        Ok(_) => {}
    }
    let text = read_bounded(path, MAX_SEEN_BYTES).ok_or_else(|| {
        StoreError::Corrupt(format!(
            "{} is over its bound or unreadable",
            path.display()
        ))
    })?;
    Ok(FirstSeen::parse(&text))
}

/// The image facts at `path`: none when missing, too large or unreadable.
pub(super) fn read_images(path: &Path) -> ImageFactsFile {
    read_bounded(path, MAX_IMAGE_FILE_BYTES)
        .map(|text| ImageFactsFile::parse(&text))
        .unwrap_or_default()
}

/// The digest facts at `path`: none when missing, too large or unreadable.
pub(super) fn read_digests(path: &Path) -> DigestFacts {
    read_bounded(path, MAX_FILE_BYTES)
        .map(|text| DigestFacts::parse(&text))
        .unwrap_or_default()
}
