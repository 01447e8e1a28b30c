//! Images signed by the real cosign (v3's default bundle through the referrers API or its tag
//! schema, v3's and v2's legacy `.sig` layout), elected through `spec.verify` by `scan`, and
//! by the controller on a real API server.

use super::scanned::Scanned;
use crate::support::distribution::{Distribution, Variant};
use crate::support::sigtools::{referrers_registry, Cosign};
use crate::support::write;
use serde_json::{json, Value};

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

#[tokio::test]
#[ignore = "needs the signing tools: make e2e-signatures"]
async fn scan_elects_what_the_real_cosign_signed_in_every_layout() {
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
        ],
    )
    .await;
    v3.sign_bundle(&trusted, &on(&referrers, &digests["1.2.0"]));
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

    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "signed.yaml",
        &manifests(
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
        ),
    );
    let scan = Scanned::run(&file, &dir.path().join("store"));
    assert_eq!(scan.code, Some(0), "every policy elects:\n{}", scan.text);
    let text = &scan.text;
    let elected = |name: &str, tag: &str, what: &str| {
        assert_eq!(scan.elected(name), tag, "{what}:\n{text}");
    };
    elected(
        "bundle",
        "1.2.0",
        "cosign v3's default bundle, through the referrers API",
    );
    let held = |tag: &str| scan.held("bundle", tag);
    let copied = format!("is for {}, not this digest", digests["1.2.0"]);
    assert!(held("1.5.0").contains(&copied), "{text}");
    assert!(
        held("1.4.0").contains("signature does not verify with any trusted key"),
        "{text}"
    );
    assert!(held("1.3.0").starts_with("no signature ("), "{text}");
    elected("legacy-v3", "2.0.1", "cosign v3's legacy layout");
    elected("legacy-v2", "3.0.1", "cosign v2's legacy layout");
    elected(
        "fallback",
        "1.0.1",
        "cosign v3's bundle through the referrers tag schema",
    );
    assert!(
        scan.held("fallback", "1.0.2").contains("does not verify"),
        "{text}"
    );
}

/// The controller on a real API server: cosign v3's default bundle elects, a bundle by another
/// key is held back, and status says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the signing tools and a cluster: make e2e-signatures"]
async fn the_controller_elects_a_cosign_v3_bundle_and_holds_back_another_key() {
    let registry = referrers_registry();
    let v3 = Cosign::v3();
    let (trusted, other) = (v3.key("trusted"), v3.key("other"));
    let good = registry
        .push_dated("signed/app", "1.0.0", "amd64", None, "a")
        .await;
    let bad = registry
        .push_dated("signed/app", "1.1.0", "amd64", None, "b")
        .await;
    let image = format!("{}/signed/app", registry.host);
    v3.sign_bundle(&trusted, &format!("{image}@{good}"));
    v3.sign_bundle(&other, &format!("{image}@{bad}"));
    let objects = manifests(
        "team",
        &[("app", image)],
        &[("signed", "app", ">=1.0.0")],
        &trusted.public,
    );
    let policy = super::elected_in_cluster(&objects, "signed", "1.0.0");
    assert_eq!(policy["status"]["latestRef"]["digest"], good.as_str());
    let held = &policy["status"]["heldBack"][0];
    assert_eq!(
        (held["tag"].as_str(), held["gate"].as_str()),
        (Some("1.1.0"), Some("verify"))
    );
    assert_eq!(held["digest"], bad.as_str());
    assert!(
        held["reason"]
            .as_str()
            .unwrap()
            .contains("signature does not verify with any trusted key"),
        "{held}"
    );
}
