//! The real `flux` CLI drives our controller as it drives Flux's: `get images all`,
//! `reconcile image repository|policy` (which wait for `status.lastHandledReconcileAt`),
//! `suspend` and `resume` of both kinds, `create image repository|policy --export` output
//! applied and reconciled, and `events` in Flux's form; and `flux reconcile` on a `verify`
//! policy, which re-checks signatures and never elects what the gate refuses (issue 69).

use crate::support::cluster::{
    get_json, install_crds, kubectl, ok, wait_for, Controller, Namespace,
};
use crate::support::distribution::{Distribution, Variant};
use crate::support::flux::{flux, kstatus};

const READY_REASON: &str = "{.status.conditions[?(@.type==\"Ready\")].reason}";

/// `flux args...` in `ns`, which must succeed; its standard output and error.
fn flux_ok(ns: &str, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["--namespace", ns, "--timeout=60s"]);
    let out = flux(&all);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "flux {args:?} failed:\n{text}");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster and Flux: make e2e-flux"]
async fn flux_cli_drives_our_objects() {
    install_crds();
    let registry = Distribution::start(Variant::default());
    registry
        .push_image("demo/app", &["1.0.0".to_string()])
        .await;
    let ns = Namespace(format!("image-reflector-flux-cli-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = crate::support::cluster::install_and_controller_kubeconfig(dir.path());
    let controller = Controller::start(&ns.0, &kubeconfig);

    // Objects as `flux create ... --export` writes them, applied as they are.
    let image = format!("{}/demo/app", registry.host);
    let repo = flux_ok(
        &ns.0,
        &[
            "create",
            "image",
            "repository",
            "app",
            "--image",
            &image,
            "--interval=1h",
            "--export",
        ],
    );
    let policy = flux_ok(
        &ns.0,
        &[
            "create",
            "image",
            "policy",
            "app",
            "--image-ref=app",
            "--select-semver=>=1.0.0",
            "--export",
        ],
    );
    assert!(
        repo.contains("kind: ImageRepository") && policy.contains("kind: ImagePolicy"),
        "{repo}{policy}"
    );
    ok(kubectl(
        &["apply", "-n", &ns.0, "-f", "-"],
        Some(&format!("{repo}\n---\n{policy}")),
    ));
    wait_for(&ns.0, "imagepolicy/app", "{.status.latestRef.tag}", "1.0.0");

    // get images all: our objects, their last scan, the latest image and Ready's message.
    // Across namespaces, as users list them (`-A`): ours are among them.
    let out = flux(&["get", "images", "all", "-A"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: String = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            l.starts_with("NAMESPACE")
                || l.starts_with(&format!("{}\t", ns.0))
                || l.starts_with(&format!("{} ", ns.0))
        })
        .map(|l| {
            format!(
                "{}\n",
                l.split_once(char::is_whitespace)
                    .map_or(l, |(_, rest)| rest.trim_start())
            )
        })
        .collect();
    assert!(
        listed.contains("imagerepository/app") && listed.contains("imagepolicy/app"),
        "{listed}"
    );
    let policy_line = listed
        .lines()
        .find(|l| l.starts_with("imagepolicy/app"))
        .unwrap_or_default();
    let columns: Vec<&str> = policy_line.split('\t').map(str::trim).collect();
    assert_eq!(
        columns[..4],
        ["imagepolicy/app", image.as_str(), "1.0.0", "True"],
        "the elected image and tag:\n{listed}"
    );
    assert!(
        listed.contains("successful scan: found 1 tags"),
        "Ready's message:\n{listed}"
    );

    // reconcile: annotates, then waits for lastHandledReconcileAt and Ready.
    registry
        .push_image_variant("demo/app", &["1.1.0".to_string()], "b")
        .await;
    let out = flux_ok(&ns.0, &["reconcile", "image", "repository", "app"]);
    assert!(out.contains("✔ scan fetched 2 tags"), "{out}");
    let out = flux_ok(&ns.0, &["reconcile", "image", "policy", "app"]);
    assert!(out.contains("1.1.0"), "the policy's new election:\n{out}");

    // suspend and resume, both kinds.
    for kind in ["repository", "policy"] {
        flux_ok(&ns.0, &["suspend", "image", kind, "app"]);
        let got = ok(kubectl(
            &[
                "get",
                "-n",
                &ns.0,
                &format!("image{kind}/app"),
                "-o",
                "jsonpath={.spec.suspend}",
            ],
            None,
        ));
        assert_eq!(got, "true", "{kind} suspended");
        let out = flux_ok(&ns.0, &["resume", "image", kind, "app"]);
        assert!(
            out.contains("resumed")
                || out.contains("Resumed")
                || out.contains("reconciliation completed"),
            "{kind}:\n{out}"
        );
    }

    // events: ours, in Flux's form (reason and message of the election).
    let events = flux_ok(&ns.0, &["events", "--for", "ImagePolicy/app"]);
    assert!(events.contains("resolved to 1.1.0"), "{events}");
    assert!(controller.stop().success());
}

/// Issue 69, as users met it: `flux reconcile image policy` on a policy with `spec.verify`.
/// 2.0.0 is unsigned, 1.9.0 signed by a key the policy does not trust, 1.8.0 by the trusted
/// one. Before the fix the requested reconcile discarded the very check it made and elected
/// 2.0.0; now it re-checks and keeps 1.8.0, holding both above it back, and a signature pushed
/// since is what a later `flux reconcile` elects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster and Flux: make e2e-flux"]
async fn flux_reconcile_never_elects_what_verify_holds_back() {
    use crate::support::images::{key, payload, public_pem_block, sign};
    install_crds();
    let registry = Distribution::start(Variant::default());
    let repository = format!("{}/signed/app", registry.host);
    let mut digests = Vec::new();
    for tag in ["1.8.0", "1.9.0", "2.0.0"] {
        let digest = registry
            .push_image_variant("signed/app", &[tag.to_string()], tag)
            .await;
        digests.push(digest);
    }
    let (trusted, untrusted) = (key(3), key(4));
    for (digest, signer) in [(&digests[0], &trusted), (&digests[1], &untrusted)] {
        let signature = sign(signer, payload(&repository, digest));
        registry
            .push_signatures("signed/app", digest, &[signature])
            .await;
    }
    let ns = Namespace(format!(
        "image-reflector-flux-verify-{}",
        std::process::id()
    ));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let pem = public_pem_block(&trusted);
    let manifests = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: cosign-keys, namespace: {ns}}}\nstringData:\n  cosign.pub: |\n{pem}---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{image: {repository}, interval: 1h}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n  \
         verify: {{provider: cosign, secretRef: {{name: cosign-keys}}}}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {{name: wrong-key, namespace: {ns}}}\nstringData:\n  cosign.pub: |\n{wrong}---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: wrong-key, namespace: {ns}}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n  \
         verify: {{provider: cosign, secretRef: {{name: wrong-key}}}}\n",
        ns = ns.0,
        wrong = public_pem_block(&key(5))
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = crate::support::cluster::install_and_controller_kubeconfig(dir.path());
    let controller = Controller::start(&ns.0, &kubeconfig);
    wait_for(&ns.0, "imagepolicy/app", "{.status.latestRef.tag}", "1.8.0");

    let held = |policy: &serde_json::Value| -> Vec<(String, String)> {
        let entries = policy["status"]["heldBack"].as_array().cloned();
        let text = |e: &serde_json::Value, k: &str| e[k].as_str().unwrap_or_default().to_string();
        entries
            .unwrap_or_default()
            .iter()
            .map(|e| (text(e, "tag"), text(e, "gate")))
            .collect()
    };
    let verify = |tag: &str| (tag.to_string(), "verify".to_string());
    for round in 0..2 {
        let out = flux_ok(&ns.0, &["reconcile", "image", "policy", "app"]);
        let policy = get_json(&ns.0, "imagepolicy/app");
        assert_eq!(
            policy["status"]["latestRef"]["tag"], "1.8.0",
            "round {round}: flux reconcile elected past the gate:\n{out}\n{policy}"
        );
        assert_eq!(
            held(&policy),
            [verify("2.0.0"), verify("1.9.0")],
            "{policy}"
        );
        assert!(
            policy["status"]["lastHandledReconcileAt"].is_string(),
            "the request was handled: {policy}"
        );
    }

    // A key that signed nothing: every tag held, a steady state. `flux reconcile` returns at
    // once with the reason, not `context deadline exceeded` (issue 90: it waited out its
    // timeout while Reconciling stayed True, and kstatus reads a False Ready without Stalled
    // as in progress).
    wait_for(
        &ns.0,
        "imagepolicy/wrong-key",
        READY_REASON,
        "NoEligibleTag",
    );
    let out = flux(&[
        "reconcile",
        "image",
        "policy",
        "wrong-key",
        "-n",
        &ns.0,
        "--timeout=60s",
    ]);
    let said = String::from_utf8_lossy(&out.stderr);
    let policy = get_json(&ns.0, "imagepolicy/wrong-key");
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(
            "✗ no tag passes the gates among the 3 best candidates (2.0.0 held back: no signature"
        ),
        "{said}{policy}"
    );
    // Settled as kstatus reads a terminal state: Stalled with the reason, not Reconciling.
    let conditions: Vec<(&str, &str)> = policy["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].as_str().unwrap(), c["reason"].as_str().unwrap()))
        .collect();
    let settled = [("Stalled", "NoEligibleTag"), ("Ready", "NoEligibleTag")];
    assert_eq!(conditions, settled, "{policy}");
    assert_eq!(policy["status"]["observedGeneration"], 1, "{policy}");
    // `kubectl wait` on the terminal condition returns at once too.
    let waited = kubectl(
        &[
            "wait",
            "-n",
            &ns.0,
            "imagepolicy/wrong-key",
            "--for=condition=Stalled=True",
            "--timeout=10s",
        ],
        None,
    );
    assert!(waited.status.success(), "{waited:?}");
    // So does a Kustomization's health check over it: Flux's kstatus reads it as failed, with
    // the reason, and the policy that elects as current.
    let (health, said) = kstatus(&policy);
    assert_eq!(health, "Failed", "{said}");
    assert!(said.starts_with("no tag passes the gates"), "{said}");
    let (health, said) = kstatus(&get_json(&ns.0, "imagepolicy/app"));
    assert_eq!(health, "Current", "{said}");

    // 2.0.0 signed by the trusted key since: the next requested reconcile elects it.
    let signature = sign(&trusted, payload(&repository, &digests[2]));
    registry
        .push_signatures("signed/app", &digests[2], &[signature])
        .await;
    let out = flux_ok(&ns.0, &["reconcile", "image", "policy", "app"]);
    let policy = get_json(&ns.0, "imagepolicy/app");
    assert_eq!(
        policy["status"]["latestRef"]["tag"], "2.0.0",
        "{out}\n{policy}"
    );
    assert!(policy["status"]["heldBack"].is_null(), "{policy}");
    assert!(controller.stop().success());
}

/// `minAgeByBump` and `policy.newest` on the real API server, shown by the real `flux` CLI
/// (issue 74, items 2, 3 and 8): the first election waits `minAge`; `flux reconcile` then
/// elects the day-old patch from it while the major waits its own 30 days, and `flux get image
/// policy` says so; a newest policy over the same first scan elects the latest image.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster and Flux: make e2e-flux"]
async fn flux_cli_shows_each_bump_waiting_its_own_age() {
    install_crds();
    let registry = Distribution::start(Variant::default());
    let now = k8s_openapi::jiff::Timestamp::now();
    let ago =
        |days: i64| (now - k8s_openapi::jiff::SignedDuration::from_hours(days * 24)).to_string();
    for (tag, days, content) in [("1.4.2", 60, "a"), ("1.4.3", 2, "b"), ("2.0.0", 10, "c")] {
        registry
            .push_dated("cooled/app", tag, "amd64", Some(&ago(days)), content)
            .await;
    }
    let ns = Namespace(format!(
        "image-reflector-flux-cooldown-{}",
        std::process::id()
    ));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = crate::support::cluster::install_and_controller_kubeconfig(dir.path());
    let controller = Controller::start(&ns.0, &kubeconfig);
    let manifests = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{image: {host}/cooled/app, interval: 1h}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n  \
         filterTags:\n    minAge: 1440h\n    minAgeByBump: {{major: 720h, patch: 24h}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: newest, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: app}}, policy: {{newest: {{}}}}}}\n",
        ns = ns.0,
        host = registry.host
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    wait_for(&ns.0, "imagepolicy/app", "{.status.latestRef.tag}", "1.4.2");
    flux_ok(&ns.0, &["reconcile", "image", "policy", "app"]);
    let policy = get_json(&ns.0, "imagepolicy/app");
    assert_eq!(policy["status"]["latestRef"]["tag"], "1.4.3", "{policy}");
    let major = crate::support::held_until(
        "minAgeByBump.major 720h (a major bump)",
        720,
        "its creation",
        now - k8s_openapi::jiff::SignedDuration::from_hours(10 * 24),
    );
    assert_eq!(policy["status"]["heldBack"][0]["reason"], major.as_str());
    let got = flux_ok(&ns.0, &["get", "image", "policy", "app"]);
    assert!(
        got.contains("1.4.3") && got.contains(&format!("2.0.0 held back: {major}")),
        "{got}"
    );
    // One sighting (the first scan): the latest image, 1.4.3 (two days old), not 2.0.0.
    wait_for(
        &ns.0,
        "imagepolicy/newest",
        "{.status.latestRef.tag}",
        "1.4.3",
    );
    let got = flux_ok(&ns.0, &["get", "image", "policy", "newest"]);
    assert!(got.contains("1.4.3") && got.contains("True"), "{got}");
    assert!(controller.stop().success());
}
