//! Issue 88, item 4: an image carrying GitHub's artifact attestation and no signature, elected
//! by a policy that names its workflow (`imageSignature: NotRequired`), and a newer tag whose
//! attestation names another image, held back for it; as the controller on the real API server
//! records them, the real `flux` CLI shows them and `select --explain` reads them back.

use crate::signatures::conformance::Case;
use crate::support::cluster::{
    get_json, install_and_controller_kubeconfig, install_crds, kubectl, ok, wait_for, Controller,
    Namespace,
};
use crate::support::flux::flux;
use crate::support::github_attested::{registry, Attested, Shape, SLSA};
use crate::support::{run_bin, write};
use base64::Engine;

/// The reason 2.0.0 is held: its attestation is the 1.0.0 image's, copied.
const REASON: &str = "attestation 'provenance' (https://slsa.dev/provenance/v1): 1 attestation, \
                      not valid: a signed statement is for sha256:";

fn flux_text(args: &[&str]) -> String {
    let out = flux(args);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "flux {args:?}: {out:?}");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster and Flux: make e2e-flux"]
async fn flux_shows_an_attestation_only_election_and_what_it_holds_back() {
    install_crds();
    // sigstore-conformance's GitHub-shaped bundle: SLSA provenance v1 in DSSE, signed by a
    // workflow's identity; 2.0.0 carries the same bundle, whose statement names 1.0.0's image.
    let case = Case::named("happy-path-intoto-in-dsse-v3");
    let images = [
        Attested {
            tag: "1.0.0",
            image: case.artifact.clone(),
            bundle: case.bundle.clone(),
        },
        Attested {
            tag: "2.0.0",
            image: b"another image".to_vec(),
            bundle: case.bundle.clone(),
        },
    ];
    let server = registry(&images, Shape::Ghcr).await;
    let ns = Namespace(format!("image-reflector-attested-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let (issuer, subject) = case.identity_expressions();
    let root = base64::engine::general_purpose::STANDARD.encode(&case.trusted_root);
    let manifests = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: root, namespace: {ns}}}\n\
         data: {{trusted_root.json: {root}}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec: {{image: {host}/app, interval: 1h, insecure: true}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: {ns}}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n  digestReflectionPolicy: IfNotPresent\n  verify:\n    \
         provider: cosign\n    secretRef: {{name: root}}\n    imageSignature: NotRequired\n    \
         matchOIDCIdentity: [{{issuer: '{issuer}', subject: '{subject}'}}]\n    \
         attestations: [{{name: provenance, predicateType: '{SLSA}'}}]\n",
        ns = ns.0,
        host = server.host()
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    let dir = tempfile::tempdir().unwrap();
    let controller = Controller::start(&ns.0, &install_and_controller_kubeconfig(dir.path()));
    wait_for(&ns.0, "imagepolicy/app", "{.status.latestRef.tag}", "1.0.0");

    // The controller's record: 1.0.0 at its digest, 2.0.0 held by verify for its attestation.
    let policy = get_json(&ns.0, "imagepolicy/app");
    let status = &policy["status"];
    assert_eq!(
        status["latestRef"]["digest"],
        case.digest().as_str(),
        "{policy}"
    );
    let held = &status["heldBack"][0];
    assert_eq!(
        (&held["tag"], &held["gate"]),
        (&"2.0.0".into(), &"verify".into()),
        "{policy}"
    );
    let reason = held["reason"].as_str().unwrap().to_string();
    assert!(reason.starts_with(REASON), "{reason}");

    // `flux reconcile` re-checks and keeps it; `flux get` shows the election and the reason.
    flux_text(&[
        "reconcile",
        "image",
        "policy",
        "app",
        "-n",
        &ns.0,
        "--timeout=60s",
    ]);
    let got = flux_text(&["get", "image", "policy", "app", "-n", &ns.0]);
    assert!(got.contains("1.0.0") && got.contains("True"), "{got}");
    assert!(got.contains(&format!("2.0.0 held back: {REASON}")), "{got}");

    // `select --explain` over the object as `kubectl get -o yaml` gives it.
    let yaml = ok(kubectl(
        &["get", "-n", &ns.0, "imagepolicy/app", "-o", "yaml"],
        None,
    ));
    let file = write(dir.path(), "app.yaml", &yaml);
    let out = run_bin(
        &["select", "-f", &file, "--tags-file", "-", "--explain"],
        Some("1.0.0\n2.0.0\n"),
    );
    let explained = String::from_utf8_lossy(&out.stdout);
    let gates = "gates: verify cosign attestations provenance (no image signature required)\n";
    assert!(explained.contains(gates), "{explained}");
    let said = format!("held back (status.heldBack): 2.0.0 by verify: {reason}\n");
    assert!(explained.contains(&said), "{explained}");
    assert!(controller.stop().success());
}
