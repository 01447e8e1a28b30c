//! A tag the registry refuses to serve (issue 92, item 2), through `scan` against a registry
//! with a pull cooldown (`support::registry_cooldown`): a gated policy holds the refused tag
//! back by `served`, in the registry's words, and elects the best tag it serves; a policy
//! without gates fails as Flux's digest fetch does, naming the refusal, and elects nothing.

use crate::support::registry_cooldown::{registry, Published, DENIED};
use crate::support::{scan_yaml, write};

fn objects(host: &str, policy: &str) -> String {
    format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
         spec: {{image: {host}/app, interval: 5m, insecure: true}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: team}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n  \
         digestReflectionPolicy: IfNotPresent\n{policy}"
    )
}

#[tokio::test]
async fn a_tag_the_registry_refuses_is_held_back_and_the_best_served_is_elected() {
    let images = [
        Published {
            tag: "1.0.0",
            days_ago: 30,
        },
        Published {
            tag: "1.1.0",
            days_ago: 10,
        },
        Published {
            tag: "1.2.0",
            days_ago: 2,
        },
    ];
    let (server, digests) = registry(&images, 7).await;
    let host = server.host();
    let dir = tempfile::tempdir().unwrap();
    let gated = write(
        dir.path(),
        "gated.yaml",
        &objects(&host, "  filterTags: {minAge: 1h}\n"),
    );
    let scanned = tokio::task::spawn_blocking({
        let store = dir.path().join("gated");
        move || scan_yaml(&gated, &store)
    })
    .await
    .unwrap();
    let status = &scanned.policy_status;
    assert_eq!(status["latestRef"]["tag"], "1.1.0", "{}", scanned.output);
    assert_eq!(status["latestRef"]["digest"], digests["1.1.0"].as_str());
    let held = &status["heldBack"][0];
    assert_eq!(held["tag"], "1.2.0", "{status}");
    assert_eq!(held["gate"], "served");
    assert_eq!(
        held["reason"],
        format!("the registry refuses to serve it: 403 Forbidden: DENIED: {DENIED}").as_str()
    );
    assert!(held.get("digest").is_none(), "{held}");
    assert_eq!(scanned.code, Some(0), "{}", scanned.output);

    // Without gates: Flux's digest failure, with the registry's words; nothing elected.
    let flux = write(dir.path(), "flux.yaml", &objects(&host, ""));
    let scanned = tokio::task::spawn_blocking({
        let store = dir.path().join("flux");
        move || scan_yaml(&flux, &store)
    })
    .await
    .unwrap();
    assert!(
        scanned.policy_status.get("latestRef").is_none(),
        "{}",
        scanned.output
    );
    assert!(
        scanned.output.contains("failed fetching digest of")
            && scanned
                .output
                .contains(&format!("403 Forbidden: DENIED: {DENIED}")),
        "{}",
        scanned.output
    );
    assert_ne!(scanned.code, Some(0));
}
