//! Sigstore's trusted root through TUF: TUF repositories of Sigstore's shape, made with go-tuf's
//! metadata API and served on loopback (`tufrepo`, built by `make sigtools`), read by the
//! controller's root provider (`registry::sigstore_root`, tough). It fails closed: the target
//! the mirror serves is the root in use and is kept in the store with the metadata that
//! vouched for it; a rotated root is followed; across a restart with the mirror out of reach
//! the kept copy is verified again and used only until its metadata expires; a mirror that
//! serves what TUF refuses (go-tuf's refusals: a freeze, an expired snapshot or targets role, a
//! threshold not met, a wrong key, a hash mismatch, a rollback) is trusted for nothing, its
//! kept copy included, and a keyless election waits, naming the mirror and the refusal.

use crate::support::sigtools::bin_dir;
use image_reflector::registry::sigstore_root::{PublicGoodRoot, Settings, Source, TARGET};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

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

    /// The repository in `dir` made again with `flags` (its keys kept), still served.
    pub(super) fn remake(&self, dir: &Path, flags: &[&str]) {
        make_repository(dir, flags);
    }

    /// A repository whose target trusted_root.json is `root`, made in `dir` with `flags` and
    /// served; its anchor is `dir/anchor.json`.
    pub(super) fn serving(dir: &Path, root_json: &[u8], flags: &[&str]) -> Mirror {
        let tool = bin_dir().join("tufrepo");
        std::fs::write(dir.join("source.json"), root_json).unwrap();
        make_repository(dir, flags);
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

/// `tufrepo make` of `dir/source.json` into `dir` with `flags`, which must succeed.
fn make_repository(dir: &Path, flags: &[&str]) {
    let made = Command::new(bin_dir().join("tufrepo"))
        .arg("make")
        .arg(dir)
        .arg(dir.join("source.json"))
        .args(flags)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&made.stderr);
    assert!(made.status.success(), "{stderr}");
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

/// Settings whose mirror is a port nothing listens on: out of reach.
fn out_of_reach(anchor: &Path, cache: &Path) -> Settings {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    Settings {
        mirror: Some(format!("http://127.0.0.1:{port}").parse().unwrap()),
        anchor: Some(std::fs::read(anchor).unwrap()),
        cache: Some(cache.to_path_buf()),
    }
}

#[tokio::test]
#[ignore = "needs tufrepo: make e2e-signatures"]
async fn the_trusted_root_is_read_through_tuf_kept_and_verified_again_after_a_restart() {
    for flags in [&[][..], &["rotate"][..]] {
        let (repo, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mirror = Mirror::make(repo.path(), flags);
        let anchor = repo.path().join("anchor.json");
        let roots = PublicGoodRoot::new(settings(&mirror, &anchor, cache.path()));
        assert_eq!(
            roots.current().source,
            Source::Nothing,
            "another anchor, nothing read"
        );
        let current = roots.refresh().await;
        assert_eq!(
            (current.source, current.stale.clone()),
            (Source::Mirror, None),
            "{flags:?}"
        );
        assert_eq!(current.bytes.as_deref(), Some(ROOT));
        // Until the timestamp role expires, a day on.
        let expires = current.expires.unwrap();
        let day = SystemTime::now() + Duration::from_secs(24 * 3600);
        assert!(
            expires <= day && expires > day - Duration::from_secs(120),
            "{flags:?}"
        );
        assert_eq!(std::fs::read(cache.path().join(TARGET)).unwrap(), ROOT);
        // A restart with the mirror out of reach: the kept copy, verified again by TUF.
        let again = PublicGoodRoot::new(out_of_reach(&anchor, cache.path()));
        let current = again.refresh().await;
        assert_eq!(current.source, Source::Cached, "{:?}", current.stale);
        assert_eq!(
            (current.bytes.as_deref(), current.expires),
            (Some(ROOT), Some(expires))
        );
        let why = current.stale.clone().unwrap();
        assert!(why.contains("could not be read"), "{why}");
        assert!(
            why.contains("verified again from the TUF metadata kept in the store"),
            "{why}"
        );
    }
}

/// The kept copy stands in only until its metadata expires: then there is no root (another
/// anchor: never the embedded one).
#[tokio::test]
#[ignore = "needs tufrepo: make e2e-signatures"]
async fn a_kept_copy_stands_in_only_until_its_metadata_expires() {
    let (repo, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mirror = Mirror::make(repo.path(), &["expires-in=3s"]);
    let anchor = repo.path().join("anchor.json");
    let read = PublicGoodRoot::new(settings(&mirror, &anchor, cache.path()))
        .refresh()
        .await;
    assert_eq!(read.source, Source::Mirror, "{:?}", read.stale);
    drop(mirror);
    let kept = PublicGoodRoot::new(out_of_reach(&anchor, cache.path()));
    assert_eq!(kept.refresh().await.source, Source::Cached);
    while !read.expired(SystemTime::now()) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let current = kept.refresh().await;
    assert_eq!(
        (current.source, current.bytes.is_none()),
        (Source::Nothing, true)
    );
    let why = current.stale.clone().unwrap();
    assert!(
        why.contains("no root verified under the --sigstore-tuf-root anchor"),
        "{why}"
    );
    assert!(why.to_lowercase().contains("expired"), "{why}");
}

/// Each state go-tuf refuses, served by the mirror a client has read before: nothing it
/// served is trusted, the kept copy is forgotten, and after a restart with the mirror out of
/// reach there is still no root.
#[tokio::test]
#[ignore = "needs tufrepo: make e2e-signatures"]
async fn a_refused_mirror_is_trusted_for_nothing_across_a_restart() {
    let states: [(&str, &[&str], &[&str]); 7] = [
        ("freeze", &[], &["expired-timestamp"]),
        ("expired snapshot", &[], &["expired-snapshot"]),
        ("expired targets", &[], &["expired-targets"]),
        ("threshold", &[], &["threshold"]),
        ("wrong key", &[], &["wrong-key"]),
        ("hash mismatch", &[], &["hash-mismatch"]),
        ("rollback", &["version=2"], &["version=1"]),
    ];
    for (state, first, then) in states {
        let (repo, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mirror = Mirror::make(repo.path(), first);
        let anchor = repo.path().join("anchor.json");
        let read = PublicGoodRoot::new(settings(&mirror, &anchor, cache.path()))
            .refresh()
            .await;
        assert_eq!(read.source, Source::Mirror, "{state}: {:?}", read.stale);
        mirror.remake(repo.path(), then);
        // The threshold lives in the root: a client given the new one as its anchor.
        let anchor = repo.path().join("anchor.json");
        let roots = PublicGoodRoot::new(settings(&mirror, &anchor, cache.path()));
        let current = roots.refresh().await;
        assert_eq!(
            current.source,
            Source::Nothing,
            "{state}: {:?}",
            current.stale
        );
        assert!(current.bytes.is_none(), "{state}");
        let why = current.stale.clone().unwrap();
        let refused = format!("the TUF mirror {}/ served what TUF refuses (", mirror.url);
        assert!(why.starts_with(&refused), "{state}: {why}");
        assert!(!cache.path().join(TARGET).exists(), "{state}: forgotten");
        drop(mirror);
        let restarted = PublicGoodRoot::new(out_of_reach(&anchor, cache.path()));
        let current = restarted.refresh().await;
        assert_eq!(current.source, Source::Nothing, "{state} after a restart");
    }
}

/// The target is read up to 256 KiB (a trusted root's bound): a bigger one, though TUF vouches
/// for it, is refused, and nothing is kept.
#[tokio::test]
#[ignore = "needs tufrepo: make e2e-signatures"]
async fn a_target_over_256_kib_is_refused() {
    let (repo, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let big = format!("{{\"padding\": \"{}\"}}", "x".repeat(256 << 10));
    let mirror = Mirror::serving(repo.path(), big.as_bytes(), &[]);
    let anchor = repo.path().join("anchor.json");
    let roots = PublicGoodRoot::new(settings(&mirror, &anchor, cache.path()));
    let current = roots.refresh().await;
    assert_eq!(current.source, Source::Nothing);
    let why = current.stale.clone().unwrap();
    assert!(
        why.contains(
            "its trusted_root.json is not a usable trusted root: trusted_root.json is over \
             262144 bytes"
        ),
        "{why}"
    );
    assert!(!cache.path().join(TARGET).exists());
}
