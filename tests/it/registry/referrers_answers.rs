//! Referrers as go-containerregistry reads them (issue 73, item 5): registries shaped like
//! ghcr.io (a 200 `application/json` with an empty list), answering 400 or 406, or paginating
//! the listing, all have their signatures found.

use super::gate_answers::{
    attached_artifact, bundle_artifact, client, count, digest, image, listing, BUNDLE,
};
use crate::support::fault_server::{FaultServer, Reply, Seen};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// A registry serving `paths`, its referrers API answering `api` (status, content type, body,
/// Link) for `signed`.
async fn registry(
    paths: HashMap<String, (String, Vec<u8>)>,
    api: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> FaultServer {
    let paths = Arc::new(paths);
    FaultServer::start(move |seen: &Seen| {
        if seen.path().contains("/referrers/") {
            return api(seen);
        }
        match paths.get(seen.path()) {
            Some((kind, body)) => Reply::status(200)
                .header("Content-Type", kind)
                .body(body.clone()),
            None => Reply::status(404),
        }
    })
    .await
}

/// The bundle artifact of `signed`, kept under the referrers tag schema.
fn tagged(signed: &str) -> (HashMap<String, (String, Vec<u8>)>, Value) {
    let mut paths = HashMap::new();
    let entry = attached_artifact(&mut paths, BUNDLE, b"{}", Some(signed));
    paths.insert(
        format!("/v2/app/manifests/{}", signed.replacen(':', "-", 1)),
        listing(vec![entry.clone()]),
    );
    (paths, entry)
}

#[tokio::test]
async fn a_registry_answering_like_ghcr_400_or_406_is_read_through_the_tag_schema() {
    let signed = digest(b"the image");
    let answers: [(u16, &str, &[u8]); 4] = [
        (
            200,
            "application/json",
            br#"{"schemaVersion":2,"manifests":[]}"#,
        ),
        (400, "application/json", br#"{"errors":[]}"#),
        (406, "text/plain", b"not acceptable"),
        (404, "text/plain", b""),
    ];
    for (status, kind, body) in answers {
        let (paths, _) = tagged(&signed);
        let body = body.to_vec();
        let server = registry(paths, move |_| {
            Reply::status(status)
                .header("Content-Type", kind)
                .body(body.clone())
        })
        .await;
        let found = client()
            .bundle_signatures(&image(&server), &signed)
            .await
            .unwrap();
        assert_eq!(
            found.len(),
            1,
            "{status} {kind}: the tag schema's signature"
        );
        assert_eq!(count(&server, "/v2/app/referrers/"), 1);
    }
    // Another status is the registry's error, not an absent API.
    let (paths, _) = tagged(&signed);
    let server = registry(paths, |_| Reply::status(500)).await;
    assert!(client()
        .bundle_signatures(&image(&server), &signed)
        .await
        .is_err());
}

#[tokio::test]
async fn a_paginated_listing_is_followed_within_its_bounds() {
    use image_reflector::registry::signatures::referrers::{
        MAX_REFERRER_ENTRIES, MAX_REFERRER_PAGES,
    };
    assert_eq!((MAX_REFERRER_PAGES, MAX_REFERRER_ENTRIES), (8, 1024));
    let signed = digest(b"the image");
    let (paths, entry) = tagged(&signed);
    let page = |entries: Vec<Value>| listing(entries).1;
    // The signature on the third page, after two of other artifacts.
    let pages = Arc::new(vec![
        page(vec![
            serde_json::json!({"mediaType": "x", "digest": digest(b"1"), "size": 1,
            "artifactType": "application/vnd.example"}),
        ]),
        page(vec![]),
        page(vec![entry]),
    ]);
    let serve_pages = |pages: Arc<Vec<Vec<u8>>>, signed: String| {
        move |seen: &Seen| {
            let at: usize = seen.query("page").and_then(|p| p.parse().ok()).unwrap_or(0);
            let reply = Reply::status(200)
                .header("Content-Type", "application/vnd.oci.image.index.v1+json")
                .body(pages[at.min(pages.len() - 1)].clone());
            match at + 1 < pages.len() {
                true => reply.header(
                    "Link",
                    &format!("</v2/app/referrers/{signed}?page={}>; rel=\"next\"", at + 1),
                ),
                false => reply,
            }
        }
    };
    let server = registry(paths.clone(), serve_pages(pages, signed.clone())).await;
    let found = client()
        .bundle_signatures(&image(&server), &signed)
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "the third page's signature");
    assert_eq!(count(&server, "/v2/app/referrers/"), 3);
    // Nine pages: refused after the eighth, saying so.
    let many = Arc::new(vec![page(vec![]); MAX_REFERRER_PAGES + 1]);
    let server = registry(paths, serve_pages(many, signed.clone())).await;
    let err = client()
        .bundle_signatures(&image(&server), &signed)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("over 8 pages"), "{err}");
    assert_eq!(count(&server, "/v2/app/referrers/"), MAX_REFERRER_PAGES);
    // Two pages of 600 entries: over the 1,024 a listing may hold.
    let filler: Vec<Value> = (0..600)
        .map(|i| serde_json::json!({"mediaType": "x", "digest": digest(&[i as u8]), "size": 1}))
        .collect();
    let big = Arc::new(vec![page(filler.clone()), page(filler)]);
    let (paths, _) = tagged(&signed);
    let server = registry(paths, serve_pages(big, signed.clone())).await;
    let err = client()
        .bundle_signatures(&image(&server), &signed)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("over 1024 entries"), "{err}");
}

/// An image with many attestations (cosign v3 keeps them as the same referrer type as its
/// signatures) still has its signature found: artifacts annotated with another predicate than a
/// signature's are skipped unread, in the listing and in the manifest (issue 73, item 5).
#[tokio::test]
async fn attestations_listed_before_a_signature_are_skipped_unread() {
    let signed = digest(b"the image");
    let annotated = |mut entry: Value, predicate: &str| {
        entry["annotations"] = serde_json::json!({"dev.sigstore.bundle.predicateType": predicate});
        entry
    };
    let mut paths = HashMap::new();
    let mut entries: Vec<Value> = (0..40)
        .map(|i| {
            let bundle = format!("{{\"attestation\": {i}}}");
            let entry = bundle_artifact(&mut paths, BUNDLE, bundle.as_bytes());
            annotated(entry, "https://spdx.dev/Document")
        })
        .collect();
    // One more, listed without its annotation, which its manifest carries: its blob unread.
    let unlisted = bundle_artifact(&mut paths, BUNDLE, b"{\"unlisted\": 1}");
    entries.push(annotate_manifest(&mut paths, unlisted));
    let signature = bundle_artifact(&mut paths, BUNDLE, b"{\"signature\": 1}");
    entries.push(annotated(signature, "https://sigstore.dev/cosign/sign/v1"));
    let body = listing(entries).1;
    let server = registry(paths, move |_| {
        Reply::status(200)
            .header("Content-Type", "application/vnd.oci.image.index.v1+json")
            .body(body.clone())
    })
    .await;
    let found = client()
        .bundle_signatures(&image(&server), &signed)
        .await
        .unwrap();
    let bodies: Vec<Vec<u8>> = found
        .into_iter()
        .map(|s| match s {
            image_reflector::verify::Signed::Bundle(bytes) => bytes,
            other => panic!("not a bundle: {other:?}"),
        })
        .collect();
    assert_eq!(bodies, vec![b"{\"signature\": 1}".to_vec()]);
    // Two manifests (the unlisted attestation's, the signature's), one blob.
    assert_eq!(count(&server, "/v2/app/manifests/"), 2);
    assert_eq!(count(&server, "/v2/app/blobs/"), 1);
}

/// `entry`'s manifest again, with cosign's annotation of an SBOM's predicate, kept under its
/// new digest; the entry naming it.
fn annotate_manifest(paths: &mut HashMap<String, (String, Vec<u8>)>, entry: Value) -> Value {
    let at = format!("/v2/app/manifests/{}", entry["digest"].as_str().unwrap());
    let (kind, body) = paths.remove(&at).unwrap();
    let mut manifest: Value = serde_json::from_slice(&body).unwrap();
    manifest["annotations"] =
        serde_json::json!({"dev.sigstore.bundle.predicateType": "https://spdx.dev/Document"});
    let body = serde_json::to_vec(&manifest).unwrap();
    let mut entry = entry;
    entry["digest"] = digest(&body).into();
    entry["size"] = body.len().into();
    paths.insert(format!("/v2/app/manifests/{}", digest(&body)), (kind, body));
    entry
}

/// As ghcr.io answers (issue 88): the referrers API `404 MANIFEST_UNKNOWN`, and the tag
/// schema's index listing cosign's bundles with `artifactType` the empty config's and no
/// annotations: each manifest is read, and its own type and subject decide.
#[tokio::test]
async fn ghcr_io_s_tag_schema_without_types_or_annotations_is_read() {
    let signed = digest(b"the image");
    let mut paths = HashMap::new();
    let mut entries = Vec::new();
    for bundle in [&b"{\"one\": 1}"[..], b"{\"two\": 2}"] {
        let mut entry = attached_artifact(&mut paths, BUNDLE, bundle, Some(&signed));
        entry["artifactType"] = "application/vnd.oci.empty.v1+json".into();
        entries.push(entry);
    }
    paths.insert(
        format!("/v2/app/manifests/{}", signed.replacen(':', "-", 1)),
        listing(entries),
    );
    let unknown = br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}"#;
    let server = registry(paths, move |_| {
        Reply::status(404)
            .header("Content-Type", "application/json")
            .body(unknown.to_vec())
    })
    .await;
    let found = client()
        .bundle_signatures(&image(&server), &signed)
        .await
        .unwrap();
    assert_eq!(found.len(), 2);
}

/// As GitLab answers (issue 88): the tag `sha256-<hex>` resolves to the image itself, an index
/// whose children are its platforms, not referrers: nothing is read from them. And a tag
/// schema's entry attached to another image (its manifest's `subject`) does not count.
#[tokio::test]
async fn gitlab_s_tag_that_resolves_to_the_image_lists_no_referrers() {
    let mut paths = HashMap::new();
    let platform = attached_artifact(&mut paths, BUNDLE, b"{\"platform\": 1}", None);
    let (kind, index) = listing(vec![platform]);
    let signed = digest(&index);
    paths.insert(
        format!("/v2/app/manifests/{signed}"),
        (kind.clone(), index.clone()),
    );
    paths.insert(
        format!("/v2/app/manifests/{}", signed.replacen(':', "-", 1)),
        (kind, index),
    );
    let server = registry(paths, |_| Reply::status(404)).await;
    let found = client()
        .bundle_signatures(&image(&server), &signed)
        .await
        .unwrap();
    assert!(found.is_empty());
    assert_eq!(count(&server, "/v2/app/manifests/"), 1, "the tag alone");
    assert_eq!(count(&server, "/v2/app/blobs/"), 0);
    // An index of the tag schema whose entry is attached to another image.
    let signed = digest(b"the image");
    let mut paths = HashMap::new();
    let elsewhere = digest(b"another image");
    let entry = attached_artifact(&mut paths, BUNDLE, b"{}", Some(&elsewhere));
    paths.insert(
        format!("/v2/app/manifests/{}", signed.replacen(':', "-", 1)),
        listing(vec![entry]),
    );
    let server = registry(paths, |_| Reply::status(404)).await;
    let found = client()
        .bundle_signatures(&image(&server), &signed)
        .await
        .unwrap();
    assert!(found.is_empty(), "attached to another image");
}
