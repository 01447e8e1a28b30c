//! Sigstore's trusted root through TUF: TUF repositories of Sigstore's shape, made with go-tuf's
//! metadata API and served on loopback (`tufrepo`, built by `make sigtools`), read by the
//! controller's root provider (`registry::sigstore_root`, tough): the target it serves becomes
//! the root in use and is kept in the store; a rotated root is followed; an expired timestamp
//! role, or a repository another anchor signs, leaves the kept root in use, saying why.

use crate::support::sigtools::bin_dir;
use image_reflector::registry::sigstore_root::{PublicGoodRoot, Settings, Source, TARGET};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

const ROOT: &[u8] = include_bytes!("../../../src/verify/fixtures/rekor-v2/trusted_root.json");

/// A repository made in `dir` with `flags`, served: its URL and the server.
pub(super) struct Mirror {
    pub url: String,
    server: Child,
}

impl Mirror {
    fn make(dir: &Path, flags: &[&str]) -> Mirror {
        Mirror::serving(dir, ROOT, flags)
    }

    /// A repository whose target trusted_root.json is `root`, made in `dir` with `flags` and
    /// served; its anchor is `dir/anchor.json`.
    pub(super) fn serving(dir: &Path, root_json: &[u8], flags: &[&str]) -> Mirror {
        let tool = bin_dir().join("tufrepo");
        let root = dir.join("source.json");
        std::fs::write(&root, root_json).unwrap();
        let made = Command::new(&tool)
            .arg("make")
            .arg(dir)
            .arg(&root)
            .args(flags)
            .output()
            .unwrap();
        assert!(
            made.status.success(),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
        let mut server = Command::new(&tool)
            .arg("serve")
            .arg(dir)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(server.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        Mirror {
            url: format!("http://{}", line.trim()),
            server,
        }
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

fn settings(mirror: &Mirror, anchor: &Path, cache: &Path) -> Settings {
    Settings {
        mirror: Some(mirror.url.parse().unwrap()),
        anchor: Some(std::fs::read(anchor).unwrap()),
        cache: Some(cache.to_path_buf()),
    }
}

#[tokio::test]
#[ignore = "needs tufrepo: make e2e-signatures"]
async fn the_trusted_root_is_read_through_tuf_and_kept() {
    for flags in [&[][..], &["rotate"][..]] {
        let (repo, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mirror = Mirror::make(repo.path(), flags);
        let anchor = repo.path().join("anchor.json");
        let roots = PublicGoodRoot::new(settings(&mirror, &anchor, cache.path()));
        assert_eq!(roots.current().source, Source::Embedded);
        let current = roots.refresh().await;
        assert_eq!(
            (current.source, current.stale.clone()),
            (Source::Mirror, None),
            "{flags:?}"
        );
        assert_eq!(&*current.bytes, ROOT);
        assert_eq!(std::fs::read(cache.path().join(TARGET)).unwrap(), ROOT);
        // With `rotate`, 2.root.json replaces the timestamp key too: a client that did not
        // follow the rotation refuses the timestamp.
        // A restart starts from the kept root.
        let again = PublicGoodRoot::new(settings(&mirror, &anchor, cache.path()));
        assert_eq!(again.current().source, Source::Cached);
    }
}

#[tokio::test]
#[ignore = "needs tufrepo: make e2e-signatures"]
async fn an_expired_timestamp_or_another_anchor_leaves_the_kept_root() {
    let cache = tempfile::tempdir().unwrap();
    let (good, expired) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let good_mirror = Mirror::make(good.path(), &[]);
    let anchor = good.path().join("anchor.json");
    let roots = PublicGoodRoot::new(settings(&good_mirror, &anchor, cache.path()));
    assert_eq!(roots.refresh().await.source, Source::Mirror);

    // The same cache, a repository whose timestamp role expired an hour ago.
    let stale_mirror = Mirror::make(expired.path(), &["expired-timestamp"]);
    let stale_anchor = expired.path().join("anchor.json");
    let roots = PublicGoodRoot::new(settings(
        &stale_mirror,
        &stale_anchor,
        &cache.path().join("x"),
    ));
    let current = roots.refresh().await;
    assert_eq!(current.source, Source::Embedded);
    let why = current.stale.clone().unwrap();
    assert!(why.contains("could not be read"), "{why}");
    assert!(why.to_lowercase().contains("expired"), "{why}");

    // A repository signed by keys the anchor does not trust.
    let other = tempfile::tempdir().unwrap();
    let other_mirror = Mirror::make(other.path(), &[]);
    let roots = PublicGoodRoot::new(settings(&other_mirror, &anchor, cache.path()));
    assert_eq!(roots.current().source, Source::Cached);
    let current = roots.refresh().await;
    assert_eq!(current.source, Source::Cached);
    let why = current.stale.clone().unwrap();
    assert!(
        why.ends_with("the root kept in the store is in use"),
        "{why}"
    );
}

/// The target is read up to 256 KiB (a trusted root's bound): a bigger one, though TUF vouches
/// for it, is not used.
#[tokio::test]
#[ignore = "needs tufrepo: make e2e-signatures"]
async fn a_target_over_256_kib_is_not_used() {
    let (repo, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let big = format!("{{\"padding\": \"{}\"}}", "x".repeat(256 << 10));
    let mirror = Mirror::serving(repo.path(), big.as_bytes(), &[]);
    let anchor = repo.path().join("anchor.json");
    let roots = PublicGoodRoot::new(settings(&mirror, &anchor, cache.path()));
    let current = roots.refresh().await;
    assert_eq!(current.source, Source::Embedded);
    let why = current.stale.clone().unwrap();
    assert!(
        why.contains("its trusted_root.json is over 262144 bytes"),
        "{why}"
    );
    assert!(!cache.path().join(TARGET).exists());
}
