//! `--kube-api-qps` / `--kube-api-burst`: the throttle layer on kube's client, over a mocked
//! API server, in tokio's paused (virtual) time.

use http::{Request, Response};
use image_reflector::runtime::throttle::ThrottleLayer;
use k8s_openapi::api::core::v1::Namespace;
use kube::client::{Body, ClientBuilder};
use kube::Api;
use tower_test::mock;

#[tokio::test(start_paused = true)]
async fn requests_beyond_the_burst_wait_for_tokens() {
    let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
    let client = ClientBuilder::new(service, "default")
        .with_layer(&ThrottleLayer::new(10.0, 2))
        .build();
    let server = tokio::spawn(async move {
        let mut answered = Vec::new();
        while let Some((request, send)) = handle.next_request().await {
            answered.push(tokio::time::Instant::now());
            assert_eq!(request.uri().path(), "/api/v1/namespaces/ns");
            let body = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}});
            send.send_response(Response::new(Body::from(
                serde_json::to_vec(&body).unwrap(),
            )));
            if answered.len() == 5 {
                break;
            }
        }
        answered
    });
    let started = tokio::time::Instant::now();
    let api: Api<Namespace> = Api::all(client);
    for _ in 0..5 {
        api.get("ns").await.unwrap();
    }
    let answered = server.await.unwrap();
    let at: Vec<u128> = answered
        .iter()
        .map(|t| (*t - started).as_millis())
        .collect();
    // Two at once (the burst), then one per 100 ms (10 a second).
    assert_eq!(at[0], 0, "{at:?}");
    assert_eq!(at[1], 0, "{at:?}");
    for (i, ms) in at.iter().enumerate().skip(2) {
        let expected = (i as u128 - 1) * 100;
        assert!(
            ms + 2 >= expected && *ms <= expected + 2,
            "request {i} at {ms} ms: {at:?}"
        );
    }
}
