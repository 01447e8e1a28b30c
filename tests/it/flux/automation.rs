//! image-automation-controller commits what our policies elect: the image, tag, name and
//! digest setters of a Deployment in Git follow `status.latestRef`: a higher tag, the same tag
//! re-pushed as new content under `digestReflectionPolicy: Always`, a gated policy's tag
//! only once its gate passes, and a newest-pushed policy's (`policy.newest`) last push; and a gate turned on under `downgrade: Refuse` commits no
//! rollback (issue 69).

use super::until;
use crate::support::cluster::{
    install_crds, kubectl, ok, request_reconcile, Controller, Namespace,
};
use crate::support::distribution::{Distribution, Variant};
use crate::support::flux::{install_flux_crds, Component};
use crate::support::git_server::GitServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster and Flux: make e2e-flux"]
async fn flux_image_automation_commits_what_our_policies_elect() {
    install_crds();
    install_flux_crds();
    let registry = Distribution::start(Variant::default());
    let first = registry
        .push_image("demo/app", &["1.0.0".to_string()])
        .await;
    let ns = Namespace(format!("image-reflector-flux-iac-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let host = registry.host.clone();
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n\
         \x20       - name: app\n          image: {host}/demo/app:0.0.1 # {{\"$imagepolicy\": \"{ns}:app\"}}\n\
         \x20         env:\n\
         \x20           - name: TAG\n              value: \"0.0.1\" # {{\"$imagepolicy\": \"{ns}:app:tag\"}}\n\
         \x20           - name: NAME\n              value: \"none\" # {{\"$imagepolicy\": \"{ns}:app:name\"}}\n\
         \x20           - name: DIGEST\n              value: \"none\" # {{\"$imagepolicy\": \"{ns}:app:digest\"}}\n\
         \x20       - name: arm\n          image: {host}/demo/app:0.0.1 # {{\"$imagepolicy\": \"{ns}:arm\"}}\n\
         \x20       - name: newest\n          image: {host}/demo/app:0.0.1 # {{\"$imagepolicy\": \"{ns}:newest\"}}\n",
        ns = ns.0
    );
    let git = GitServer::start().await;
    git.create("fleet", &[("apps/deploy.yaml", &deployment)]);
    let objects = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{image: {host}/demo/app, interval: 1h}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: app}}, policy: {{semver: {{range: '>=1.0.0'}}}}, digestReflectionPolicy: Always, interval: 10s}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: arm, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: app}}, policy: {{semver: {{range: '>=1.0.0'}}}}, platforms: [linux/arm64]}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: newest, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: app}}, policy: {{newest: {{}}}}}}\n---\n",
        ns = ns.0,
    ) + &super::fleet_automation(&ns.0, &git.url("fleet"));
    ok(kubectl(&["apply", "-f", "-"], Some(&objects)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = crate::support::cluster::install_and_controller_kubeconfig(dir.path());
    let controller = Controller::start(&ns.0, &kubeconfig);
    let automation = Component::start("image-automation-controller", &ns.0, &[]);
    let file = || git.read("fleet", "main", "apps/deploy.yaml");
    let log = || {
        format!(
            "{}\n--- image-automation-controller:\n{}",
            file(),
            automation.log_text()
        )
    };

    // The first election, with its digest: image, tag, name and digest setters.
    let image = format!("{host}/demo/app:1.0.0@{first}");
    until(60, "the first election committed", log, || {
        file().contains(&image)
    })
    .await;
    let text = file();
    assert!(text.contains("value: \"1.0.0\""), "{text}");
    assert!(
        text.contains(&format!("value: \"{host}/demo/app\"")),
        "{text}"
    );
    assert!(text.contains(&format!("value: \"{first}\"")), "{text}");
    assert!(
        text.contains(&format!(
            "image: {host}/demo/app:0.0.1 # {{\"$imagepolicy\": \"{}:arm\"}}",
            ns.0
        )),
        "the gated policy elected nothing yet (no tag has linux/arm64), so its line stays: {text}"
    );

    // A higher tag: a new commit once our policy elects it.
    let second = registry
        .push_image_variant("demo/app", &["1.1.0".to_string()], "b")
        .await;
    request_reconcile(&ns.0, "imagerepository/app", "second");
    let image = format!("{host}/demo/app:1.1.0@{second}");
    until(60, "the higher tag committed", log, || {
        file().contains(&image)
    })
    .await;

    // The same tag re-pushed as new content: Always reads its digest again (10 s), and the
    // new digest is committed.
    let third = registry
        .push_image_variant("demo/app", &["1.1.0".to_string()], "c")
        .await;
    assert_ne!(second, third);
    let image = format!("{host}/demo/app:1.1.0@{third}");
    until(60, "the re-pushed tag's digest committed", log, || {
        file().contains(&image)
    })
    .await;
    assert!(file().contains(&format!("value: \"{third}\"")));

    // An index with linux/arm64: the gated policy's tag passes its gate and is committed.
    registry.push_index("demo/app", "2.0.0", false).await;
    request_reconcile(&ns.0, "imagerepository/app", "index");
    let arm = format!(
        "image: {host}/demo/app:2.0.0 # {{\"$imagepolicy\": \"{}:arm\"}}",
        ns.0
    );
    until(60, "the gated policy's tag committed", log, || {
        file().contains(&arm)
    })
    .await;
    let newest = |tag: &str| {
        format!(
            "image: {host}/demo/app:{tag} # {{\"$imagepolicy\": \"{}:newest\"}}",
            ns.0
        )
    };
    until(
        60,
        "the last push committed for the newest order",
        log,
        || file().contains(&newest("2.0.0")),
    )
    .await;
    // A tag no version order would elect: pushed last, the newest order commits it, and the
    // semver policies keep theirs.
    registry
        .push_image_variant("demo/app", &["hotfix-1".to_string()], "h")
        .await;
    request_reconcile(&ns.0, "imagerepository/app", "hotfix");
    until(60, "the newest push committed", log, || {
        file().contains(&newest("hotfix-1"))
    })
    .await;
    assert!(file().contains(&arm), "{}", file());
    let subjects = git.subjects("fleet", "main");
    assert!(subjects.len() >= 6, "one commit per change: {subjects:?}");
    assert!(subjects.iter().all(|s| !s.is_empty()), "{subjects:?}");
    assert!(controller.stop().success());
}

/// Issue 69, as a new user met it: a live `downgrade: Refuse` policy at 1.5.0 (seconds old)
/// gets `filterTags.minAge: 1h`. Before the fix the new generation lifted the guard, 1.2.0 was
/// elected and image-automation-controller committed the rollback to Git. Now the policy keeps
/// 1.5.0, holding it back until it is old enough, and Git keeps 1.5.0 through the automation's
/// next run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster and Flux: make e2e-flux"]
async fn flux_image_automation_commits_no_rollback_when_a_gate_is_turned_on() {
    use crate::support::cluster::{get_json, wait_for};
    use k8s_openapi::jiff::{SignedDuration, Timestamp};
    install_crds();
    install_flux_crds();
    let registry = Distribution::start(Variant::default());
    let now = Timestamp::now();
    let month = (now - SignedDuration::from_hours(30 * 24)).to_string();
    let seconds = now.to_string();
    registry
        .push_dated("demo/app", "1.2.0", "amd64", Some(&month), "old")
        .await;
    registry
        .push_dated("demo/app", "1.5.0", "amd64", Some(&seconds), "new")
        .await;
    let ns = Namespace(format!(
        "image-reflector-flux-rollback-{}",
        std::process::id()
    ));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let host = registry.host.clone();
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n\
         \x20       - name: app\n          image: {host}/demo/app:0.0.1 # {{\"$imagepolicy\": \"{ns}:app\"}}\n",
        ns = ns.0
    );
    let git = GitServer::start().await;
    git.create("fleet", &[("apps/deploy.yaml", &deployment)]);
    let objects = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{image: {host}/demo/app, interval: 1h}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: app}}, policy: {{semver: {{range: '>=1.0.0'}}}}, downgrade: Refuse}}\n---\n",
        ns = ns.0,
    ) + &super::fleet_automation(&ns.0, &git.url("fleet"));
    ok(kubectl(&["apply", "-f", "-"], Some(&objects)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = crate::support::cluster::install_and_controller_kubeconfig(dir.path());
    let controller = Controller::start(&ns.0, &kubeconfig);
    let automation = Component::start("image-automation-controller", &ns.0, &[]);
    let file = || git.read("fleet", "main", "apps/deploy.yaml");
    let log = || {
        format!(
            "{}\n--- image-automation-controller:\n{}",
            file(),
            automation.log_text()
        )
    };
    let at = |tag: &str| format!("image: {host}/demo/app:{tag} #");
    until(60, "1.5.0 committed", log, || file().contains(&at("1.5.0"))).await;
    let commits = git.subjects("fleet", "main").len();

    // The gate is turned on: 1.5.0 is seconds old, 1.2.0 a month.
    let patch = r#"{"spec":{"filterTags":{"minAge":"1h"}}}"#;
    let args = [
        "patch",
        "-n",
        &ns.0,
        "imagepolicy/app",
        "--type=merge",
        "-p",
        patch,
    ];
    ok(kubectl(&args, None));
    wait_for(
        &ns.0,
        "imagepolicy/app",
        "{.status.heldBack[0].gate}",
        "minAge",
    );
    let policy = get_json(&ns.0, "imagepolicy/app");
    assert_eq!(policy["status"]["latestRef"]["tag"], "1.5.0", "{policy}");
    assert_eq!(policy["status"]["heldBack"][0]["tag"], "1.5.0", "{policy}");
    assert_eq!(
        policy["status"]["heldBack"][0]["gate"], "minAge",
        "{policy}"
    );

    // The automation runs again, on request, and commits nothing.
    request_reconcile(&ns.0, "imageupdateautomation/fleet", "after-min-age");
    wait_for(
        &ns.0,
        "imageupdateautomation/fleet",
        "{.status.lastHandledReconcileAt}",
        "after-min-age",
    );
    let text = file();
    assert!(
        text.contains(&at("1.5.0")),
        "no rollback committed:\n{}",
        log()
    );
    assert!(!text.contains(&at("1.2.0")), "{text}");
    assert_eq!(
        git.subjects("fleet", "main").len(),
        commits,
        "no new commit"
    );
    assert!(controller.stop().success());
}
