//! The tag store on every directory a Pod can be given, opened by a process with the
//! Deployment's identity (uid 65532, gid 65532, fsGroup 1337 as a supplementary group), the way
//! kubelet prepares the volume: an emptyDir with and without fsGroup, a PVC root with
//! `lost+found`, a directory the process owns; and the causes a storage error must name
//! (permission, not a directory, a read-only or full filesystem).
//!
//! The store runs in a child (this test binary again, `store_as_pod_user`) started through
//! `setpriv`, and, for the filesystem cases, in a private mount namespace (`unshare -m`) with a
//! tmpfs of its own. Both need root, as CI has; without it these tests fail and say so.

use image_reflector::store::{FsStore, RepoKey, TagList, TagStore};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

const DIR_ENV: &str = "IMAGE_REFLECTOR_TEST_STORE_DIR";
const POD_UID: u32 = 65532;
const FS_GROUP: u32 = 1337;
const OUTCOME: &str = "store-outcome: ";

/// What the child does: open the store, write a plain and a gzipped list, read both back.
/// It prints `store-outcome: ok` or `store-outcome: error: <the store's message>` on a line of
/// its own (the test harness writes on the same line as the test's first output).
#[test]
#[ignore = "run by the store_volumes tests as uid 65532"]
fn store_as_pod_user() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let outcome = (|| {
        let store = FsStore::open(&dir, 256)?;
        let small = TagList::new(["1.0.0", "1.1.0"]).unwrap();
        let large = TagList::new((0..100).map(|i| format!("1.2.{i}"))).unwrap();
        let (a, b) = (key("team", "small"), key("team", "large"));
        store.set(&a, &small)?;
        store.set(&b, &large)?;
        assert_eq!(store.get(&a)?.0, small);
        assert_eq!(store.get(&b)?.0, large);
        Ok::<_, image_reflector::store::StoreError>(())
    })();
    match outcome {
        Ok(()) => println!("\n{OUTCOME}ok"),
        Err(e) => println!("\n{OUTCOME}error: {e}"),
    }
}

fn key(ns: &str, name: &str) -> RepoKey {
    RepoKey::new(ns, name).unwrap()
}

fn require_root() {
    let uid = std::fs::metadata("/proc/self").unwrap().uid();
    assert_eq!(
        uid, 0,
        "the store's volume tests start the store as uid {POD_UID} and mount filesystems: run \
         them as root (CI does), e.g. sudo make test"
    );
}

/// A directory that uid 65532 can reach: the parent of the volume is 0755.
fn workspace() -> tempfile::TempDir {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Makes `path` as kubelet makes a volume: owner, group and mode (setgid included).
fn volume(path: &Path, uid: u32, gid: u32, mode: u32) {
    std::fs::create_dir_all(path).unwrap();
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Runs the child as the Pod's user; `setup` is shell run first as root inside the child's own
/// mount namespace (for a tmpfs), where `$DIR` is the volume.
fn run_as_pod_user(dir: &Path, setup: Option<&str>) -> String {
    let exe = std::env::current_exe().unwrap();
    let child = format!(
        "exec setpriv --reuid={POD_UID} --regid={POD_UID} --groups={FS_GROUP} --inh-caps=-all \
         --bounding-set=-all -- \"$EXE\" --ignored --exact store::store_volumes::store_as_pod_user \
         --nocapture --test-threads=1"
    );
    let script = match setup {
        Some(setup) => format!("set -e; {setup}; {child}"),
        None => child,
    };
    let mut cmd = match setup {
        Some(_) => {
            let mut c = Command::new("unshare");
            c.args(["--mount", "--propagation", "private", "sh", "-c", &script]);
            c
        }
        None => {
            let mut c = Command::new("sh");
            c.args(["-c", &script]);
            c
        }
    };
    let out = cmd
        .env(DIR_ENV, dir)
        .env("DIR", dir)
        .env("EXE", exe)
        .output()
        .expect("sh, setpriv and unshare (util-linux) run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(OUTCOME))
        .unwrap_or_else(|| {
            panic!(
                "the store child printed no outcome (status {}):\n{stdout}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        });
    line.to_string()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().mode() & 0o7777
}

/// What the store made inside a volume is private to it, and the volume is as kubelet left it.
fn check_private_inside(root: &Path, volume_mode: u32, owner: (u32, u32)) {
    let meta = std::fs::metadata(root).unwrap();
    assert_eq!(
        (mode(root), meta.uid(), meta.gid()),
        (volume_mode, owner.0, owner.1),
        "the volume's mode and owner are never changed"
    );
    for dir in [
        "imagerepository",
        "imagerepository/team",
        "imagerepository/team/small",
    ] {
        let got = mode(&root.join(dir)) & 0o777;
        assert_eq!(got, 0o700, "{dir} is created private");
    }
    for file in [
        ".storage-version",
        "imagerepository/team/small/tags.txt",
        "imagerepository/team/large/tags.fc.gz",
    ] {
        let meta = std::fs::metadata(root.join(file)).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600, "{file} is private");
        assert_eq!(meta.uid(), POD_UID, "{file} belongs to the controller");
    }
}

#[test]
fn empty_dir_with_fs_group_root_owned_2777() {
    let ws = workspace();
    let root = ws.path().join("data");
    volume(&root, 0, FS_GROUP, 0o2777);
    assert_eq!(run_as_pod_user(&root, None), "ok");
    check_private_inside(&root, 0o2777, (0, FS_GROUP));
    // The setgid volume hands its group down, as kubelet means it to.
    let group = std::fs::metadata(root.join("imagerepository"))
        .unwrap()
        .gid();
    assert_eq!(group, FS_GROUP);
    // Opening again (a container restart) reads what is there.
    assert_eq!(run_as_pod_user(&root, None), "ok");
}

#[test]
fn empty_dir_without_fs_group_root_owned_0777() {
    let ws = workspace();
    let root = ws.path().join("data");
    volume(&root, 0, 0, 0o777);
    assert_eq!(run_as_pod_user(&root, None), "ok");
    check_private_inside(&root, 0o777, (0, 0));
}

#[test]
fn pvc_root_with_lost_and_found_is_used_not_wiped() {
    let ws = workspace();
    let root = ws.path().join("data");
    volume(&root, 0, FS_GROUP, 0o2775);
    // A fresh ext4 volume: lost+found, root-only. It is the filesystem's, not another format.
    volume(&root.join("lost+found"), 0, 0, 0o700);
    assert_eq!(run_as_pod_user(&root, None), "ok");
    check_private_inside(&root, 0o2775, (0, FS_GROUP));
    assert!(root.join("lost+found").is_dir(), "lost+found is left alone");

    // Another format beside lost+found (Flux's Badger files) is still wiped, lost+found kept.
    std::fs::remove_file(root.join(".storage-version")).unwrap();
    std::fs::write(root.join("000001.vlog"), b"badger").unwrap();
    std::os::unix::fs::chown(root.join("000001.vlog"), Some(POD_UID), Some(POD_UID)).unwrap();
    assert_eq!(run_as_pod_user(&root, None), "ok");
    assert!(
        !root.join("000001.vlog").exists(),
        "the foreign format is wiped"
    );
    assert!(root.join("lost+found").is_dir());
}

#[test]
fn directory_the_process_owns_keeps_its_mode() {
    let ws = workspace();
    let root = ws.path().join("data");
    volume(&root, POD_UID, POD_UID, 0o755);
    assert_eq!(run_as_pod_user(&root, None), "ok");
    check_private_inside(&root, 0o755, (POD_UID, POD_UID));
}

#[test]
fn missing_directory_is_created_private() {
    let ws = workspace();
    let parent = ws.path().join("volume");
    volume(&parent, 0, FS_GROUP, 0o2777);
    let root = parent.join("store/nested");
    assert_eq!(run_as_pod_user(&root, None), "ok");
    assert_eq!(mode(&root) & 0o777, 0o700);
    assert_eq!(mode(&parent.join("store")) & 0o777, 0o700);
    assert_eq!(std::fs::metadata(&root).unwrap().uid(), POD_UID);
}

#[test]
fn unwritable_directory_names_the_permission_and_the_user() {
    let ws = workspace();
    let root = ws.path().join("data");
    volume(&root, 0, 0, 0o755);
    let out = run_as_pod_user(&root, None);
    assert!(
        out.starts_with(&format!(
            "error: writing {}/.tmp-.storage-version",
            root.display()
        )) && out.contains("Permission denied")
            && out.contains("the controller runs as uid 65532, gid 65532")
            && out.contains("fsGroup"),
        "{out}"
    );
}

#[test]
fn a_file_at_the_storage_path_is_named_as_not_a_directory() {
    let ws = workspace();
    let root = ws.path().join("data");
    std::fs::write(&root, b"").unwrap();
    let out = run_as_pod_user(&root, None);
    assert!(
        out.starts_with(&format!("error: opening {}: ", root.display()))
            && out.contains("not a directory; the storage path and every directory above it"),
        "{out}"
    );
    // A file in the middle of the path.
    let out = run_as_pod_user(&root.join("store"), None);
    assert!(
        out.contains("Not a directory (os error 20); the storage path"),
        "{out}"
    );
}

#[test]
fn read_only_filesystem_is_named() {
    let ws = workspace();
    let root = ws.path().join("data");
    volume(&root, 0, 0, 0o755);
    let out = run_as_pod_user(&root, Some("mount -t tmpfs -o ro,mode=0777 tmpfs \"$DIR\""));
    assert!(
        out.contains("Read-only file system")
            && out.contains("the filesystem is read-only: mount a writable volume"),
        "{out}"
    );
}

#[test]
fn full_filesystem_is_named() {
    let ws = workspace();
    let root = ws.path().join("data");
    volume(&root, 0, 0, 0o755);
    // A 64 KiB tmpfs, filled up to its last block by root before the store writes.
    let fill = "mount -t tmpfs -o size=64k,mode=0777 tmpfs \"$DIR\"; \
                mkdir -m 0777 \"$DIR/imagerepository\"; \
                printf '2\\n' > \"$DIR/.storage-version\"; chmod 0666 \"$DIR/.storage-version\"; \
                dd if=/dev/zero of=\"$DIR/filler\" bs=4k 2>/dev/null || true";
    let out = run_as_pod_user(&root, Some(fill));
    assert!(
        out.contains("No space left on device") && out.contains("the filesystem is full"),
        "{out}"
    );
}
