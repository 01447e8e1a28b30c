//! The gated election on a real API server (`make e2e`): the CRD takes the new fields, the
//! controller reads the trusted keys' Secret through the API, writes `status.heldBack`, and
//! records `HeldBack` and `HeldBackElected` events; a registry with dated and signed images.

use crate::support::cluster::*;
use crate::support::distribution::{Distribution, Variant};
use crate::support::held_until;
use crate::support::images::{key, payload, public_pem_block, sign};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_gates_hold_back_explain_and_elect() {
    install_crds();
    let registry = Distribution::start(Variant::default());
    let now = Timestamp::now();
    let old = (now - SignedDuration::from_hours(30 * 24)).to_string();
    let two_hours_ago = now - SignedDuration::from_hours(2);
    let young = two_hours_ago.to_string();
    let repository = format!("{}/gates/app", registry.host);
    let v1 = registry
        .push_dated("gates/app", "1.0.0", "amd64", Some(&old), "a")
        .await;
    let v15 = registry
        .push_dated("gates/app", "1.5.0", "amd64", Some(&old), "b")
        .await;
    let v2 = registry
        .push_dated("gates/app", "2.0.0", "amd64", Some(&young), "c")
        .await;
    // Young and unsigned: held by two gates, the one time does not open first.
    let v21 = registry
        .push_dated("gates/app", "2.1.0", "amd64", Some(&young), "d")
        .await;
    for digest in [&v1, &v2] {
        let signature = sign(&key(3), payload(&repository, digest));
        registry
            .push_signatures("gates/app", digest, &[signature])
            .await;
    }
    let ns = Namespace(format!("image-reflector-gates-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let pem = public_pem_block(&key(3));
    let manifests = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: cosign-keys, namespace: {ns}}}\nstringData:\n  cosign.pub: |\n{pem}---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{image: {repository}, interval: 5m}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: vetted, namespace: {ns}}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n  \
         filterTags: {{minAge: 168h}}\n  platforms: [linux/amd64]\n  digestReflectionPolicy: IfNotPresent\n  \
         verify: {{provider: cosign, secretRef: {{name: cosign-keys}}}}\n",
        ns = ns.0
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let controller = Controller::start(&ns.0, &kubeconfig);

    wait_for(
        &ns.0,
        "imagepolicy/vetted",
        "{.status.latestRef.tag}",
        "1.0.0",
    );
    let policy = get_json(&ns.0, "imagepolicy/vetted");
    assert_eq!(policy["status"]["latestRef"]["digest"], v1.as_str());
    let held = &policy["status"]["heldBack"];
    let young_reason = held_until("minAge 168h", 168, "its creation", two_hours_ago);
    assert_eq!(held[0]["tag"], "2.1.0");
    assert_eq!(held[0]["digest"], v21.as_str());
    assert_eq!(held[0]["gate"], "verify", "{held}");
    assert_eq!(held[0]["alsoHeldBy"][0]["gate"], "minAge", "{held}");
    assert_eq!(held[0]["alsoHeldBy"][0]["reason"], young_reason.as_str());
    assert_eq!(held[1]["tag"], "2.0.0");
    assert_eq!(held[1]["digest"], v2.as_str());
    assert_eq!(held[1]["gate"], "minAge");
    assert_eq!(held[1]["reason"], young_reason.as_str());
    assert!(held[1].get("alsoHeldBy").is_none(), "{held}");
    assert_eq!(held[2]["tag"], "1.5.0");
    assert_eq!(held[2]["gate"], "verify");
    let ready = ok(kubectl(
        &[
            "get",
            "-n",
            &ns.0,
            "imagepolicy/vetted",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Ready\")].message}",
        ],
        None,
    ));
    assert!(
        ready.contains(&format!(
            "resolved to 1.0.0 with digest {v1}; 2.1.0 held back: no signature"
        )) && ready.ends_with("(and 2 more in status.heldBack)"),
        "{ready}"
    );

    // 1.5.0 gets signed; a requested reconcile looks anew and elects it.
    let signature = sign(&key(3), payload(&repository, &v15));
    registry
        .push_signatures("gates/app", &v15, &[signature])
        .await;
    request_reconcile(&ns.0, "imagepolicy/vetted", "e2e-gates");
    wait_for(
        &ns.0,
        "imagepolicy/vetted",
        "{.status.latestRef.tag}",
        "1.5.0",
    );
    let events: serde_json::Value = serde_json::from_str(&ok(kubectl(
        &["get", "events", "-n", &ns.0, "-o", "json"],
        None,
    )))
    .unwrap();
    let notes: Vec<(String, String, String)> = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["involvedObject"]["name"] == "vetted")
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (text("type"), text("reason"), text("message"))
        })
        .collect();
    let has = |type_: &str, reason: &str, start: &str| {
        notes
            .iter()
            .any(|(t, r, m)| t == type_ && r == reason && m.starts_with(start))
    };
    assert!(
        has(
            "Normal",
            "HeldBack",
            &format!("2.0.0 held back by minAge: {young_reason}")
        ),
        "{notes:?}"
    );
    // Every gate that holds it, in the one event.
    assert!(
        has(
            "Warning",
            "HeldBack",
            "2.1.0 held back by verify: no signature"
        ) && notes
            .iter()
            .any(|(_, _, m)| m.starts_with("2.1.0 held back by verify")
                && m.ends_with(&format!("; and by minAge: {young_reason}"))),
        "{notes:?}"
    );
    // An unsigned image beside the verified election: a Warning, for alerts to page on.
    assert!(
        has(
            "Warning",
            "HeldBack",
            "1.5.0 held back by verify: no signature"
        ),
        "{notes:?}"
    );
    assert!(
        has(
            "Normal",
            "HeldBackElected",
            "1.5.0 elected: it passes every gate now"
        ),
        "{notes:?}"
    );
    assert!(controller.stop().success());
}

/// `minAge` by first sighting on a real API server: a release backdated by a month that a
/// later scan lists for the first time is held, with the reason in status and in an event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_a_backdated_release_waits_from_its_first_sighting() {
    install_crds();
    let registry = Distribution::start(Variant::default());
    let now = Timestamp::now();
    let month_ago = (now - SignedDuration::from_hours(30 * 24)).to_string();
    let repository = format!("{}/seen/app", registry.host);
    let v1 = registry
        .push_dated("seen/app", "1.0.0", "amd64", Some(&month_ago), "a")
        .await;
    let ns = Namespace(format!("image-reflector-seen-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let manifests = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{image: {repository}, interval: 5m}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: aged, namespace: {ns}}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n  \
         filterTags: {{minAge: 168h}}\n  digestReflectionPolicy: IfNotPresent\n",
        ns = ns.0
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let controller = Controller::start(&ns.0, &kubeconfig);
    wait_for(
        &ns.0,
        "imagepolicy/aged",
        "{.status.latestRef.tag}",
        "1.0.0",
    );
    assert_eq!(
        get_json(&ns.0, "imagepolicy/aged")["status"]["latestRef"]["digest"],
        v1.as_str()
    );

    // The publisher pushes 1.1.0 dated a month back; the next scan sees it for the first time.
    registry
        .push_dated("seen/app", "1.1.0", "amd64", Some(&month_ago), "b")
        .await;
    request_reconcile(&ns.0, "imagerepository/app", "e2e-seen");
    wait_for(
        &ns.0,
        "imagepolicy/aged",
        "{.status.heldBack[0].tag}",
        "1.1.0",
    );
    let policy = get_json(&ns.0, "imagepolicy/aged");
    assert_eq!(policy["status"]["latestRef"]["tag"], "1.0.0");
    let reason = policy["status"]["heldBack"][0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("until ")
            && reason.contains(": minAge 168h after it was first seen at this digest ("),
        "{reason}"
    );
    let events = ok(kubectl(&["get", "events", "-n", &ns.0, "-o", "json"], None));
    assert!(
        events.contains(&format!("1.1.0 held back by minAge: {reason}")),
        "{events}"
    );
    assert!(controller.stop().success());
}
