//! Tag store benchmark: `cargo bench --bench store`. Each scenario runs in its own child process
//! so its peak memory (VmHWM) is its own. Reports time, bytes on disk and peak RSS.

use image_reflector::store::{FsStore, RepoKey, TagList, TagStore, DEFAULT_COMPRESSION_THRESHOLD};

mod common;
use common::{peak_rss_kib, run_scenarios, timed};

fn disk_bytes(path: &std::path::Path) -> u64 {
    std::fs::read_dir(path).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .map(|e| match e.metadata() {
                Ok(m) if m.is_dir() => disk_bytes(&e.path()),
                Ok(m) => m.len(),
                Err(_) => 0,
            })
            .sum()
    })
}

fn scenario(name: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = FsStore::open(dir.path(), DEFAULT_COMPRESSION_THRESHOLD).expect("store opens");
    match name {
        "100k" => {
            let text = match common::bench_tags("100k") {
                Ok(text) => text,
                Err(e) => {
                    println!("| 1 key x 100k tags | skipped: {e} | | | |");
                    return;
                }
            };
            let list = TagList::new(text.lines().filter(|l| !l.is_empty())).unwrap();
            // A second list one tag shorter: alternating them, every write is a real one.
            let other = TagList::new(text.lines().filter(|l| !l.is_empty()).skip(1)).unwrap();
            drop(text);
            let k = RepoKey::new("bench", "big").unwrap();
            let mut n = 0;
            let write = timed(5, || {
                n += 1;
                store
                    .set(&k, if n % 2 == 0 { &list } else { &other })
                    .unwrap();
            });
            // The same tags again (a scan that found nothing new): no write.
            let unchanged = timed(5, || {
                store.set(&k, &other).unwrap();
            });
            let read = timed(5, || {
                std::hint::black_box(store.get(&k).unwrap());
            });
            println!(
                "| 1 key x 100k tags | {write:.1?} (unchanged: {unchanged:.1?}) | {read:.1?} | {} | {} |",
                disk_bytes(dir.path()),
                peak_rss_kib()
            );
        }
        "1000x1000" => {
            let keys: Vec<RepoKey> = (0..1000)
                .map(|i| RepoKey::new("bench", format!("repo-{i}")).unwrap())
                .collect();
            let mut run = 0;
            let write = timed(3, || {
                run += 1;
                for (i, k) in keys.iter().enumerate() {
                    let list = TagList::new((0..1000).map(|t| format!("{i}.{t}.{run}"))).unwrap();
                    store.set(k, &list).unwrap();
                }
            });
            let read = timed(3, || {
                for k in &keys {
                    std::hint::black_box(store.get(k).unwrap());
                }
            });
            println!("| 1,000 keys x 1,000 tags | {write:.1?} (all keys) | {read:.1?} (all keys) | {} | {} |", disk_bytes(dir.path()), peak_rss_kib());
        }
        "one-of-1000" => {
            // Fill the store from another process state, then measure reading a single key.
            for i in 0..1000 {
                let list = TagList::new((0..1000).map(|t| format!("{i}.{t}.0"))).unwrap();
                store
                    .set(&RepoKey::new("bench", format!("repo-{i}")).unwrap(), &list)
                    .unwrap();
            }
            drop(store);
            let store = FsStore::open(dir.path(), DEFAULT_COMPRESSION_THRESHOLD).unwrap();
            let before = peak_rss_kib();
            let k = RepoKey::new("bench", "repo-500").unwrap();
            let read = timed(9, || {
                std::hint::black_box(store.get(&k).unwrap());
            });
            println!(
                "| read 1 key of 1,000 | | {read:.1?} | {} | {} (+{} while reading) |",
                disk_bytes(dir.path()),
                peak_rss_kib(),
                peak_rss_kib() - before
            );
        }
        "per-repository" => per_repository(&store, dir.path()),
        other => panic!("unknown scenario {other}"),
    }
}

/// The bytes a repository's list takes, ours against Flux's FluxStorage (which writes the
/// plain lines, gzipped at the best level from its 64 KiB threshold on), at the scenarios'
/// list sizes: regular tags (`1.x.y`, as the controller benchmark's registry serves) and the
/// realistic mixed list (the first N of bench-tags-10k.txt). Flux's bytes are computed from
/// its rule, not measured from a Flux store.
fn per_repository(store: &FsStore, root: &std::path::Path) {
    use std::io::Write;
    let realistic = common::bench_tags("10k").ok();
    for n in [100usize, 400, 1_000, 10_000] {
        let regular: Vec<String> = (0..n)
            .map(|j| format!("1.{}.{}", j / 100, j % 100))
            .collect();
        let mixed: Option<Vec<String>> = realistic.as_ref().map(|text| {
            text.lines()
                .filter(|l| !l.is_empty())
                .take(n)
                .map(String::from)
                .collect()
        });
        for (kind, tags) in [("regular", Some(regular)), ("mixed", mixed)] {
            let Some(tags) = tags else { continue };
            let list = TagList::new(&tags).unwrap();
            let k = RepoKey::new("bytes", format!("{kind}-{n}")).unwrap();
            store.set(&k, &list).unwrap();
            let ours = disk_bytes(&root.join("imagerepository/bytes").join(k.name()));
            let text = list.as_text().as_bytes();
            let flux = match text.len() >= DEFAULT_COMPRESSION_THRESHOLD {
                false => text.len(),
                true => {
                    let best = flate2::Compression::best();
                    let mut gz = flate2::write::GzEncoder::new(Vec::new(), best);
                    gz.write_all(text).unwrap();
                    gz.finish().unwrap().len()
                }
            };
            println!(
                "| {n} {kind} tags, one repository | | | {ours} (Flux's FluxStorage: {flux}, {:.2}) | |",
                ours as f64 / flux as f64
            );
        }
    }
}

fn main() {
    run_scenarios(
        "store",
        "| scenario | write | read | bytes on disk | peak RSS (KiB) |\n|---|---|---|---|---|",
        &["100k", "1000x1000", "one-of-1000", "per-repository"],
        scenario,
    );
}
