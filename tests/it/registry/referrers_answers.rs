//! Referrers as go-containerregistry reads them (issue 73, item 5): registries shaped like
//! ghcr.io (a 200 `application/json` with an empty list), answering 400 or 406, or paginating
//! the listing, all have their signatures found.

use super::gate_answers::{bundle_artifact, client, count, digest, image, listing, BUNDLE};
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
    let entry = bundle_artifact(&mut paths, BUNDLE, b"{}");
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
