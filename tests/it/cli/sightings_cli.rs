//! The offline tools and the controller's clocks (issue 74, item 6): `scan` on a copy of the
//! controller's store elects as the controller does, with its first sightings; on a store of
//! its own it makes a first scan, says that first sightings are unknown and what that changes.

use crate::support::distribution::{Distribution, Variant};
use crate::support::{run_bin, scan_yaml, write};
use image_reflector::store::{FsStore, RepoKey, TagList, TagStore, DEFAULT_COMPRESSION_THRESHOLD};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

#[tokio::test]
async fn scan_on_the_controllers_store_keeps_its_first_sightings() {
    let registry = Distribution::start(Variant::default());
    let now = Timestamp::now();
    let month_ago = (now - SignedDuration::from_hours(30 * 24)).to_string();
    // Both dated a month back; 1.1.0 was pushed (and first listed) an hour ago.
    for (tag, content) in [("1.0.0", "a"), ("1.1.0", "b")] {
        registry
            .push_dated("team/app", tag, "amd64", Some(&month_ago), content)
            .await;
    }
    let dir = tempfile::tempdir().unwrap();
    // The controller's store, as `kubectl cp` copies /data: 1.0.0 listed at its first scan,
    // 1.1.0 an hour ago.
    let copied = dir.path().join("data");
    let store = FsStore::open(&copied, DEFAULT_COMPRESSION_THRESHOLD).unwrap();
    let key = RepoKey::new("team", "app").unwrap();
    let hour_ago = (now - SignedDuration::from_hours(1)).as_second();
    store
        .set_seen(&key, &TagList::new(["1.0.0"]).unwrap(), hour_ago - 60)
        .unwrap();
    store
        .set_seen(&key, &TagList::new(["1.0.0", "1.1.0"]).unwrap(), hour_ago)
        .unwrap();
    drop(store);
    let manifests = write(
        dir.path(),
        "live.yaml",
        &format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
             spec: {{image: {}/team/app, interval: 5m}}\n---\n\
             apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: aged, namespace: team}}\n\
             spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n  \
             filterTags: {{minAge: 168h}}\n",
            registry.host
        ),
    );
    let scan = |storage: &std::path::Path| {
        let scanned = scan_yaml(&manifests, storage);
        (scanned.policy_status, scanned.output)
    };
    // The copy as users make it: `store archive` (the image has no tar), then extracted.
    let out = run_bin(
        &[
            "store",
            "archive",
            "--storage-path",
            copied.to_str().unwrap(),
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let extracted = dir.path().join("extracted");
    tar::Archive::new(out.stdout.as_slice())
        .unpack(&extracted)
        .unwrap();
    // On the copy: 1.1.0 was first seen an hour ago, so minAge holds it, as in the controller.
    let (status, stderr) = scan(&extracted);
    assert_eq!(status["latestRef"]["tag"], "1.0.0", "{status}");
    let reason = status["heldBack"][0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("until ")
            && reason.contains(": minAge 168h after it was first seen at this digest ("),
        "{reason}"
    );
    assert!(!stderr.contains("first sightings"), "{stderr}");
    // On a store of its own: a first scan, creation times alone, and a note that says so.
    let (status, stderr) = scan(&dir.path().join("fresh"));
    assert_eq!(status["latestRef"]["tag"], "1.1.0", "{status}");
    assert!(
        stderr.contains(
            "note: ImagePolicy team/aged: the first sightings of team/app are unknown here"
        ),
        "{stderr}"
    );
}
