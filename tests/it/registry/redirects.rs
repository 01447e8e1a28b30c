//! Redirects are bounded per request and per scan, and a listing never takes another host's
//! tags (docs/security.md, "What a registry answers"; registry/redirect.rs). A scan whose
//! every page answered 307 to a new host opened 3,020 sockets and merged tags from 3,000
//! other origins.

use super::registry_faults::{client, shared};
use crate::support::fault_server::{FaultServer, Reply, Seen};
use image_reflector::reference::ImageReference;
use serde_json::json;

fn image(server: &FaultServer) -> ImageReference {
    ImageReference::parse(&format!("{}/team/app", server.host()), true).unwrap()
}

/// A tag page answered by another host after a redirect is refused, not merged.
#[tokio::test]
async fn a_tag_page_from_another_host_is_never_merged() {
    let elsewhere = FaultServer::start(|_| Reply::json(200, json!({ "tags": ["planted"] }))).await;
    let location = format!(
        "http://localhost:{}/v2/team/app/tags/list",
        elsewhere.addr.port()
    );
    let registry =
        FaultServer::start(move |_| Reply::status(307).header("Location", &location)).await;
    let err = client(&shared(), |_| {})
        .list_tags(&image(&registry))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains(&format!(
            "redirected to localhost:{}, another origin: refused before it was asked",
            elsewhere.addr.port()
        )),
        "{err}"
    );
    assert_eq!(elsewhere.seen().len(), 0, "the hop is never sent");
}

/// A redirect hop's throttling holds back the repository that followed it, not the hop's host
/// for everyone: another repository on that host is still asked.
#[tokio::test]
async fn a_redirect_hops_throttling_holds_the_repository_that_followed_it() {
    let storage = FaultServer::start(|_| Reply::status(429).header("Retry-After", "120")).await;
    let location = format!("http://localhost:{}/blobs/x", storage.addr.port());
    let registry =
        FaultServer::start(move |_| Reply::status(307).header("Location", &location)).await;
    // A host's own backoff would be 10 s, past the 3 s a request may wait: held, not asked.
    let registries =
        image_reflector::registry::Registries::new(image_reflector::registry::SchedulerConfig {
            base_backoff: std::time::Duration::from_secs(10),
            max_wait: std::time::Duration::from_secs(3),
            ..Default::default()
        });
    let err = client(&registries, |_| {})
        .digest(&image(&registry), "1.0")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("429"), "{err}");
    assert_eq!(storage.seen().len(), 1);
    // The storage host's own repository, asked directly by another client: not held.
    let direct = ImageReference::parse(
        &format!("localhost:{}/other/app", storage.addr.port()),
        true,
    )
    .unwrap();
    let err = client(&registries, |_| {})
        .digest(&direct, "1.0")
        .await
        .unwrap_err();
    assert_eq!(
        storage.seen().len(),
        2,
        "the hop's 429 held its repository, not the host: {err}"
    );
}

/// Five redirects a request, as before: the sixth is refused, naming where it went.
#[tokio::test]
async fn a_request_follows_at_most_five_redirects() {
    let registry = FaultServer::start(|seen: &Seen| {
        let hop: u32 = seen.query("hop").and_then(|h| h.parse().ok()).unwrap_or(0);
        Reply::status(307).header(
            "Location",
            &format!("/v2/team/app/manifests/1.0?hop={}", hop + 1),
        )
    })
    .await;
    let err = client(&shared(), |_| {})
        .digest(&image(&registry), "1.0")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("more than 5 redirects"), "{err}");
    assert_eq!(
        registry.seen().len(),
        6,
        "the first request and five redirects"
    );
}

/// One scan is redirected to at most four origins besides the registry's; a fifth is refused.
/// Redirect targets get no credentials.
#[tokio::test]
async fn one_scan_is_redirected_to_at_most_four_other_origins() {
    let blob = FaultServer::start(|_| {
        Reply::status(200)
            .header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
            .body(br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"a","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","size":1},"layers":[]}"#.to_vec())
    })
    .await;
    // Five distinct origins for one host: one port each, reached as 127.0.0.1 and localhost.
    let mut targets = Vec::new();
    for name in ["127.0.0.1", "localhost"] {
        targets.push(format!("http://{name}:{}/m", blob.addr.port()));
    }
    let mut extra = Vec::new();
    for _ in 0..3 {
        let port_server = FaultServer::start(|_| {
            Reply::status(200)
                .header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
                .body(br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"a","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","size":1},"layers":[]}"#.to_vec())
        })
        .await;
        targets.push(format!("http://127.0.0.1:{}/m", port_server.addr.port()));
        extra.push(port_server);
    }
    let routes = targets.clone();
    let registry = FaultServer::start(move |seen: &Seen| {
        if seen.header("Authorization").is_none() {
            return Reply::status(401).header("WWW-Authenticate", r#"Basic realm="r""#);
        }
        let tag = seen.path().rsplit('/').next().unwrap_or_default();
        let i: usize = tag.parse().unwrap_or(0);
        Reply::status(302).header("Location", &routes[i % routes.len()])
    })
    .await;
    let scan = client(&shared(), |o| {
        o.credentials = Some(image_reflector::registry::Credentials {
            username: "alice".into(),
            password: "s3cret".into(),
        })
    });
    for i in 0..4 {
        let read = scan.manifest(&image(&registry), &i.to_string()).await;
        assert!(read.is_ok(), "origin {i}: {:?}", read.err());
    }
    let err = scan.manifest(&image(&registry), "4").await.unwrap_err();
    assert!(
        err.to_string()
            .contains("a further origin past the 4 this scan was already redirected to"),
        "{err}"
    );
    // A known origin stays reachable; a new reconcile's client starts afresh.
    assert!(scan.manifest(&image(&registry), "0").await.is_ok());
    let next = client(&shared(), |o| {
        o.credentials = Some(image_reflector::registry::Credentials {
            username: "alice".into(),
            password: "s3cret".into(),
        })
    });
    assert!(next.manifest(&image(&registry), "4").await.is_ok());
    assert!(
        registry
            .seen()
            .iter()
            .any(|s| s.header("Authorization").is_some()),
        "the registry itself got the credentials"
    );
    let carried = blob
        .seen()
        .into_iter()
        .chain(extra.iter().flat_map(|s| s.seen()))
        .filter(|s| s.header("Authorization").is_some())
        .count();
    assert_eq!(carried, 0, "no credentials to another origin");
}

/// A keep-alive server answering every request with a small manifest; counts its open
/// connections.
async fn keep_alive_blobs() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::Ordering;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let open = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = open.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let open = counter.clone();
            open.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let body = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"a","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","size":1},"layers":[]}"#;
                let mut buffer = vec![0; 8192];
                loop {
                    match socket.read(&mut buffer).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            let head = format!(
                                "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n\
                                 Content-Length: {}\r\n\r\n",
                                body.len()
                            );
                            if socket.write_all(head.as_bytes()).await.is_err()
                                || socket.write_all(body).await.is_err()
                            {
                                break;
                            }
                        }
                    }
                }
                open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (port, open)
}

/// Connections to a redirect target close with the answer: in the shared pool, a scan whose
/// pages each went to a new host left thousands of sockets idle for 90 s.
#[tokio::test]
async fn connections_to_a_redirect_target_close_with_its_answer() {
    let (port, open) = keep_alive_blobs().await;
    let location = format!("http://localhost:{port}/m");
    let registry =
        FaultServer::start(move |_| Reply::status(302).header("Location", &location)).await;
    let scan = client(&shared(), |_| {});
    for tag in ["1", "2", "3"] {
        assert!(scan
            .manifest(&image(&registry), tag)
            .await
            .unwrap()
            .is_some());
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while open.load(std::sync::atomic::Ordering::SeqCst) > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} connections to the redirect target still open",
            open.load(std::sync::atomic::Ordering::SeqCst)
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
