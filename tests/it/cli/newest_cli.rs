//! `spec.policy.newest` through the binary: `scan` (a store of its own, so a first scan) dates
//! the tags of its one sighting by their images' creation times; `select`, offline, has no
//! first sightings and says what that changes.

use crate::support::distribution::{Distribution, Variant};
use crate::support::{run_bin, scan_yaml, write};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

const POLICY: &str = "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n\
                      metadata: {name: builds, namespace: team}\n\
                      spec:\n  imageRepositoryRef: {name: app}\n  policy: {newest: {}}\n";

#[tokio::test]
async fn scan_elects_the_latest_image_of_a_first_sighting_and_select_says_it_cannot() {
    let registry = Distribution::start(Variant::default());
    let now = Timestamp::now();
    let ago = |hours: i64| (now - SignedDuration::from_hours(hours)).to_string();
    for (tag, hours, content) in [
        ("main-f00", 30, "a"),
        ("main-0aa", 2, "b"),
        ("main-zz1", 9, "c"),
    ] {
        registry
            .push_dated("team/app", tag, "amd64", Some(&ago(hours)), content)
            .await;
    }
    let repository = format!("{}/team/app", registry.host);
    let dir = tempfile::tempdir().unwrap();
    let manifests = write(
        dir.path(),
        "builds.yaml",
        &format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
             spec: {{image: {repository}, interval: 5m}}\n---\n{POLICY}"
        ),
    );
    let scanned = scan_yaml(&manifests, &dir.path().join("store"));
    let stdout = &scanned.output;
    assert_eq!(scanned.code, Some(0), "{stdout}");
    assert_eq!(
        scanned.policy_status["latestRef"]["tag"].as_str(),
        Some("main-0aa"),
        "the latest image, not the greatest name: {stdout}"
    );

    let file = write(dir.path(), "policy.yaml", POLICY);
    let out = run_bin(
        &["select", "-f", &file, "--tags-file", "-"],
        Some("main-f00\nmain-0aa\nmain-zz1\n"),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "main-zz1\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("note: spec.policy.newest orders by when the controller first saw each tag, which select does not know"),
        "{stderr}"
    );
}
