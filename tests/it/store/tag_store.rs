//! The tag store through its public interface: both implementations, the on-disk layout,
//! corruption handling, garbage collection, concurrency and a real SIGKILL crash test.

use image_reflector::store::{FsStore, MemoryStore, RepoKey, TagList, TagStore};
use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn key(ns: &str, name: &str) -> RepoKey {
    RepoKey::new(ns, name).expect("valid key")
}

fn tags(n: usize, salt: &str) -> TagList {
    TagList::new((0..n).map(|i| format!("{salt}-{i}"))).unwrap()
}

fn object_dir(root: &Path, k: &RepoKey) -> std::path::PathBuf {
    root.join("imagerepository")
        .join(k.namespace())
        .join(k.name())
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn check_round_trip_and_isolation(store: &dyn TagStore) {
    let (a, b) = (key("ns1", "app"), key("ns2", "app"));
    let list = TagList::new(["1.0.0", "v2.0.0", "latest", "0.9.0"]).unwrap();
    let rev = store.set(&a, &list).unwrap();
    let (got, got_rev) = store.get(&a).unwrap();
    assert_eq!(
        got.iter().collect::<Vec<_>>(),
        ["v2.0.0", "latest", "1.0.0", "0.9.0"]
    );
    assert_eq!((rev.clone(), got_rev), (list.revision(), list.revision()));

    let (other, _) = store.get(&b).unwrap();
    assert!(
        other.is_empty(),
        "a key with the same name in another namespace is separate"
    );
    store.set(&b, &tags(3, "b")).unwrap();
    assert_eq!(
        store.get(&a).unwrap().0,
        got,
        "writing one key leaves the other alone"
    );
    assert_eq!(store.keys().unwrap(), vec![a.clone(), b.clone()]);

    store.delete(&a).unwrap();
    assert!(store.get(&a).unwrap().0.is_empty());
    store.delete(&a).unwrap(); // deleting twice is fine
    assert_eq!(store.keys().unwrap(), vec![b]);
}

#[test]
fn both_stores_round_trip_and_isolate_keys() {
    check_round_trip_and_isolation(&MemoryStore::new());
    let dir = tempfile::tempdir().unwrap();
    check_round_trip_and_isolation(&FsStore::open(dir.path(), 64 * 1024).unwrap());
}

#[test]
fn revision_is_flux_sha256_independent_of_order_and_compression() {
    let dir = tempfile::tempdir().unwrap();
    let plain = FsStore::open(dir.path().join("plain"), 1 << 20).unwrap();
    let gzipped = FsStore::open(dir.path().join("gz"), 1).unwrap();
    let k = key("default", "repo");
    let forward = TagList::new(["a", "b", "c", "d"]).unwrap();
    let backward = TagList::new(["d", "c", "b", "a"]).unwrap();
    let r1 = plain.set(&k, &forward).unwrap();
    let r2 = gzipped.set(&k, &backward).unwrap();
    assert_eq!(r1, r2);
    // sha256 of "d\nc\nb\na\n", as Flux's filesystem store computes it.
    assert_eq!(
        r1.as_str(),
        format!("sha256:{}", sha256_hex(b"d\nc\nb\na\n"))
    );
    assert!(object_dir(plain.root(), &k).join("tags.txt").exists());
    assert!(object_dir(gzipped.root(), &k).join("tags.fc.gz").exists());
    assert!(!object_dir(gzipped.root(), &k).join("tags.txt").exists());
    assert_eq!(
        gzipped.get(&k).unwrap().1,
        r1,
        "revision of the decompressed content"
    );
}

/// sha256 through the system's tool, so the expected value is not computed by our own code.
fn sha256_hex(data: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum (coreutils) runs");
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn switching_variant_removes_the_stale_one_and_files_are_private() {
    let dir = tempfile::tempdir().unwrap();
    let given = mode(dir.path());
    let store = FsStore::open(dir.path(), 100).unwrap();
    let k = key("team", "big");
    store.set(&k, &tags(50, "build")).unwrap(); // over 100 bytes: compressed
    let obj = object_dir(dir.path(), &k);
    assert!(obj.join("tags.fc.gz").exists() && !obj.join("tags.txt").exists());
    std::fs::write(obj.join("tags.txt.gz"), b"Flux's, older").unwrap();
    store.set(&k, &tags(2, "b")).unwrap(); // small again: plain, the others removed
    assert!(obj.join("tags.txt").exists() && !obj.join("tags.fc.gz").exists());
    assert!(!obj.join("tags.txt.gz").exists());
    assert_eq!(mode(&obj.join("tags.txt")), 0o600);
    assert_eq!(mode(&obj), 0o700);
    assert_eq!(mode(obj.parent().unwrap()), 0o700);
    assert_eq!(
        mode(dir.path()),
        given,
        "a directory the store was given keeps its mode"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".storage-version")).unwrap(),
        "2\n"
    );
}

/// Below the threshold a list is written compact when that is smaller: 100 tags `1.0.x` take a
/// sixth of their plain bytes. One short tag stays plain (gzip's header outweighs it).
#[test]
fn a_small_list_is_compact_when_that_is_smaller() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::open(dir.path(), 64 * 1024).unwrap();
    let k = key("team", "app");
    let list = TagList::new((0..100).map(|j| format!("1.0.{j}"))).unwrap();
    let plain = list.as_text().len() as u64;
    store.set(&k, &list).unwrap();
    let obj = object_dir(dir.path(), &k);
    assert!(!obj.join("tags.txt").exists());
    let compact = std::fs::metadata(obj.join("tags.fc.gz")).unwrap().len();
    assert!(2 * compact <= plain, "{compact} bytes for {plain}");
    assert_eq!(store.get(&k).unwrap().0, list);
    store.set(&k, &TagList::new(["v1"]).unwrap()).unwrap();
    assert!(obj.join("tags.txt").exists() && !obj.join("tags.fc.gz").exists());
    store.set(&k, &TagList::default()).unwrap();
    assert_eq!(std::fs::read(obj.join("tags.txt")).unwrap(), b"");
}

#[test]
fn newest_variant_wins_when_several_exist() {
    let dir = tempfile::tempdir().unwrap();
    let k = key("ns", "r");
    let gz_store = FsStore::open(dir.path(), 1).unwrap();
    gz_store.set(&k, &TagList::new(["old"]).unwrap()).unwrap();
    let obj = object_dir(dir.path(), &k);
    let age = |file: &str, secs: u64| {
        std::fs::File::options()
            .write(true)
            .open(obj.join(file))
            .unwrap()
            .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(secs))
            .unwrap()
    };
    // A crash between the rename and the cleanup leaves two; the plain one is newer here.
    std::fs::write(obj.join("tags.txt"), "new\n").unwrap();
    age("tags.fc.gz", 60);
    let (got, _) = gz_store.get(&k).unwrap();
    assert_eq!(got.iter().collect::<Vec<_>>(), ["new"]);
    assert!(
        !obj.join("tags.fc.gz").exists(),
        "the stale variant is removed"
    );
    // Flux's gzipped list, newer than ours, wins too.
    std::fs::write(obj.join("tags.txt.gz"), gzip_by_the_system(b"flux\n")).unwrap();
    age("tags.txt", 60);
    let (got, _) = gz_store.get(&k).unwrap();
    assert_eq!(got.iter().collect::<Vec<_>>(), ["flux"]);
    assert!(!obj.join("tags.txt").exists());
}

/// A list as Flux's filesystem store writes it (lines gzipped at the best level), made by
/// the system's gzip so the bytes do not come from our own encoder.
fn gzip_by_the_system(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = std::process::Command::new("gzip")
        .args(["-9", "-c"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gzip runs");
    let mut stdin = child.stdin.take().unwrap();
    let data = data.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&data).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out.stdout
}

/// Flux's `tags.txt.gz` is read as it is, with its revision, and replaced by the compact file
/// when the tags next change; the compact file is far smaller for a regular list.
#[test]
fn a_list_flux_wrote_is_read_and_the_next_write_is_compact() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::open(dir.path(), 64 * 1024).unwrap();
    let k = key("team", "ci");
    let list = TagList::new((0..10_000).map(|j| format!("1.{}.{}", j / 100, j % 100))).unwrap();
    let obj = object_dir(dir.path(), &k);
    std::fs::create_dir_all(&obj).unwrap();
    let flux = gzip_by_the_system(list.as_text().as_bytes());
    std::fs::write(obj.join("tags.txt.gz"), &flux).unwrap();
    let (got, revision) = store.get(&k).unwrap();
    assert_eq!(got, list);
    assert_eq!(
        revision.as_str(),
        format!("sha256:{}", sha256_hex(list.as_text().as_bytes()))
    );
    let mut more: Vec<String> = list.iter().map(str::to_string).collect();
    more.push("2.0.0".into());
    store.set(&k, &TagList::new(more).unwrap()).unwrap();
    assert!(!obj.join("tags.txt.gz").exists());
    let compact = std::fs::metadata(obj.join("tags.fc.gz")).unwrap().len();
    assert!(
        compact * 10 < flux.len() as u64,
        "{compact} bytes against Flux's {}",
        flux.len()
    );
    assert_eq!(store.get(&k).unwrap().0.len(), 10_001);
}

#[test]
fn corrupt_or_truncated_files_read_as_no_tags_and_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let small = FsStore::open(dir.path(), 1 << 20).unwrap();
    let k = key("ns", "r");
    let obj = object_dir(dir.path(), &k);
    for (file, content) in [
        ("tags.txt", b"b\na".to_vec()),        // truncated: no final newline
        ("tags.txt", b"a\nb\n".to_vec()),      // not in the store's order
        ("tags.txt", vec![0xff, 0xfe, b'\n']), // not UTF-8
        ("tags.txt.gz", b"not gzip at all".to_vec()),
        ("tags.fc.gz", b"not gzip at all".to_vec()),
        ("tags.fc.gz", gzip_by_the_system(b"b\na\n")), // gzip, but not front-coded
    ] {
        small.set(&k, &TagList::new(["x"]).unwrap()).unwrap();
        let _ = std::fs::remove_file(obj.join("tags.txt"));
        std::fs::write(obj.join(file), &content).unwrap();
        let (got, rev) = small.get(&k).unwrap();
        assert!(got.is_empty(), "{file} {content:?}");
        assert_eq!(rev, TagList::default().revision());
        assert!(
            !obj.join(file).exists(),
            "{file} is removed so the repository is rescanned"
        );
    }
    // A compressed file cut short fails its checksum.
    let gz = FsStore::open(dir.path(), 1).unwrap();
    gz.set(&k, &tags(500, "t")).unwrap();
    let bytes = std::fs::read(obj.join("tags.fc.gz")).unwrap();
    std::fs::write(obj.join("tags.fc.gz"), &bytes[..bytes.len() / 2]).unwrap();
    assert!(gz.get(&k).unwrap().0.is_empty());
    // And the store still works afterwards.
    gz.set(&k, &tags(3, "ok")).unwrap();
    assert_eq!(gz.get(&k).unwrap().0.len(), 3);
}

#[test]
fn foreign_content_is_wiped_and_an_interrupted_wipe_completes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("000001.vlog"), b"badger").unwrap();
    std::fs::create_dir(dir.path().join("badger-dir")).unwrap();
    FsStore::open(dir.path(), 1024).unwrap();
    let names: HashSet<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, HashSet::from([".storage-version".to_string()]));

    let store = FsStore::open(dir.path(), 1024).unwrap();
    store.set(&key("a", "b"), &tags(2, "t")).unwrap();
    drop(store);
    std::fs::write(dir.path().join(".storage-wipe-in-progress"), b"").unwrap();
    let store = FsStore::open(dir.path(), 1024).unwrap();
    assert!(
        store.keys().unwrap().is_empty(),
        "the interrupted wipe was completed"
    );
    assert!(!dir.path().join(".storage-wipe-in-progress").exists());

    // A store of our own format is left alone.
    store.set(&key("a", "b"), &tags(2, "t")).unwrap();
    drop(store);
    let store = FsStore::open(dir.path(), 1024).unwrap();
    assert_eq!(store.get(&key("a", "b")).unwrap().0.len(), 2);
}

#[test]
fn retain_collects_repositories_that_no_longer_exist() {
    let dir = tempfile::tempdir().unwrap();
    let stores: [Box<dyn TagStore>; 2] = [
        Box::new(MemoryStore::new()),
        Box::new(FsStore::open(dir.path(), 1024).unwrap()),
    ];
    for store in stores {
        let (live, dead1, dead2) = (key("a", "live"), key("a", "dead"), key("gone", "dead"));
        for k in [&live, &dead1, &dead2] {
            store.set(k, &tags(2, "t")).unwrap();
        }
        let mut removed = store.retain(&HashSet::from([live.clone()])).unwrap();
        removed.sort();
        assert_eq!(removed, vec![dead1, dead2]);
        assert_eq!(store.keys().unwrap(), vec![live.clone()]);
        assert_eq!(store.get(&live).unwrap().0.len(), 2);
    }
}

#[test]
fn concurrent_writers_to_different_keys_do_not_interfere() {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(FsStore::open(dir.path(), 2048).unwrap());
    let handles: Vec<_> = (0..8)
        .map(|w| {
            let store = store.clone();
            std::thread::spawn(move || {
                let k = key("ns", &format!("repo-{w}"));
                for round in 0..25 {
                    let list = tags(10 + round * 10, &format!("w{w}"));
                    let rev = store.set(&k, &list).unwrap();
                    let (got, got_rev) = store.get(&k).unwrap();
                    assert_eq!((got, got_rev), (list, rev));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("writer thread");
    }
    assert_eq!(store.keys().unwrap().len(), 8);
    for w in 0..8 {
        assert_eq!(
            store.get(&key("ns", &format!("repo-{w}"))).unwrap().0.len(),
            250
        );
    }
}

const CRASH_DIR_ENV: &str = "IMAGE_REFLECTOR_CRASH_DIR";

/// The child of the crash test: writes two lists alternately, forever, reporting each write.
#[test]
#[ignore = "run by store_survives_sigkill_at_random_points"]
fn store_crash_writer() {
    let Ok(dir) = std::env::var(CRASH_DIR_ENV) else {
        return;
    };
    let store = FsStore::open(dir, 16 * 1024).unwrap();
    let k = key("crash", "repo");
    let lists = [tags(200, "small"), tags(5000, "large")];
    for i in 0.. {
        store.set(&k, &lists[i % 2]).unwrap();
        println!("wrote {i}");
    }
}

#[test]
fn store_survives_sigkill_at_random_points() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let expected = [tags(200, "small"), tags(5000, "large")];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id());
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..12 {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "store::tag_store::store_crash_writer",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CRASH_DIR_ENV, dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the writer starts");
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let writes = 1 + next() % 6;
        let mut seen = 0;
        while seen < writes {
            let line = lines.next().expect("writer output").unwrap();
            if line.starts_with("wrote ") {
                seen += 1;
            }
        }
        // Kill somewhere inside a later write: a short random delay picks the point.
        std::thread::sleep(std::time::Duration::from_micros(next() % 3000));
        child.kill().expect("SIGKILL");
        child.wait().unwrap();

        let store = FsStore::open(dir.path(), 16 * 1024).unwrap();
        let (got, rev) = store.get(&key("crash", "repo")).unwrap();
        assert!(
            expected.iter().any(|e| *e == got && e.revision() == rev),
            "round {round}: a partial list of {} tags survived the crash",
            got.len()
        );
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("imagerepository/crash/repo"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".tmp-"))
            .collect();
        assert!(
            leftovers.is_empty(),
            "temporary files are swept on open: {leftovers:?}"
        );
    }
}

#[test]
fn a_store_emptied_while_open_writes_its_format_marker_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    let store = FsStore::open(&root, 1024).unwrap();
    store.set(&key("ns", "a"), &tags(3, "a")).unwrap();
    // Someone deletes the volume's contents, or the directory itself, while the controller runs.
    std::fs::remove_dir_all(&root).unwrap();
    store.set(&key("ns", "b"), &tags(2, "b")).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join(".storage-version")).unwrap(),
        "2\n",
        "without the marker, the next start would take the store for another format and wipe it"
    );
    assert_eq!(mode(&root), 0o700, "a root the store re-creates is private");
    let reopened = FsStore::open(&root, 1024).unwrap();
    assert_eq!(reopened.get(&key("ns", "b")).unwrap().0, tags(2, "b"));
}

/// A scan whose tags did not change costs no write (no compression, no fsync): the file is
/// left as it is. A file that went missing meanwhile is written again.
#[test]
fn unchanged_tags_are_not_rewritten() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::open(dir.path(), 100).unwrap();
    let k = key("team", "app");
    let list = tags(50, "build"); // over 100 bytes: compressed
    let rev = store.set(&k, &list).unwrap();
    let file = object_dir(dir.path(), &k).join("tags.fc.gz");
    let inode = std::fs::metadata(&file).unwrap().ino();
    assert_eq!(store.set(&k, &list).unwrap(), rev);
    assert_eq!(
        std::fs::metadata(&file).unwrap().ino(),
        inode,
        "not replaced"
    );
    // Another store instance (a restart) learns the revision by reading it.
    let reopened = FsStore::open(dir.path(), 100).unwrap();
    assert_eq!(reopened.get(&k).unwrap().1, rev);
    assert_eq!(reopened.set(&k, &list).unwrap(), rev);
    assert_eq!(std::fs::metadata(&file).unwrap().ino(), inode);
    std::fs::remove_file(&file).unwrap();
    reopened.set(&k, &list).unwrap();
    assert!(file.exists(), "a missing file is written again");
    // Changed tags are written.
    reopened.set(&k, &tags(51, "build")).unwrap();
    assert_ne!(reopened.get(&k).unwrap().1, rev);
}

fn check_digest_facts(store: &dyn TagStore) {
    use image_reflector::store::DigestFact;
    let (a, none) = (key("ns1", "facts"), key("ns1", "no-tags"));
    let fact = |digest: &str, at| DigestFact {
        digest: digest.into(),
        checked_at: at,
    };
    store.set(&a, &TagList::new(["1.0.0"]).unwrap()).unwrap();
    store
        .record_digest(&a, "1.0.0", fact("sha256:aa", 10))
        .unwrap();
    store
        .record_digest(&a, "1.0.0", fact("sha256:bb", 20))
        .unwrap();
    assert_eq!(
        store.digest_fact(&a, "1.0.0").unwrap(),
        Some(fact("sha256:bb", 20))
    );
    assert_eq!(store.digest_fact(&a, "2.0.0").unwrap(), None);
    store
        .record_digest(&none, "1.0.0", fact("sha256:aa", 10))
        .unwrap();
    assert_eq!(
        store.digest_fact(&none, "1.0.0").unwrap(),
        None,
        "no facts are kept for a repository without tags"
    );
    store.delete(&a).unwrap();
    store.set(&a, &TagList::new(["1.0.0"]).unwrap()).unwrap();
    assert_eq!(
        store.digest_fact(&a, "1.0.0").unwrap(),
        None,
        "deleted with the tags"
    );
}

#[test]
fn digest_facts_are_kept_beside_the_tags_in_both_stores() {
    check_digest_facts(&MemoryStore::new());
    let dir = tempfile::tempdir().unwrap();
    check_digest_facts(&FsStore::open(dir.path(), 64 * 1024).unwrap());
}

#[test]
fn digest_facts_survive_a_restart_and_a_hostile_file_is_not_read() {
    use image_reflector::store::DigestFact;
    let dir = tempfile::tempdir().unwrap();
    let k = key("ns1", "app");
    let fact = DigestFact {
        digest: "sha256:aa".into(),
        checked_at: 1_700_000_000,
    };
    {
        let store = FsStore::open(dir.path(), 64 * 1024).unwrap();
        store.set(&k, &TagList::new(["1.0.0"]).unwrap()).unwrap();
        store.record_digest(&k, "1.0.0", fact.clone()).unwrap();
    }
    let store = FsStore::open(dir.path(), 64 * 1024).unwrap();
    assert_eq!(store.digest_fact(&k, "1.0.0").unwrap(), Some(fact));
    assert_eq!(store.get(&k).unwrap().0.len(), 1, "the tags read as before");
    // A huge file (planted, or grown by a bug) is not read into memory: no facts.
    let file = object_dir(dir.path(), &k).join("digests.txt");
    let line = "1.0.0 sha256:aa 1700000000\n";
    std::fs::write(&file, line.repeat(1 + (1 << 20) / line.len())).unwrap();
    assert_eq!(store.digest_fact(&k, "1.0.0").unwrap(), None);
}

fn check_image_facts(store: &dyn TagStore) {
    use image_reflector::store::{ImageFacts, SignatureVerdict};
    let (a, none) = (key("ns1", "images"), key("ns1", "no-tags"));
    let digest = format!("sha256:{}", "ab".repeat(32));
    let mut facts = ImageFacts {
        digest: digest.clone(),
        inspected: true,
        created: Some(1_700_000_000),
        recorded_at: 5,
        ..Default::default()
    };
    store.set(&a, &TagList::new(["1.0.0"]).unwrap()).unwrap();
    store.record_image_facts(&a, facts.clone()).unwrap();
    facts.set_verdict(SignatureVerdict {
        valid_until: None,
        keys: "k".into(),
        verified_by: Some("cosign.pub".into()),
        reason: String::new(),
        checked_at: 6,
        signed_at: Some(5),
    });
    store.record_image_facts(&a, facts.clone()).unwrap();
    assert_eq!(store.image_facts(&a, &digest).unwrap(), Some(facts.clone()));
    assert_eq!(store.image_facts(&a, "sha256:00").unwrap(), None);
    store.record_image_facts(&none, facts.clone()).unwrap();
    assert_eq!(
        store.image_facts(&none, &digest).unwrap(),
        None,
        "no facts are kept for a repository without tags"
    );
    store.delete(&a).unwrap();
    store.set(&a, &TagList::new(["1.0.0"]).unwrap()).unwrap();
    assert_eq!(
        store.image_facts(&a, &digest).unwrap(),
        None,
        "deleted with the tags"
    );
}

#[test]
fn image_facts_are_kept_beside_the_tags_in_both_stores_and_bounded_on_disk() {
    use image_reflector::store::ImageFacts;
    check_image_facts(&MemoryStore::new());
    let dir = tempfile::tempdir().unwrap();
    check_image_facts(&FsStore::open(dir.path(), 64 * 1024).unwrap());
    // Across a reopen; and a file over its 4 MiB bound is not read.
    let k = key("ns1", "app");
    let facts = ImageFacts {
        digest: format!("sha256:{}", "cd".repeat(32)),
        inspected: true,
        ..Default::default()
    };
    {
        let store = FsStore::open(dir.path(), 64 * 1024).unwrap();
        store.set(&k, &TagList::new(["1.0.0"]).unwrap()).unwrap();
        store.record_image_facts(&k, facts.clone()).unwrap();
    }
    let store = FsStore::open(dir.path(), 64 * 1024).unwrap();
    assert_eq!(
        store.image_facts(&k, &facts.digest).unwrap(),
        Some(facts.clone())
    );
    let file = object_dir(dir.path(), &k).join("images.jsonl");
    let line = serde_json::to_string(&facts).unwrap() + "\n";
    std::fs::write(&file, line.repeat(1 + (4 << 20) / line.len())).unwrap();
    assert_eq!(store.image_facts(&k, &facts.digest).unwrap(), None);
}

/// A policy records a digest while its repository is being deleted: the deletion never fails
/// on the file appearing under it ("Directory not empty"), and nothing is left behind.
#[test]
fn deleting_a_repository_while_its_digest_is_recorded() {
    use image_reflector::store::DigestFact;
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(FsStore::open(dir.path(), 64 * 1024).unwrap());
    let k = key("apps", "raced");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let recorder = {
        let (store, k, stop) = (store.clone(), k.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let fact = DigestFact {
                    digest: format!("sha256:{n:064x}"),
                    checked_at: n as i64,
                };
                store.record_digest(&k, "1.0.0", fact).unwrap();
                n += 1;
            }
        })
    };
    for round in 0..200 {
        store.set(&k, &tags(3, "r")).unwrap();
        if let Err(err) = store.delete(&k) {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            panic!("round {round}: {err}");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    recorder.join().unwrap();
    assert!(!object_dir(dir.path(), &k).exists());
}

fn check_first_seen(store: &dyn TagStore) {
    let k = key("ns1", "seen");
    let list = |tags: &[&str]| TagList::new(tags.iter().copied()).unwrap();
    store.set_seen(&k, &list(&["1.0.0", "0.9.0"]), 100).unwrap();
    let seen = store.first_seen(&k).unwrap();
    assert_eq!(
        (seen.at("1.0.0"), seen.at("0.9.0")),
        (0, 0),
        "a first scan: seen before"
    );
    store
        .set_seen(&k, &list(&["1.1.0", "1.0.0", "0.9.0"]), 200)
        .unwrap();
    store
        .set_seen(&k, &list(&["1.2.0", "1.1.0", "1.0.0"]), 300)
        .unwrap();
    let seen = store.first_seen(&k).unwrap();
    assert_eq!(
        (seen.at("1.2.0"), seen.at("1.1.0"), seen.at("1.0.0")),
        (300, 200, 0)
    );
    store.resolved(&k, "1.1.0", "sha256:a", 310).unwrap();
    store.resolved(&k, "1.1.0", "sha256:b", 320).unwrap();
    assert_eq!(store.first_seen(&k).unwrap().at("1.1.0"), 320, "moved");
    // Nothing is kept for a repository without tags.
    let none = key("ns1", "none");
    store.resolved(&none, "1.0.0", "sha256:a", 5).unwrap();
    assert_eq!(store.first_seen(&none).unwrap().at("1.0.0"), 0);
    store.delete(&k).unwrap();
    assert_eq!(store.first_seen(&k).unwrap().at("1.2.0"), 0);
}

#[test]
fn first_sightings_are_kept_beside_the_tags_in_both_stores() {
    check_first_seen(&MemoryStore::new());
    let dir = tempfile::tempdir().unwrap();
    check_first_seen(&FsStore::open(dir.path(), 64 * 1024).unwrap());
    // The stored list streamed from the compact file.
    let compact = tempfile::tempdir().unwrap();
    check_first_seen(&FsStore::open(compact.path(), 1).unwrap());
}

/// Not advisory: kept across a restart, and a file the store cannot trust is an error (the
/// walk then counts every tag as seen now), never "seen long ago".
#[test]
fn first_sightings_survive_a_restart_and_an_oversized_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let k = key("ns1", "kept");
    let list = |tags: &[&str]| TagList::new(tags.iter().copied()).unwrap();
    {
        let store = FsStore::open(dir.path(), 64 * 1024).unwrap();
        store.set_seen(&k, &list(&["1.0.0"]), 100).unwrap();
        store.set_seen(&k, &list(&["1.1.0", "1.0.0"]), 200).unwrap();
    }
    let store = FsStore::open(dir.path(), 64 * 1024).unwrap();
    assert_eq!(store.first_seen(&k).unwrap().at("1.1.0"), 200);
    let file = object_dir(dir.path(), &k).join("seen.txt");
    assert_eq!(mode(&file), 0o600);
    // A changed list where nothing arrived and no recorded tag left: not rewritten (no fsync).
    use std::os::unix::fs::MetadataExt;
    let inode = std::fs::metadata(&file).unwrap().ino();
    store.set_seen(&k, &list(&["1.1.0"]), 300).unwrap();
    assert_eq!(std::fs::metadata(&file).unwrap().ino(), inode);
    store.set_seen(&k, &list(&["1.0.0"]), 400).unwrap();
    assert_ne!(std::fs::metadata(&file).unwrap().ino(), inode, "1.1.0 left");
    assert_eq!(store.first_seen(&k).unwrap().at("1.0.0"), 400);
    std::fs::write(&file, "9 x\n".repeat(2 << 20)).unwrap();
    assert!(store.first_seen(&k).is_err());
}
