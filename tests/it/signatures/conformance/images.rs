//! The suite's 14 DSSE cases as attested images, as GitHub's artifact attestations come: the
//! image is the case's artifact (its digest the statement's subject), tagged `1.0.0`, and the
//! bundle is attached to it as `actions/attest-build-provenance` with `push-to-registry`
//! attaches one, in each shape a registry keeps referrers in ([`Shape`]). Read through the
//! registry client and judged as `spec.verify.attestations` judges them, and through `scan`
//! with a policy naming the workflow's identity and `imageSignature: NotRequired`: every shape
//! reads the same bundle, and each case's verdict is the suite's, for the same reason as on
//! its artifact.

use super::artifacts::ours;
use super::Case;
use crate::signatures::judged::{Judged, Scanned};
use crate::support::github_attested::{registry, Attested, Shape, SLSA};
use crate::support::write;
use image_reflector::reference::ImageReference;
use image_reflector::registry::{ClientOptions, Registries, RegistryClient};
use image_reflector::verify::Signed;
use serde_json::Value;
use std::time::SystemTime;

/// The case's artifact as the image `app:1.0.0`, its bundle attached.
fn attested(case: &Case) -> Attested {
    Attested {
        tag: "1.0.0",
        image: case.artifact.clone(),
        bundle: case.bundle.clone(),
    }
}

fn dsse_cases() -> Vec<Case> {
    let cases: Vec<Case> = Case::all().into_iter().filter(Case::is_dsse).collect();
    assert_eq!(cases.len(), 14);
    cases
}

/// Each DSSE case in each shape: the registry client reads the case's bundle, the same bytes,
/// and the attestation gate's verifier gives the suite's verdict, refusing a `_fail` for the
/// reason its artifact is refused for.
#[tokio::test]
async fn each_shape_reads_the_same_bundle_and_each_case_has_the_suites_verdict() {
    let client = RegistryClient::new(
        ClientOptions::default(),
        Registries::new(Default::default()),
    )
    .unwrap();
    for case in dsse_cases() {
        let digest = case.digest();
        let (_, on_artifact) = ours(&case);
        for shape in [Shape::Referrers, Shape::Ghcr, Shape::TagSchema] {
            let server = registry(&[attested(&case)], shape).await;
            let image = ImageReference::parse(&format!("{}/app", server.host()), true).unwrap();
            let found = client
                .bundles(&image, &digest, &[SLSA.to_string()])
                .await
                .unwrap();
            assert_eq!(
                found,
                [Signed::Bundle(case.bundle.clone())],
                "{} {shape:?}",
                case.name
            );
            let trust = case.trust().unwrap();
            let attested = trust.attested(&found, &digest, SLSA, SystemTime::now());
            match (case.valid(), attested) {
                (true, Ok(statements)) => assert_eq!(statements.len(), 1, "{}", case.name),
                (false, Err(why)) => assert_eq!(
                    why,
                    format!("1 attestation, not valid: {on_artifact}"),
                    "{}",
                    case.name
                ),
                (valid, other) => panic!(
                    "{} {shape:?}: the suite says valid={valid}, we {other:?}",
                    case.name
                ),
            }
        }
    }
}

/// The policy of `case` (named after it, in its namespace): its repository, the Secret with
/// its trusted root, the workflow's identity, the provenance alone.
fn objects(case: &Case, host: &str) -> String {
    let (issuer, subject) = case.identity_expressions();
    let root = base64_engine(&case.trusted_root);
    let name = object_name(case);
    format!(
        "---\napiVersion: v1\nkind: Secret\nmetadata: {{name: root, namespace: {name}}}\n\
         data: {{trusted_root.json: {root}}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: {name}}}\n\
         spec: {{image: {host}/app, interval: 5m, insecure: true}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: {name}, namespace: {name}}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n  digestReflectionPolicy: IfNotPresent\n  verify:\n    \
         provider: cosign\n    secretRef: {{name: root}}\n    imageSignature: NotRequired\n    \
         matchOIDCIdentity: [{{issuer: '{issuer}', subject: '{subject}'}}]\n    \
         attestations: [{{name: provenance, predicateType: '{SLSA}'}}]\n"
    )
}

/// The case's name as a Kubernetes name: its policy's and its namespace's.
fn object_name(case: &Case) -> String {
    case.name.to_lowercase().replace(['.', '_'], "-")
}

fn base64_engine(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Through `scan`: each case's policy elects `1.0.0` at the artifact's digest when the suite
/// says valid, and otherwise elects nothing, its message naming the reason the artifact is
/// refused for. The shapes alternate over the cases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_elects_the_attested_image_exactly_when_the_suite_says_valid() {
    let shapes = [Shape::Referrers, Shape::Ghcr, Shape::TagSchema];
    let mut servers = Vec::new();
    let mut manifests = String::new();
    let cases = dsse_cases();
    for (i, case) in cases.iter().enumerate() {
        let server = registry(&[attested(case)], shapes[i % 3]).await;
        manifests += &objects(case, &server.host());
        servers.push(server);
    }
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "conformance.yaml", &manifests);
    let store = dir.path().join("store");
    let scan = tokio::task::spawn_blocking(move || Scanned::run(&file, &store))
        .await
        .unwrap();
    for case in &cases {
        let status = scan.status(&object_name(case));
        let latest = &status["latestRef"];
        if case.valid() {
            assert_eq!(latest["tag"], "1.0.0", "{}: {status}", case.name);
            assert_eq!(
                latest["digest"],
                Value::from(case.digest()),
                "{}",
                case.name
            );
            continue;
        }
        assert!(latest.is_null(), "{}: {status}", case.name);
        let (_, reason) = ours(case);
        let message = status.to_string();
        assert!(
            message.contains(&reason.replace('"', "\\\"")),
            "{}: {reason}\n{status}",
            case.name
        );
    }
}
