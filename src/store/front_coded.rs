//! The compact file of a large tag list (`tags.fc.gz`): each tag as the number of bytes it
//! shares with the tag before it (one byte, 0–255) and the rest of it, then gzip.
//!
//! The store keeps tags in descending byte order, so neighbours share most of their bytes
//! (`1.42.7`, `1.42.6`, `v2024.05.01-a1b2c3`, ...). Gzip alone finds those repeats only as
//! back-references it must spell out again for every tag; with the shared part dropped first,
//! the team's realistic 10k-tag list gzips 22% smaller and a regular one (a CI counter, the
//! benchmark's `1.x.y`) about 40 times smaller, for one pass over bytes already in memory.
//! Flux's reader knows only `tags.txt` and `tags.txt.gz`: a Flux pointed at this store finds no
//! tags and rescans (docs/store.md).

use super::{StoreError, TagList, MAX_TAG_LEN};
use flate2::{read::GzDecoder, write::GzEncoder, Compression};
use std::io::{BufWriter, Read, Write};

/// The first line, so the file says what it is and a later encoding can be told apart.
const MAGIC: &[u8] = b"image-reflector front-coded tags 1\n";

/// The most a stored tag list may hold once decoded (tags and newlines). Above what a scan
/// keeps (48 MiB of tags), so a list the controller wrote always reads back; a file that
/// decodes to more was not written by it and is corrupt. The same bound applies to a gzipped
/// list (`tags.txt.gz`), so no file in the store can make a read allocate without limit.
pub const MAX_STORED_TEXT: usize = 64 << 20;

/// What the coded lines are handed to gzip in: flate2 zeroes its 32 KiB output buffer before
/// every write it is given, so writing the list a tag at a time cost a 32 KiB `memset` per tag,
/// 6% of a whole cold start's CPU at 400 × 1,000 (docs/benchmarks-history.md, "Gzip a tag at a time").
const CODED_CHUNK: usize = 64 * 1024;

/// `tags`, front-coded and gzipped at level 1: on the 100k-tag list that is 25% smaller than
/// the lines gzipped at level 1 and takes less time (less to compress); level 6 would save
/// another 13% for six times the CPU.
pub fn compress(tags: &TagList) -> std::io::Result<Vec<u8>> {
    let text = tags.as_text().as_bytes();
    let gz = GzEncoder::new(Vec::with_capacity(text.len() / 8), Compression::fast());
    let mut coded = BufWriter::with_capacity(CODED_CHUNK, gz);
    coded.write_all(MAGIC)?;
    let mut previous: &[u8] = &[];
    for tag in tags.iter() {
        let tag = tag.as_bytes();
        let shared = shared_prefix(previous, tag);
        coded.write_all(&[shared as u8])?;
        coded.write_all(&tag[shared..])?;
        coded.write_all(b"\n")?;
        previous = tag;
    }
    coded.into_inner().map_err(|e| e.into_error())?.finish()
}

/// Reads what [`compress`] wrote; anything else is corrupt.
pub fn decompress(bytes: &[u8]) -> Result<TagList, StoreError> {
    let coded = gunzip(bytes, MAX_STORED_TEXT + MAX_STORED_TEXT / 2)?;
    let Some(body) = coded.strip_prefix(MAGIC) else {
        return Err(StoreError::Corrupt("not a front-coded tag list".into()));
    };
    let mut text: Vec<u8> = Vec::with_capacity(body.len() * 2);
    let mut previous = 0..0;
    let mut rest = body;
    while let Some((&shared, after)) = rest.split_first() {
        let shared = usize::from(shared);
        if shared > previous.len() {
            return Err(StoreError::Corrupt(format!(
                "a tag shares {shared} bytes with one of {}",
                previous.len()
            )));
        }
        let Some(end) = after.iter().position(|&b| b == b'\n') else {
            return Err(StoreError::Corrupt("the last line is incomplete".into()));
        };
        let start = text.len();
        if start + shared + end + 1 > MAX_STORED_TEXT {
            return Err(StoreError::Corrupt(format!(
                "decodes to more than {} MiB",
                MAX_STORED_TEXT >> 20
            )));
        }
        text.extend_from_within(previous.start..previous.start + shared);
        text.extend_from_slice(&after[..end]);
        previous = start..text.len();
        text.push(b'\n');
        rest = &after[end + 1..];
    }
    let text = String::from_utf8(text).map_err(|_| StoreError::Corrupt("not UTF-8".into()))?;
    // Order, lengths and characters are checked as for any stored list.
    TagList::from_stored(text)
}

/// A stored tags file's list, by its name: `tags.fc.gz` (ours), another `.gz` (Flux's
/// `tags.txt.gz`, or ours before the compact file), anything else plain lines.
pub fn decode_file(name: &str, bytes: Vec<u8>) -> Result<TagList, StoreError> {
    let utf8 =
        |bytes| String::from_utf8(bytes).map_err(|_| StoreError::Corrupt("not UTF-8".into()));
    if name.ends_with(".fc.gz") {
        decompress(&bytes)
    } else if name.ends_with(".gz") {
        TagList::from_stored(utf8(gunzip(&bytes, MAX_STORED_TEXT)?)?)
    } else {
        TagList::from_stored(utf8(bytes)?)
    }
}

/// Calls `each` with every tag of a stored file in the store's order, one at a time, without
/// holding the list (a scan compares the new list with the stored one this way): `*.fc.gz`
/// front-coded, another `*.gz` gzipped lines, anything else lines. Stops when `each` says so.
pub fn for_each_stored(
    name: &str,
    file: impl Read,
    mut each: impl FnMut(&str) -> bool,
) -> Result<(), StoreError> {
    use std::io::{BufRead, BufReader};
    let mut reader: Box<dyn BufRead> = match name.ends_with(".gz") {
        true => Box::new(BufReader::new(
            GzDecoder::new(file).take(MAX_STORED_TEXT as u64 * 2),
        )),
        false => Box::new(BufReader::new(file.take(MAX_STORED_TEXT as u64))),
    };
    let corrupt = |why: &str| StoreError::Corrupt(why.to_string());
    let read = |reader: &mut Box<dyn BufRead>, line: &mut Vec<u8>| {
        line.clear();
        let n = reader
            .by_ref()
            .take(MAX_TAG_LEN as u64 + 2)
            .read_until(b'\n', line)
            .map_err(|e| StoreError::Corrupt(format!("gzip: {e}")))?;
        match (n, line.pop()) {
            (0, _) => Ok(false),
            (_, Some(b'\n')) => Ok(true),
            _ => Err(corrupt("a line is incomplete or over-long")),
        }
    };
    let front = name.ends_with(".fc.gz");
    let (mut line, mut tag) = (Vec::new(), Vec::new());
    if front && (!read(&mut reader, &mut line)? || line != MAGIC[..MAGIC.len() - 1]) {
        return Err(corrupt("not a front-coded tag list"));
    }
    while read(&mut reader, &mut line)? {
        match front {
            true => {
                let Some((&shared, rest)) = line.split_first() else {
                    return Err(corrupt("an empty line"));
                };
                if usize::from(shared) > tag.len() {
                    return Err(corrupt("a tag shares more than the tag before it"));
                }
                tag.truncate(usize::from(shared));
                tag.extend_from_slice(rest);
            }
            false => tag.clone_from(&line),
        }
        let text = std::str::from_utf8(&tag).map_err(|_| corrupt("not UTF-8"))?;
        if tag.len() > MAX_TAG_LEN || !each(text) {
            break;
        }
    }
    Ok(())
}

/// A gzip stream's content, refused past `limit` bytes (a small file can inflate to gigabytes).
pub fn gunzip(bytes: &[u8], limit: usize) -> Result<Vec<u8>, StoreError> {
    let mut out = Vec::new();
    GzDecoder::new(bytes)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| StoreError::Corrupt(format!("gzip: {e}")))?;
    if out.len() > limit {
        return Err(StoreError::Corrupt(format!(
            "decompresses to more than {} MiB",
            limit >> 20
        )));
    }
    Ok(out)
}

/// How many leading bytes `a` and `b` share, at most 255 (one byte holds it).
fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter()
        .zip(b)
        .take(255)
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(tags: &[&str]) -> TagList {
        TagList::new(tags.iter().copied()).unwrap()
    }

    fn gzip(raw: &[u8]) -> Vec<u8> {
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        gz.write_all(raw).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn round_trips_and_drops_shared_prefixes() {
        let tags = list(&[
            "1.10.0",
            "1.9.9",
            "1.9.10",
            "latest",
            "1",
            "v2024.05.01-a1b2c3",
            "latest",
        ]);
        assert_eq!(decompress(&compress(&tags).unwrap()).unwrap(), tags);
        let long = "x".repeat(1000);
        let tags = list(&[&format!("{long}a"), &format!("{long}b"), &long]);
        assert_eq!(decompress(&compress(&tags).unwrap()).unwrap(), tags);
        assert_eq!(
            decompress(&compress(&TagList::default()).unwrap()).unwrap(),
            TagList::default()
        );
    }

    #[test]
    fn a_list_coded_in_several_chunks_round_trips() {
        // Tags that share nothing with their neighbour: about 20 coded bytes each, so the
        // coded lines go to gzip in four chunks, each boundary inside the list.
        let tags = TagList::new((0..15_000u32).map(|j| {
            let h = j.wrapping_mul(2_654_435_761);
            format!("{}{h:010}-{j:05}", char::from(b'a' + (j % 26) as u8))
        }))
        .unwrap();
        assert!(tags.as_text().len() > 3 * CODED_CHUNK);
        let compressed = compress(&tags).unwrap();
        assert_eq!(decompress(&compressed).unwrap(), tags);
        // The same bytes as the coded lines gzipped in one write: chunks change no file.
        let mut coded = MAGIC.to_vec();
        let mut previous: &[u8] = &[];
        for tag in tags.iter().map(str::as_bytes) {
            let shared = shared_prefix(previous, tag);
            coded.push(shared as u8);
            coded.extend_from_slice(&tag[shared..]);
            coded.push(b'\n');
            previous = tag;
        }
        assert_eq!(compressed, gzip(&coded));
    }

    #[test]
    fn a_regular_list_is_far_smaller_than_its_gzipped_lines() {
        let tags = TagList::new((0..10_000).map(|j| format!("1.{}.{}", j / 100, j % 100))).unwrap();
        let compact = compress(&tags).unwrap().len();
        let gzipped = gzip(tags.as_text().as_bytes()).len();
        assert!(compact * 10 < gzipped, "{compact} bytes against {gzipped}");
    }

    #[test]
    fn hostile_files_are_corrupt_not_panics() {
        let coded = |body: &[u8]| gzip(&[MAGIC, body].concat());
        let corrupt = |bytes: &[u8]| match decompress(bytes) {
            Err(StoreError::Corrupt(why)) => why,
            other => panic!("{other:?}"),
        };
        assert!(corrupt(b"not gzip").starts_with("gzip"));
        assert!(corrupt(&gzip(b"b\na\n")).contains("not a front-coded"));
        assert!(corrupt(&coded(b"\x00b\n\x05a\n")).contains("shares 5 bytes with one of 1"));
        assert!(corrupt(&coded(b"\x00b\n\x00a")).contains("incomplete"));
        assert!(corrupt(&coded(b"\x00a\n\x00b\n")).contains("descending"));
        assert!(corrupt(&coded(b"\x00\xff\n")).contains("UTF-8"));
        // Each line repeats the 255 bytes before it: 2 bytes a line that decode to 256, so
        // 64 MiB is passed long before the gzip stream ends.
        let mut body = vec![0u8];
        body.extend(std::iter::repeat_n(b'z', 255));
        body.push(b'\n');
        for _ in 0..300_000 {
            body.extend_from_slice(b"\xff\n");
        }
        assert!(corrupt(&coded(&body)).contains("more than 64 MiB"));
        // A small gzip stream of zeros that inflates past the bound.
        let bomb = gzip(&vec![0u8; MAX_STORED_TEXT * 2]);
        assert!(bomb.len() < 1 << 20);
        assert!(corrupt(&bomb).contains("decompresses to more than 96 MiB"));
    }

    #[test]
    fn every_stored_form_streams_back_in_order() {
        let tags = list(&["1.10.0", "1.9.9", "1.9.10", "latest", "1"]);
        let collect = |name: &str, bytes: Vec<u8>| {
            let mut seen = Vec::new();
            for_each_stored(name, bytes.as_slice(), |t| {
                seen.push(t.to_string());
                true
            })
            .map(|()| seen)
        };
        let want: Vec<String> = tags.iter().map(String::from).collect();
        let compact = compress(&tags).unwrap();
        assert_eq!(collect("tags.fc.gz", compact.clone()).unwrap(), want);
        assert_eq!(
            collect("tags.txt.gz", gzip(tags.as_text().as_bytes())).unwrap(),
            want
        );
        assert_eq!(
            collect("tags.txt", tags.as_text().as_bytes().to_vec()).unwrap(),
            want
        );
        assert!(collect("tags.fc.gz", gzip(b"b\na\n")).is_err());
        assert!(collect("tags.txt", b"b\na".to_vec()).is_err(), "incomplete");
        let long = format!("{}\n", "x".repeat(MAX_TAG_LEN + 5));
        assert!(collect("tags.txt", long.into_bytes()).is_err(), "over-long");
        let mut first = None;
        for_each_stored("tags.fc.gz", compact.as_slice(), |t| {
            first = Some(t.to_string());
            false
        })
        .unwrap();
        assert_eq!(first.as_deref(), Some("latest"));
    }
}
