//! What a registry answers to the gate reads (docs/security.md, "What a registry answers"):
//! each bound holds against an in-test server that exceeds it, and bytes fetched by digest
//! must hash to it.

use crate::support::fault_server::{FaultServer, Reply, Seen};
use image_reflector::reference::ImageReference;
use image_reflector::registry::{ClientOptions, Registries, RegistryClient};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;

pub(super) fn digest(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// A registry serving exactly `paths` (path → content type, body); everything else is a 404.
pub(super) async fn serve(paths: HashMap<String, (String, Vec<u8>)>) -> FaultServer {
    let paths = Arc::new(paths);
    FaultServer::start(move |seen: &Seen| match paths.get(seen.path()) {
        Some((kind, body)) => Reply::status(200)
            .header("Content-Type", kind)
            .body(body.clone()),
        None => Reply::status(404),
    })
    .await
}

pub(super) fn client() -> RegistryClient {
    RegistryClient::new(
        ClientOptions::default(),
        Registries::new(Default::default()),
    )
    .unwrap()
}

pub(super) fn image(server: &FaultServer) -> ImageReference {
    ImageReference::parse(&format!("{}/app", server.host()), true).unwrap()
}

fn manifest(config: &[u8], layers: Vec<Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": digest(config), "size": config.len()},
        "layers": layers,
    }))
    .unwrap()
}

fn blobs(server_paths: &mut HashMap<String, (String, Vec<u8>)>, bytes: &[u8]) {
    server_paths.insert(
        format!("/v2/app/blobs/{}", digest(bytes)),
        ("application/octet-stream".into(), bytes.to_vec()),
    );
}

pub(super) fn count(server: &FaultServer, prefix: &str) -> usize {
    server
        .seen()
        .iter()
        .filter(|s| s.path().starts_with(prefix))
        .count()
}

#[tokio::test]
async fn signatures_are_read_sixteen_at_most_and_payloads_within_their_bound() {
    let signed = digest(b"the image");
    let tag = format!("/v2/app/manifests/{}.sig", signed.replacen(':', "-", 1));
    let mut paths = HashMap::new();
    let mut layers = Vec::new();
    for i in 0..20 {
        let payload = format!("{{\"n\": {i}}}").into_bytes();
        blobs(&mut paths, &payload);
        layers.push(
            json!({"mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
            "digest": digest(&payload), "size": payload.len(),
            "annotations": {"dev.cosignproject.cosign/signature": "MEUCIQ=="}}),
        );
    }
    paths.insert(tag.clone(), (OCI_MANIFEST.into(), manifest(b"{}", layers)));
    let server = serve(paths).await;
    let found = client()
        .legacy_signatures(&image(&server), &signed)
        .await
        .unwrap();
    assert_eq!(found.len(), 16);
    assert_eq!(
        count(&server, "/v2/app/blobs/"),
        16,
        "no payload beyond the bound is fetched"
    );

    // One payload over 64 KiB, one whose bytes are not its digest's.
    let mut paths = HashMap::new();
    let big = vec![b' '; (64 << 10) + 1];
    blobs(&mut paths, &big);
    let layer = |bytes: &[u8]| {
        json!({"mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
               "digest": digest(bytes), "size": bytes.len(),
               "annotations": {"dev.cosignproject.cosign/signature": "MEUCIQ=="}})
    };
    paths.insert(
        tag.clone(),
        (OCI_MANIFEST.into(), manifest(b"{}", vec![layer(&big)])),
    );
    let server = serve(paths).await;
    let err = client()
        .legacy_signatures(&image(&server), &signed)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("exceeds the 65536-byte limit"),
        "{err}"
    );

    let mut paths = HashMap::new();
    let claimed = b"{\"critical\": {}}".to_vec();
    paths.insert(
        format!("/v2/app/blobs/{}", digest(&claimed)),
        (
            "application/octet-stream".into(),
            b"{\"critical\": {\"other\": 1}}".to_vec(),
        ),
    );
    paths.insert(
        tag,
        (OCI_MANIFEST.into(), manifest(b"{}", vec![layer(&claimed)])),
    );
    let server = serve(paths).await;
    let err = client()
        .legacy_signatures(&image(&server), &signed)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not to its digest"), "{err}");
}

#[tokio::test]
async fn an_index_keeps_64_platforms_and_dates_16() {
    let mut paths = HashMap::new();
    let mut entries = Vec::new();
    for i in 0..100 {
        let config = serde_json::to_vec(&json!({"os": "linux", "architecture": format!("arch{i}"),
                                                "created": "2024-01-01T00:00:00Z"}))
        .unwrap();
        blobs(&mut paths, &config);
        let child = manifest(&config, vec![]);
        paths.insert(
            format!("/v2/app/manifests/{}", digest(&child)),
            (OCI_MANIFEST.into(), child.clone()),
        );
        entries.push(
            json!({"mediaType": OCI_MANIFEST, "digest": digest(&child), "size": child.len(),
                            "platform": {"os": "linux", "architecture": format!("arch{i}")}}),
        );
    }
    let index = serde_json::to_vec(&json!({"schemaVersion": 2, "mediaType": OCI_INDEX,
                                           "manifests": entries}))
    .unwrap();
    paths.insert(
        "/v2/app/manifests/1.0.0".into(),
        (OCI_INDEX.into(), index.clone()),
    );
    let server = serve(paths).await;
    let found = client()
        .inspect(&image(&server), "1.0.0")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.digest, digest(&index));
    assert_eq!(found.platforms.len(), 64);
    assert_eq!(
        found
            .platforms
            .iter()
            .filter(|p| p.created.is_some())
            .count(),
        16
    );
    assert_eq!(
        count(&server, "/v2/app/manifests/sha256:"),
        16,
        "only 16 platform images read"
    );
}

#[tokio::test]
async fn configs_and_manifests_must_be_what_they_claim() {
    let mut paths = HashMap::new();
    let huge = json!({"mediaType": "application/vnd.oci.image.config.v1+json",
                      "digest": digest(b"x"), "size": 5u64 << 20});
    let body = serde_json::to_vec(&json!({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                                          "config": huge, "layers": []}))
    .unwrap();
    paths.insert("/v2/app/manifests/big".into(), (OCI_MANIFEST.into(), body));
    let honest = manifest(b"{}", vec![]);
    paths.insert(
        format!("/v2/app/manifests/{}", digest(b"another manifest")),
        (OCI_MANIFEST.into(), honest),
    );
    let server = serve(paths).await;
    let err = client().inspect(&image(&server), "big").await.unwrap_err();
    assert!(
        err.to_string().contains("at most 4194304 are read"),
        "{err}"
    );
    assert_eq!(
        count(&server, "/v2/app/blobs/"),
        0,
        "a config over the bound is not fetched"
    );
    let err = client()
        .inspect(&image(&server), &digest(b"another manifest"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("not to the digest asked for"),
        "{err}"
    );
    assert!(client()
        .inspect(&image(&server), "gone")
        .await
        .unwrap()
        .is_none());
    let asked = server.seen().len();
    let sha512 = format!("sha512:{}", "a".repeat(128));
    let err = client()
        .inspect(&image(&server), &sha512)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not a sha256 digest"), "{err}");
    assert_eq!(server.seen().len(), asked, "refused before asking");
    // A manifest whose entries are not descriptors names the image and the registry.
    let mut paths = HashMap::new();
    let broken = b"{\"schemaVersion\": 2, \"manifests\": [1]}".to_vec();
    paths.insert(
        "/v2/app/manifests/broken".into(),
        (OCI_INDEX.into(), broken),
    );
    let server = serve(paths).await;
    let err = client()
        .inspect(&image(&server), "broken")
        .await
        .unwrap_err();
    assert!(err.to_string().contains(&server.host()), "{err}");
}

pub(super) const BUNDLE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// A bundle artifact over `bundle` (its manifest, and the blob), attached to nothing in
/// particular: the listing says what it refers to.
pub(super) fn bundle_artifact(
    paths: &mut HashMap<String, (String, Vec<u8>)>,
    artifact_type: &str,
    bundle: &[u8],
) -> Value {
    attached_artifact(paths, artifact_type, bundle, None)
}

/// [`bundle_artifact`], attached to the image `subject` (its manifest's `subject`, as signing
/// tools write it): what a referrers tag schema's entry must be to count.
pub(super) fn attached_artifact(
    paths: &mut HashMap<String, (String, Vec<u8>)>,
    artifact_type: &str,
    bundle: &[u8],
    subject: Option<&str>,
) -> Value {
    blobs(paths, bundle);
    let mut manifest = json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": artifact_type,
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": digest(b"{}"), "size": 2},
        "layers": [{"mediaType": artifact_type, "digest": digest(bundle), "size": bundle.len()}],
    });
    if let Some(subject) = subject {
        manifest["subject"] = json!({"mediaType": OCI_MANIFEST, "digest": subject, "size": 100});
    }
    let body = serde_json::to_vec(&manifest).unwrap();
    let at = digest(&body);
    paths.insert(
        format!("/v2/app/manifests/{at}"),
        (OCI_MANIFEST.into(), body.clone()),
    );
    json!({"mediaType": OCI_MANIFEST, "digest": at, "size": body.len(), "artifactType": artifact_type})
}

pub(super) fn listing(entries: Vec<Value>) -> (String, Vec<u8>) {
    let body = json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries});
    (OCI_INDEX.into(), serde_json::to_vec(&body).unwrap())
}

/// The referrers a registry lists are bounded: 16 bundles read of 20, a bundle over 256 KiB
/// skipped before it is fetched, other artifact types not fetched, and an artifact listed by
/// its config's media type fetched only to find it is not a bundle.
#[tokio::test]
async fn referrer_signatures_are_bounded() {
    let signed = digest(b"the image");
    let api = format!("/v2/app/referrers/{signed}");
    let mut paths = HashMap::new();
    let mut entries: Vec<Value> = (0..20)
        .map(|i| bundle_artifact(&mut paths, BUNDLE, format!("{{\"n\": {i}}}").as_bytes()))
        .collect();
    entries.insert(
        0,
        bundle_artifact(&mut paths, "application/vnd.cncf.notary.signature", b"jws"),
    );
    let mut unsure = bundle_artifact(&mut paths, "application/vnd.example.sbom", b"sbom");
    unsure["artifactType"] = json!("application/vnd.oci.empty.v1+json");
    entries.insert(0, unsure);
    paths.insert(api.clone(), listing(entries));
    let server = serve(paths).await;
    let found = client()
        .bundle_signatures(&image(&server), &signed)
        .await
        .unwrap();
    assert_eq!(found.len(), 16);
    assert_eq!(
        count(&server, "/v2/app/manifests/"),
        17,
        "16 bundles and the unsure one"
    );
    assert_eq!(
        count(&server, "/v2/app/blobs/"),
        16,
        "no blob beyond the bound, none but bundles"
    );

    // A listing of many artifacts whose listed type may be wrong: 32 fetched, then no more.
    let mut paths = HashMap::new();
    let entries: Vec<Value> = (0..40)
        .map(|i| {
            let mut e = bundle_artifact(
                &mut paths,
                "application/vnd.example.sbom",
                format!("s{i}").as_bytes(),
            );
            e["artifactType"] = json!("application/vnd.oci.empty.v1+json");
            e
        })
        .collect();
    paths.insert(api.clone(), listing(entries));
    let server = serve(paths).await;
    assert!(client()
        .bundle_signatures(&image(&server), &signed)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        count(&server, "/v2/app/manifests/"),
        32,
        "fetches are bounded too"
    );

    let mut paths = HashMap::new();
    let mut big = bundle_artifact(&mut paths, BUNDLE, b"small");
    let manifest_path = format!("/v2/app/manifests/{}", big["digest"].as_str().unwrap());
    let mut body: Value = serde_json::from_slice(&paths[&manifest_path].1).unwrap();
    body["layers"][0]["size"] = json!((256 << 10) + 1);
    let body = serde_json::to_vec(&body).unwrap();
    big["digest"] = json!(digest(&body));
    paths.insert(
        format!("/v2/app/manifests/{}", digest(&body)),
        (OCI_MANIFEST.into(), body),
    );
    // An oversized one (a 256 KiB + 1 attestation of the same type) and an unreadable one
    // are skipped, not fatal: the valid bundle beside them is read.
    let small = bundle_artifact(&mut paths, BUNDLE, b"{\"valid\": true}");
    let broken = json!({"mediaType": OCI_MANIFEST, "digest": digest(b"missing"), "size": 10,
                        "artifactType": BUNDLE});
    paths.insert(api.clone(), listing(vec![big, broken, small]));
    let server = serve(paths).await;
    let found = client()
        .bundle_signatures(&image(&server), &signed)
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "the valid one, after the two skipped");
    assert_eq!(
        count(&server, "/v2/app/blobs/"),
        1,
        "the oversized one never fetched"
    );
}

/// A registry without the referrers API (404) is asked for the referrers tag schema, and not
/// asked for the API again: one request for the listing of each later image.
#[tokio::test]
async fn without_a_referrers_api_the_tag_schema_is_read_and_the_api_not_asked_again() {
    let signed = digest(b"the image");
    let mut paths = HashMap::new();
    let entry = attached_artifact(&mut paths, BUNDLE, b"{}", Some(&signed));
    paths.insert(
        format!("/v2/app/manifests/{}", signed.replacen(':', "-", 1)),
        listing(vec![entry]),
    );
    let server = serve(paths).await;
    let client = client();
    let found = client
        .bundle_signatures(&image(&server), &signed)
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    let other = digest(b"another image");
    assert!(client
        .bundle_signatures(&image(&server), &other)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        count(&server, "/v2/app/referrers/"),
        1,
        "the API asked once"
    );
}

/// One repository's 404 on the referrers API is remembered for that repository alone: it made
/// the host "without referrers API" for an hour, for every tenant, whose referrer-only
/// signatures were then never seen.
#[tokio::test]
async fn one_repositorys_missing_referrers_api_is_not_the_hosts() {
    let signed = digest(b"the image");
    let mut paths = HashMap::new();
    let entry = bundle_artifact(&mut paths, BUNDLE, b"{}");
    paths.insert(format!("/v2/app/referrers/{signed}"), listing(vec![entry]));
    // `other` serves the same artifacts and the referrers API; `app` has no referrers API.
    let copies: Vec<(String, (String, Vec<u8>))> = paths
        .iter()
        .map(|(p, v)| (p.replacen("/v2/app/", "/v2/other/", 1), v.clone()))
        .collect();
    paths.extend(copies);
    paths.remove(&format!("/v2/app/referrers/{signed}"));
    let server = serve(paths).await;
    let client = client();
    assert!(client
        .bundle_signatures(&image(&server), &signed)
        .await
        .unwrap()
        .is_empty());
    let other = ImageReference::parse(&format!("{}/other", server.host()), true).unwrap();
    let found = client.bundle_signatures(&other, &signed).await.unwrap();
    assert_eq!(
        found.len(),
        1,
        "the other repository's referrers API is still asked"
    );
    assert_eq!(count(&server, "/v2/other/referrers/"), 1);
}
