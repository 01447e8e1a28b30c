//! Images signed by the real cosign (v3's default bundle through the referrers API or its tag
//! schema, v3's and v2's legacy `.sig` layout), elected through `spec.verify` by `scan` and by
//! the controller on a real API server; another key, a bundle copied from another digest and an
//! unsigned image held back.

use super::judged::{InCluster, Judged, Scanned};
use crate::support::distribution::{Distribution, Variant};
use crate::support::sigtools::{referrers_registry, Cosign};
use crate::support::write;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The policies' manifests: one ImageRepository per registry, the trusted key's Secret, and a
/// policy per range, each verifying with that key.
fn manifests(
    namespace: &str,
    repositories: &[(&str, String)],
    policies: &[(&str, &str, &str)],
    public: &str,
) -> String {
    let pem: String = public.lines().map(|l| format!("    {l}\n")).collect();
    let mut out = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: cosign-keys, namespace: {namespace}}}\nstringData:\n  cosign.pub: |\n{pem}"
    );
    for (name, image) in repositories {
        out += &format!(
            "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: {name}, namespace: {namespace}}}\n\
             spec: {{image: {image}, interval: 5m}}\n"
        );
    }
    for (name, repository, range) in policies {
        out += &format!(
            "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: {name}, namespace: {namespace}}}\n\
             spec:\n  imageRepositoryRef: {{name: {repository}}}\n  policy: {{semver: {{range: '{range}'}}}}\n  \
             digestReflectionPolicy: IfNotPresent\n  verify: {{provider: cosign, secretRef: {{name: cosign-keys}}}}\n"
        );
    }
    out
}

/// Attaches `from`'s first signature referrer to `to` as well (the same bundle, another
/// subject): a signature copied to an image it was not made for.
async fn copy_referrer(registry: &Distribution, repository: &str, from: &str, to: &str) {
    let http = reqwest::Client::new();
    let base = format!("http://{}/v2/{repository}", registry.host);
    let get = |url: String| {
        let http = http.clone();
        async move {
            let accept = "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json";
            let answer = http
                .get(&url)
                .header("Accept", accept)
                .send()
                .await
                .unwrap();
            assert!(answer.status().is_success(), "GET {url}");
            answer.bytes().await.unwrap().to_vec()
        }
    };
    let listing: Value =
        serde_json::from_slice(&get(format!("{base}/referrers/{from}")).await).unwrap();
    let artifact = listing["manifests"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let mut manifest: Value =
        serde_json::from_slice(&get(format!("{base}/manifests/{artifact}")).await).unwrap();
    let subject = get(format!("{base}/manifests/{to}")).await;
    manifest["subject"] = json!({"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                 "digest": to, "size": subject.len()});
    let body = serde_json::to_vec(&manifest).unwrap();
    let digest = crate::support::distribution::digest(&body);
    let answer = http
        .put(format!("{base}/manifests/{digest}"))
        .header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert!(
        answer.status().is_success(),
        "PUT the copied referrer: {}",
        answer.status()
    );
}

/// `scan` and the controller on a real API server, given the same objects, elect what the
/// real cosign signed in each layout and hold back the rest with the same reasons.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the signing tools and a cluster: make e2e-signatures"]
async fn scan_and_the_controller_elect_what_the_real_cosign_signed_in_every_layout() {
    let referrers = referrers_registry();
    let distribution = Distribution::start(Variant::default());
    let v3 = Cosign::v3();
    let v2 = Cosign::v2();
    let trusted = v3.key("trusted");
    let other = v3.key("other");
    let on = |registry: &Distribution, digest: &str| format!("{}/team/app@{digest}", registry.host);

    // The referrers API: cosign v3's default bundle.
    let digests = super::push_tags(
        &referrers,
        "team/app",
        &[
            ("1.2.0", "a"),
            ("1.3.0", "b"),
            ("1.4.0", "c"),
            ("1.5.0", "d"),
            ("2.0.1", "e"),
            ("3.0.1", "f"),
            ("1.6.0", "i"),
        ],
    )
    .await;
    v3.sign_bundle(&trusted, &on(&referrers, &digests["1.2.0"]));
    // An SBOM attested with the trusted key, and no signature: an attestation is not one.
    let sbom = r#"{"spdxVersion": "SPDX-2.3", "name": "app"}"#;
    v3.attest(
        &trusted,
        &on(&referrers, &digests["1.6.0"]),
        "spdxjson",
        sbom,
    );
    v3.sign_bundle(&other, &on(&referrers, &digests["1.4.0"]));
    copy_referrer(&referrers, "team/app", &digests["1.2.0"], &digests["1.5.0"]).await;
    // The legacy `.sig` layout, by v3 with the old-format flags and by v2.
    v3.sign_legacy(&trusted, &on(&referrers, &digests["2.0.1"]));
    v2.sign_legacy(&trusted, &on(&referrers, &digests["3.0.1"]));
    // Distribution has no referrers API: cosign v3 keeps the referrers tag schema instead.
    let fallback_good = distribution
        .push_dated("team/app", "1.0.1", "amd64", None, "g")
        .await;
    let fallback_bad = distribution
        .push_dated("team/app", "1.0.2", "amd64", None, "h")
        .await;
    v3.sign_bundle(&trusted, &on(&distribution, &fallback_good));
    v3.sign_bundle(&other, &on(&distribution, &fallback_bad));

    // sigstore-go judges the bundles the real cosign made, as the library fetches them, as we do.
    let keys = [trusted.public.clone()];
    let mut cases = Vec::new();
    let signed = [
        (&referrers, "1.2.0", digests["1.2.0"].clone()),
        (&referrers, "1.4.0", digests["1.4.0"].clone()),
        (&referrers, "1.5.0", digests["1.5.0"].clone()),
        (&referrers, "1.6.0", digests["1.6.0"].clone()),
        (&distribution, "1.0.1", fallback_good.clone()),
        (&distribution, "1.0.2", fallback_bad.clone()),
    ];
    for (registry, tag, digest) in &signed {
        let repository = format!("{}/team/app", registry.host);
        for (i, bundle) in fetched_bundles(&repository, digest)
            .await
            .iter()
            .enumerate()
        {
            let id = format!("cosign {tag} #{i}");
            let image = (repository.as_str(), digest.as_str());
            cases.push(super::oracle::real_cosign(&id, bundle, &keys, image));
        }
    }
    assert_eq!(cases.len(), 6, "one bundle each");
    let valid = super::oracle::agreeing(&cases);
    assert_eq!(valid, ["cosign 1.2.0 #0", "cosign 1.0.1 #0"]);

    let dir = tempfile::tempdir().unwrap();
    let objects = manifests(
        "team",
        &[
            ("referrers", format!("{}/team/app", referrers.host)),
            ("tag-schema", format!("{}/team/app", distribution.host)),
        ],
        &[
            ("bundle", "referrers", ">=1.0.0 <2.0.0"),
            ("legacy-v3", "referrers", "~2.0"),
            ("legacy-v2", "referrers", "~3.0"),
            ("fallback", "tag-schema", ">=1.0.0"),
        ],
        &trusted.public,
    );
    let file = write(dir.path(), "signed.yaml", &objects);
    let scan = Scanned::run(&file, &dir.path().join("store"));
    assert_eq!(scan.code, Some(0), "every policy elects:\n{}", scan.text());
    judge(&scan, &digests, &fallback_good);
    let want = [
        ("bundle", "1.2.0"),
        ("legacy-v3", "2.0.1"),
        ("legacy-v2", "3.0.1"),
        ("fallback", "1.0.1"),
    ];
    judge(&InCluster::run(&objects, &want), &digests, &fallback_good);
}

/// What `scan` and the controller must both have decided.
fn judge(run: &impl Judged, digests: &BTreeMap<&str, String>, fallback: &str) {
    // cosign v3's default bundle, through the referrers API.
    run.assert_elected("bundle", "1.2.0", Some(&digests["1.2.0"]));
    let copied = format!("is for {}, not this digest", digests["1.2.0"]);
    run.assert_held("bundle", "1.5.0", &copied);
    let other = "signature does not verify with any trusted key";
    run.assert_held("bundle", "1.4.0", other);
    run.assert_held("bundle", "1.3.0", "no signature (");
    // An attestation is not a signature: cosign's annotation says so, and it is not read.
    run.assert_held(
        "bundle",
        "1.6.0",
        "no signature (no cosign bundle among its referrers",
    );
    let entry = run.status("bundle")["heldBack"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["tag"] == "1.4.0")
        .cloned()
        .unwrap();
    assert_eq!(
        (entry["gate"].as_str(), entry["digest"].as_str()),
        (Some("verify"), Some(digests["1.4.0"].as_str())),
        "{}",
        run.text()
    );
    // The legacy layout, by v3 and by v2 (the policies reflect digests: IfNotPresent).
    run.assert_elected("legacy-v3", "2.0.1", Some(&digests["2.0.1"]));
    run.assert_elected("legacy-v2", "3.0.1", Some(&digests["3.0.1"]));
    // cosign v3's bundle through the referrers tag schema.
    run.assert_elected("fallback", "1.0.1", Some(fallback));
    run.assert_held("fallback", "1.0.2", "does not verify");
}

/// The bundles attached to `digest` in `repository`, as the controller fetches them (SPDX
/// attestations included).
pub(super) async fn fetched_bundles(repository: &str, digest: &str) -> Vec<Vec<u8>> {
    use image_reflector::reference::ImageReference;
    use image_reflector::registry::{ClientOptions, Registries, RegistryClient};
    let client = RegistryClient::new(
        ClientOptions::default(),
        Registries::new(Default::default()),
    )
    .unwrap();
    let image = ImageReference::parse(repository, true).unwrap();
    // With the SBOM attestations the tests make: the judges are shown those too.
    let sbom = ["https://spdx.dev/Document".to_string()];
    let found = client.bundles(&image, digest, &sbom).await.unwrap();
    found
        .into_iter()
        .map(|s| match s {
            image_reflector::verify::Signed::Bundle(bytes) => bytes,
            other => panic!("not a bundle: {other:?}"),
        })
        .collect()
}
