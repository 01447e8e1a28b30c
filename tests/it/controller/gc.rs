//! The storage GC's list, against a mocked API server: read a page at a time, every page read.

use crate::support::api_mock::{calls, mock, Expect};
use image_reflector::runtime::gc;
use image_reflector::store::{MemoryStore, RepoKey, TagList, TagStore};
use serde_json::json;
use std::sync::Arc;

fn page(names: &[&str], continue_token: &str) -> serde_json::Value {
    let items: Vec<_> = names
        .iter()
        .map(|n| {
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                   "metadata": {"name": n, "namespace": "apps"}})
        })
        .collect();
    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
           "metadata": {"continue": continue_token, "resourceVersion": "7"}, "items": items})
}

#[tokio::test]
async fn gc_lists_a_page_at_a_time_and_keeps_what_any_page_lists() {
    let path = "/apis/image.toolkit.fluxcd.io/v1/namespaces/apps/imagerepositories";
    let first = page(&["on-page-1"], "next-page");
    let second = page(&["on-page-2"], "");
    let (client, task) = mock(vec![
        Expect::ok("GET", path, move |_| first.clone()),
        Expect::ok("GET", path, move |_| second.clone()),
    ]);
    let store: Arc<dyn TagStore> = Arc::new(MemoryStore::default());
    let key = |name: &str| RepoKey::new("apps", name).unwrap();
    let tags = TagList::new(["1.0.0"]).unwrap();
    for name in ["on-page-1", "on-page-2", "gone"] {
        store.set(&key(name), &tags).unwrap();
    }
    let api = kube::Api::namespaced(client, "apps");
    let removed = gc::collect(&api, "shard=a", &store).await.unwrap();
    let calls = calls(task).await;
    assert_eq!(removed, 1, "only `gone` is listed on no page");
    let mut left = store.keys().unwrap();
    left.sort_by_key(|k| format!("{k:?}"));
    assert_eq!(left, vec![key("on-page-1"), key("on-page-2")]);
    let limit = format!("limit={}", gc::PAGE);
    assert!(
        calls[0].query.contains(&limit) && !calls[0].query.contains("continue="),
        "{}",
        calls[0].query
    );
    assert!(
        calls[0].query.contains("labelSelector=shard%3Da"),
        "{}",
        calls[0].query
    );
    assert!(
        calls[1].query.contains(&limit) && calls[1].query.contains("continue=next-page"),
        "{}",
        calls[1].query
    );
}
