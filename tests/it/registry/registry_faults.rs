//! The registry client against the in-test fault server: paging, throttling, broken answers,
//! the token flow, proxies and timeouts.

use crate::support::fault_server::{FaultServer, Reply, Seen};
use image_reflector::reference::ImageReference;
use image_reflector::registry::{
    ClientOptions, Credentials, ListLimits, ProxySettings, Registries, RegistryClient,
    RegistryError, SchedulerConfig, MANIFEST_ACCEPT,
};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub fn shared() -> Arc<Registries> {
    Registries::new(SchedulerConfig {
        base_backoff: Duration::from_millis(20),
        max_wait: Duration::from_secs(3),
        ..Default::default()
    })
}

pub fn client(shared: &Arc<Registries>, tweak: impl FnOnce(&mut ClientOptions)) -> RegistryClient {
    let mut options = ClientOptions {
        timeout: Duration::from_secs(10),
        ..Default::default()
    };
    tweak(&mut options);
    RegistryClient::new(options, shared.clone()).expect("client builds")
}

/// `127.0.0.1:<port>/<repo>`, plain HTTP.
fn image(server: &FaultServer, repo: &str) -> ImageReference {
    ImageReference::parse(&format!("{}/{repo}", server.host()), true).expect("valid image")
}

/// Tags `t00000`.. served with `n`/`last` paging; `Link`s alternate between relative and
/// absolute, and the last full page links to an empty one.
fn paging(count: usize, base: String) -> impl Fn(&Seen) -> Reply + Send + Sync {
    let tags: Vec<String> = (0..count).map(|i| format!("t{i:05}")).collect();
    move |seen: &Seen| {
        let n: usize = seen
            .query("n")
            .and_then(|n| n.parse().ok())
            .unwrap_or(usize::MAX);
        let start = match seen.query("last") {
            Some(last) => tags.partition_point(|t| t.as_str() <= last.as_str()),
            None => 0,
        };
        let page: Vec<&String> = tags[start..].iter().take(n).collect();
        let mut reply = Reply::json(200, json!({ "name": "team/app", "tags": page }));
        if let Some(last) = page.last() {
            let path = format!("/v2/team/app/tags/list?n={n}&last={last}");
            let link = if (start / n.max(1)).is_multiple_of(2) {
                format!("<{path}>; rel=\"next\"")
            } else {
                format!("<http://{base}{path}>; rel=\"next\"")
            };
            reply = reply.header("Link", &link);
        }
        reply
    }
}

#[tokio::test]
async fn lists_25000_tags_over_relative_and_absolute_links() {
    let server = FaultServer::start_with(|addr| paging(25_000, addr.to_string())).await;
    let registries = shared();
    let listing = client(&registries, |_| {})
        .list_tags_with(&image(&server, "team/app"), |_| true)
        .await
        .expect("listing succeeds");
    assert_eq!(listing.tags.len(), 25_000);
    let tags = listing.tags.to_vec();
    assert_eq!(tags[0], "t00000");
    assert_eq!(tags[24_999], "t24999");
    assert_eq!(listing.requests, 26, "25 full pages and the empty last one");
    let seen = server.seen();
    assert_eq!(seen[0].target, "/v2/team/app/tags/list?n=1000");
    assert!(seen.iter().all(|s| s.query("n").as_deref() == Some("1000")));
    assert_eq!(
        seen.last().unwrap().query("last").as_deref(),
        Some("t24999")
    );
}

#[tokio::test]
async fn null_tags_are_an_empty_list_and_exclusions_apply_per_page() {
    let server =
        FaultServer::start(|_| Reply::json(200, json!({ "name": "a/b", "tags": null }))).await;
    let tags = client(&shared(), |_| {})
        .list_tags(&image(&server, "a/b"))
        .await
        .unwrap();
    assert!(tags.is_empty());

    let server =
        FaultServer::start(|_| Reply::json(200, json!({ "tags": ["1.0", "1.0-rc", "2.0"] }))).await;
    let listing = client(&shared(), |_| {})
        .list_tags_with(&image(&server, "a/b"), |t| !t.ends_with("-rc"))
        .await
        .unwrap();
    assert_eq!(
        (listing.tags.to_vec(), listing.listed),
        (vec!["1.0".to_string(), "2.0".into()], 3)
    );
}

#[tokio::test]
async fn errors_name_the_request_status_and_oci_codes() {
    let server = FaultServer::start(|_| {
        Reply::json(
            404,
            json!({ "errors": [{ "code": "NAME_UNKNOWN", "message": "repository name not known to registry", "detail": {"name": "a/b"} }] }),
        )
    })
    .await;
    let err = client(&shared(), |_| {})
        .list_tags(&image(&server, "a/b"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(404));
    assert_eq!(
        err.to_string(),
        format!(
            "GET http://{}/v2/a/b/tags/list?n=1000: unexpected status code 404 Not Found: NAME_UNKNOWN: repository name not known to registry; check that the repository (and tag) exist and that the image reference is spelled right",
            server.host()
        )
    );
}

#[tokio::test]
async fn a_rejected_page_size_is_retried_with_100() {
    let tags: Vec<String> = (0..250).map(|i| format!("v{i:03}")).collect();
    let server = FaultServer::start(move |seen| {
        let n: usize = seen.query("n").unwrap().parse().unwrap();
        if n > 100 {
            return Reply::json(400, json!({ "errors": [{ "code": "TOO_MANY_TAGS_REQUESTED", "message": "too many tags requested" }] }));
        }
        let start = seen
            .query("last")
            .map_or(0, |l| tags.partition_point(|t| t.as_str() <= l.as_str()));
        let page: Vec<&String> = tags[start..].iter().take(n).collect();
        let mut reply = Reply::json(200, json!({ "tags": page }));
        if start + n < tags.len() {
            // Quay keeps echoing the original page size in its links.
            let link = format!("</v2/q/r/tags/list?n=1000&last={}>; rel=\"next\"", page.last().unwrap());
            reply = reply.header("Link", &link);
        }
        reply
    })
    .await;
    let listing = client(&shared(), |_| {})
        .list_tags_with(&image(&server, "q/r"), |_| true)
        .await
        .unwrap();
    assert_eq!(listing.tags.len(), 250);
    let sizes: Vec<String> = server
        .seen()
        .iter()
        .map(|s| s.query("n").unwrap())
        .collect();
    assert_eq!(sizes, ["1000", "100", "100", "100"]);
}

#[tokio::test]
async fn a_pagination_loop_stops_with_an_error() {
    let server = FaultServer::start(|_| {
        Reply::json(200, json!({ "tags": ["a"] }))
            .header("Link", "</v2/x/y/tags/list?n=1000&last=a>; rel=\"next\"")
    })
    .await;
    let err = client(&shared(), |_| {})
        .list_tags(&image(&server, "x/y"))
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::Listing { .. }), "{err}");
    assert!(err.to_string().contains("pagination loop"), "{err}");
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn page_tag_and_body_budgets_stop_the_listing() {
    let server = FaultServer::start_with(|addr| paging(500, addr.to_string())).await;
    let limited = |limits: ListLimits| {
        client(&shared(), move |o| {
            o.limits = ListLimits {
                page_size: 100,
                ..limits
            }
        })
    };
    let img = image(&server, "team/app");
    let d = ListLimits::default();
    for (limits, expected) in [
        (
            ListLimits {
                max_pages: 3,
                ..d.clone()
            },
            "more than 3 pages",
        ),
        (
            ListLimits {
                max_tags: 250,
                ..d.clone()
            },
            "more than 250 tags",
        ),
        (
            ListLimits {
                max_body_bytes: 500,
                ..d.clone()
            },
            "exceeds the 500-byte limit",
        ),
    ] {
        let err = limited(limits).list_tags(&img).await.unwrap_err();
        assert!(err.to_string().contains(expected), "{err}");
    }
}

#[tokio::test]
async fn truncated_json_is_an_error_not_an_empty_list() {
    let server = FaultServer::start(|_| Reply::status(200).body(r#"{"tags":["a","b""#)).await;
    let err = client(&shared(), |_| {})
        .list_tags(&image(&server, "a/b"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::InvalidResponse { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("not valid JSON"), "{err}");
}

#[tokio::test]
async fn retry_after_is_honoured_then_the_request_succeeds() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let server = FaultServer::start(move |_| match c.fetch_add(1, Ordering::SeqCst) {
        0 => Reply::status(429).header("Retry-After", "1"),
        _ => Reply::json(200, json!({ "tags": ["1.0.0"] })),
    })
    .await;
    let tags = client(&shared(), |_| {})
        .list_tags(&image(&server, "a/b"))
        .await
        .unwrap();
    assert_eq!(tags, ["1.0.0"]);
    assert_eq!(server.seen().len(), 2);
}

/// A throttled identity is held back on that repository for every client that asks as it;
/// another identity on the same repository is asked (registries count quota per account,
/// scheduler/throttle.rs), and so is one tenant's other repository; once identities of two
/// tenants are refused, the host as a whole waits, for at most a minute.
#[tokio::test]
async fn a_long_retry_after_holds_the_identity_on_the_repository_and_two_tenants_the_host() {
    let server = FaultServer::start(|_| Reply::status(429).header("Retry-After", "120")).await;
    let registries = shared();
    let tenant = |name: &'static str, password: Option<&'static str>| {
        client(&registries, move |o| {
            o.tenant = Some(name.into());
            o.credentials = password.map(|p| Credentials {
                username: "u".into(),
                password: p.into(),
            });
        })
    };
    let err = tenant("one", None)
        .list_tags(&image(&server, "a/b"))
        .await
        .unwrap_err();
    let RegistryError::RateLimited {
        host,
        status,
        retry_at,
    } = &err
    else {
        panic!("expected RateLimited, got {err}");
    };
    assert_eq!((host.as_str(), *status), (server.host().as_str(), 429));
    let left = retry_at
        .duration_since(SystemTime::now())
        .unwrap()
        .as_secs();
    assert!((115..=120).contains(&left), "{left}");
    assert!(err.to_string().contains("is rate limiting"), "{err}");

    // The same identity (anonymous) in another client of the tenant: no request.
    let err = tenant("one", None)
        .digest(&image(&server, "a/b"), "1.0")
        .await;
    assert!(matches!(err, Err(RegistryError::RateLimited { .. })));
    assert_eq!(server.seen().len(), 1, "the identity's backoff is shared");
    // The tenant's own fresh paths are asked, but never hold the host for others.
    for path in ["fresh/one", "fresh/two"] {
        let _ = tenant("one", None)
            .digest(&image(&server, path), "1.0")
            .await;
    }
    assert_eq!(server.seen().len(), 3, "one tenant's paths count once");
    // Another tenant with its own password on the same repository is asked: refused too, and
    // now identities of two tenants are refused: the host as a whole waits.
    let err = tenant("two", Some("p"))
        .digest(&image(&server, "a/b"), "1.0")
        .await;
    assert!(matches!(err, Err(RegistryError::RateLimited { .. })));
    assert_eq!(server.seen().len(), 4, "another identity is asked");
    let err = tenant("three", Some("q"))
        .digest(&image(&server, "e/f"), "1.0")
        .await
        .unwrap_err();
    let RegistryError::RateLimited { retry_at, .. } = &err else {
        panic!("expected RateLimited, got {err}");
    };
    assert_eq!(
        server.seen().len(),
        4,
        "the host waits once two tenants are refused"
    );
    let left = retry_at
        .duration_since(SystemTime::now())
        .unwrap()
        .as_secs();
    assert!(left <= 60, "the host waits at most a minute: {left}");
    let counts = registries.scheduler().request_counts();
    assert_eq!(counts.get(&(server.host(), "429".to_string())), Some(&4));
}

#[tokio::test]
async fn retry_after_as_an_http_date() {
    let at = SystemTime::now() + Duration::from_secs(100);
    let date = httpdate::fmt_http_date(at);
    let server = FaultServer::start(move |_| Reply::status(503).header("Retry-After", &date)).await;
    let err = client(&shared(), |_| {})
        .list_tags(&image(&server, "a/b"))
        .await
        .unwrap_err();
    let RegistryError::RateLimited {
        status: 503,
        retry_at,
        ..
    } = err
    else {
        panic!("expected RateLimited, got {err}");
    };
    let left = retry_at
        .duration_since(SystemTime::now())
        .unwrap()
        .as_secs();
    assert!((95..=100).contains(&left), "{left}");
}

#[tokio::test]
async fn server_errors_back_off_with_jitter_then_give_up() {
    let server = FaultServer::start(|_| Reply::status(502)).await;
    let registries = shared();
    let err = client(&registries, |_| {})
        .list_tags(&image(&server, "a/b"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::RateLimited { status: 502, .. }),
        "{err}"
    );
    assert_eq!(server.seen().len(), 3, "three attempts");
    assert_eq!(
        registries
            .scheduler()
            .request_counts()
            .get(&(server.host(), "502".into())),
        Some(&3)
    );
    // 500 is not a throttling answer: no retry.
    let server = FaultServer::start(|_| Reply::status(500)).await;
    let err = client(&shared(), |_| {})
        .list_tags(&image(&server, "a/b"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(500));
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn requests_to_a_host_are_limited_in_concurrency() {
    let server = FaultServer::start(|_| {
        Reply::status(200)
            .header(
                "Docker-Content-Digest",
                &format!("sha256:{}", "a".repeat(64)),
            )
            .delayed(Duration::from_millis(100))
    })
    .await;
    let registries = Registries::new(SchedulerConfig {
        max_concurrent_per_host: 2,
        ..Default::default()
    });
    let clients = [client(&registries, |_| {}), client(&registries, |_| {})];
    let clients = Arc::new(clients);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..8 {
        let clients = clients.clone();
        let img = image(&server, "a/b");
        tasks.spawn(async move { clients[i % 2].digest(&img, "1.0").await });
    }
    while let Some(result) = tasks.join_next().await {
        assert!(result.unwrap().is_ok());
    }
    assert_eq!(server.seen().len(), 8);
    assert_eq!(server.peak_concurrency(), 2);
}

#[tokio::test]
async fn a_slow_registry_times_out() {
    let server = FaultServer::start(|_| {
        Reply::json(200, json!({"tags": []})).delayed(Duration::from_secs(5))
    })
    .await;
    let err = client(&shared(), |o| o.timeout = Duration::from_millis(300))
        .list_tags(&image(&server, "a/b"))
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::Timeout { .. }), "{err}");
    assert!(
        err.to_string().contains("did not answer within 0.3s"),
        "{err}"
    );
}

#[tokio::test]
async fn head_without_a_digest_header_falls_back_to_get() {
    let manifest = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"digest":"sha256:0"},"layers":[]}"#;
    let server = FaultServer::start(move |seen| match seen.method.as_str() {
        "HEAD" => {
            Reply::status(200).header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
        }
        _ => Reply::status(200).body(manifest.to_vec()),
    })
    .await;
    let digest = client(&shared(), |_| {})
        .digest(&image(&server, "a/b"), "1.0")
        .await
        .unwrap();
    assert_eq!(digest, format!("sha256:{:x}", Sha256::digest(manifest)));
    let seen = server.seen();
    let methods: Vec<&str> = seen.iter().map(|s| s.method.as_str()).collect();
    assert_eq!(methods, ["HEAD", "GET"]);
    assert!(seen
        .iter()
        .all(|s| s.header("Accept") == Some(MANIFEST_ACCEPT)));
    assert_eq!(seen[0].path(), "/v2/a/b/manifests/1.0");
}

#[tokio::test]
async fn a_digest_is_never_taken_from_an_html_page_or_a_truncated_answer() {
    let answers: [(&str, &[u8], &str); 2] = [
        (
            "text/html",
            b"<html><body>Sign in</body></html>",
            "not a manifest",
        ),
        (
            "application/vnd.oci.image.manifest.v1+json",
            br#"{"schemaVersion":2,"config":{"dig"#,
            "does not parse",
        ),
    ];
    for (content_type, body, expected) in answers {
        let server = FaultServer::start(move |seen| match seen.method.as_str() {
            "HEAD" => Reply::status(200).header("Content-Type", content_type),
            _ => Reply::status(200)
                .header("Content-Type", content_type)
                .body(body.to_vec()),
        })
        .await;
        let err = client(&shared(), |_| {})
            .digest(&image(&server, "a/b"), "1.0")
            .await
            .unwrap_err();
        assert!(
            matches!(err, RegistryError::InvalidResponse { .. }),
            "{err}"
        );
        assert!(err.to_string().contains(expected), "{err}");
    }
}

#[tokio::test]
async fn bearer_tokens_are_fetched_with_credentials_and_cached() {
    let server = FaultServer::start_with(|addr| {
        let realm = format!("http://{addr}/token");
        move |seen: &Seen| {
        if seen.path() == "/token" {
            let expected = format!("Basic {}", b64("alice:s3cret"));
            if seen.header("Authorization") != Some(expected.as_str())
                || seen.query("scope").as_deref() != Some("repository:team/app:pull")
                || seen.query("service").as_deref() != Some("fault")
            {
                return Reply::status(401);
            }
            return Reply::json(200, json!({ "token": "tok-1", "expires_in": 300 }));
        }
        if seen.header("Authorization") != Some("Bearer tok-1") {
            let challenge = format!(r#"Bearer realm="{realm}",service="fault",scope="repository:team/app:pull""#);
            return Reply::json(401, json!({"errors": [{"code": "UNAUTHORIZED", "message": "authentication required"}]}))
                .header("WWW-Authenticate", &challenge);
        }
        Reply::json(200, json!({ "tags": ["1.0.0"] }))
        }
    })
    .await;
    let registries = shared();
    let alice = client(&registries, |o| {
        o.credentials = Some(Credentials {
            username: "alice".into(),
            password: "s3cret".into(),
        })
    });
    let img = image(&server, "team/app");
    assert_eq!(alice.list_tags(&img).await.unwrap(), ["1.0.0"]);
    assert_eq!(alice.list_tags(&img).await.unwrap(), ["1.0.0"]);
    let paths: Vec<String> = server.seen().iter().map(|s| s.path().to_string()).collect();
    assert_eq!(
        paths,
        [
            "/v2/team/app/tags/list",
            "/token",
            "/v2/team/app/tags/list",
            "/v2/team/app/tags/list"
        ],
        "one challenge, one token, then the cached token up front"
    );

    // Wrong credentials: the token endpoint's 401 is reported with what to do.
    let mallory = client(&shared(), |o| {
        o.credentials = Some(Credentials {
            username: "alice".into(),
            password: "wrong".into(),
        })
    });
    let err = mallory.list_tags(&img).await.unwrap_err();
    assert_eq!(err.status(), Some(401));
    assert!(err.to_string().contains("/token"), "{err}");
    assert!(
        err.to_string().contains("rejected the credentials"),
        "{err}"
    );
}

#[tokio::test]
async fn a_refused_cached_token_is_replaced_once() {
    // The registry accepts only the newest token it issued (tokens rotate on every fetch).
    let issued = Arc::new(AtomicUsize::new(0));
    let server = FaultServer::start_with(|addr| {
        let realm = format!("http://{addr}/token");
        move |seen: &Seen| {
            if seen.path() == "/token" {
                let n = issued.fetch_add(1, Ordering::SeqCst) + 1;
                return Reply::json(
                    200,
                    json!({ "token": format!("tok-{n}"), "expires_in": 300 }),
                );
            }
            let current = format!("Bearer tok-{}", issued.load(Ordering::SeqCst));
            if seen.header("Authorization") != Some(current.as_str()) {
                return Reply::status(401).header(
                    "WWW-Authenticate",
                    &format!(r#"Bearer realm="{realm}",service="s""#),
                );
            }
            Reply::json(200, json!({ "tags": ["1.0"] }))
        }
    })
    .await;
    let img = image(&server, "team/app");
    let registries = shared();
    let c = client(&registries, |_| {});
    assert_eq!(c.list_tags(&img).await.unwrap(), ["1.0"]); // 401, tok-1, ok
                                                           // Another process (here: a second cache) rotates the token.
    client(&shared(), |_| {}).list_tags(&img).await.unwrap(); // 401, tok-2, ok
    assert_eq!(c.list_tags(&img).await.unwrap(), ["1.0"]); // tok-1 refused, tok-3, ok
    let tokens = server
        .seen()
        .iter()
        .filter(|s| s.path() == "/token")
        .count();
    assert_eq!(tokens, 3);
    // A registry that refuses every token is not asked in a loop.
    let refuses = FaultServer::start_with(|addr| {
        let realm = format!("http://{addr}/token");
        move |seen: &Seen| match seen.path() {
            "/token" => Reply::json(200, json!({ "token": "t" })),
            _ => {
                Reply::status(401).header("WWW-Authenticate", &format!(r#"Bearer realm="{realm}""#))
            }
        }
    })
    .await;
    let err = client(&shared(), |_| {})
        .list_tags(&image(&refuses, "a/b"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(401));
    assert_eq!(refuses.seen().len(), 3, "request, token, request");
}

#[tokio::test]
async fn a_proxy_from_settings_carries_every_request_with_its_credentials() {
    // The fault server plays the proxy: plain-HTTP requests arrive in absolute form.
    let proxy = FaultServer::start(|_| Reply::json(200, json!({ "tags": ["via-proxy"] }))).await;
    let settings = ProxySettings::parse(&format!("http://user:pa55@{}", proxy.host())).unwrap();
    let img = ImageReference::parse("registry.invalid:5000/team/app", true).unwrap();
    let tags = client(&shared(), |o| o.proxy = Some(settings))
        .list_tags(&img)
        .await
        .unwrap();
    assert_eq!(tags, ["via-proxy"]);
    let seen = &proxy.seen()[0];
    assert_eq!(
        seen.target,
        "http://registry.invalid:5000/v2/team/app/tags/list?n=1000"
    );
    assert_eq!(
        seen.header("Proxy-Authorization"),
        Some(format!("Basic {}", b64("user:pa55")).as_str())
    );
}

#[tokio::test]
async fn local_hosts_try_https_first_then_plain_http() {
    let server = FaultServer::start(|_| Reply::json(200, json!({ "tags": ["1.0"] }))).await;
    // Not insecure: a loopback host is HTTPS-then-HTTP.
    let img = ImageReference::parse(&format!("{}/a/b", server.host()), false).unwrap();
    // Two clients of one process (each reconcile builds its own): the scheme is the host's.
    let registries = shared();
    let c = client(&registries, |_| {});
    assert_eq!(c.list_tags(&img).await.unwrap(), ["1.0"]);
    let c2 = client(&registries, |_| {});
    assert_eq!(c2.list_tags(&img).await.unwrap(), ["1.0"]);
    // The TLS attempt never reaches the request log; both listings went over HTTP, and the
    // second client did not try HTTPS again.
    assert_eq!(server.seen().len(), 2);
    assert_eq!(
        server.connections(),
        3,
        "one TLS attempt, then two plain requests"
    );
}

fn b64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// Tags the OCI distribution spec does not allow (over 128 bytes, other characters) are
/// dropped as the page is parsed and counted; the others are kept.
#[tokio::test]
async fn tags_the_distribution_spec_does_not_allow_are_dropped() {
    let long = "a".repeat(1000);
    let server = FaultServer::start(move |_| {
        Reply::json(
            200,
            json!({"tags": ["1.0.0", long, "has space", "../x", "2.0.0", "a".repeat(128)]}),
        )
    })
    .await;
    let listing = client(&shared(), |_| {})
        .list_tags_with(&image(&server, "a/b"), |_| true)
        .await
        .unwrap();
    assert_eq!(listing.tags.to_vec(), ["1.0.0", "2.0.0", &"a".repeat(128)]);
    assert_eq!((listing.listed, listing.invalid), (6, 3));
}

/// One listing keeps at most `max_kept_bytes` of tags; all listings together at most the
/// process-wide budget, and a listing that finds it held by another fails at once (waiting
/// would hold a worker) and gets it when the other listing is dropped.
#[tokio::test]
async fn kept_tags_are_bounded_per_listing_and_process_wide() {
    let server = FaultServer::start_with(|addr| paging(500, addr.to_string())).await;
    let img = image(&server, "team/app");
    // 100 tags a page, 6 bytes each and a 4-byte end: 1000 bytes a page.
    let per_page = 100 * (6 + std::mem::size_of::<u32>());
    let err = client(&shared(), |o| {
        o.limits = ListLimits {
            page_size: 100,
            max_kept_bytes: 2 * per_page + 10,
            ..Default::default()
        }
    })
    .list_tags(&img)
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains(&format!(
            "the tags kept exceed the {}-byte limit one repository may hold in memory",
            2 * per_page + 10
        )),
        "{err}"
    );

    let budget = image_reflector::registry::MemoryBudget::new(5 * per_page + 2 * 1024);
    let shared = Registries::with_memory_budget(SchedulerConfig::default(), budget.clone());
    let paged = |o: &mut ClientOptions| {
        o.limits = ListLimits {
            page_size: 100,
            ..Default::default()
        }
    };
    let first = client(&shared, paged)
        .list_tags_with(&img, |_| true)
        .await
        .unwrap();
    assert_eq!(first.tags.len(), 500);
    assert_eq!(
        first.held.bytes(),
        5 * per_page,
        "the kept tags stay reserved"
    );
    let err = client(&shared, paged)
        .list_tags_with(&img, |_| true)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("memory budget for registry answers (0 MiB: tag listings"),
        "{err}"
    );
    drop(first);
    assert_eq!(
        budget.available(),
        5 * per_page + 2 * 1024,
        "all given back"
    );
    let again = client(&shared, paged)
        .list_tags_with(&img, |_| true)
        .await
        .unwrap();
    assert_eq!(again.tags.len(), 500);
}

/// A proxy that cannot be reached is named as the proxy (without its password), not as an
/// unreachable registry: the registry was never asked.
#[tokio::test]
async fn an_unreachable_proxy_is_named_as_the_proxy() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let settings = ProxySettings::parse(&format!("http://user:s3cret@127.0.0.1:{port}")).unwrap();
    let img = ImageReference::parse("registry.invalid:5000/team/app", true).unwrap();
    let err = client(&shared(), |o| o.proxy = Some(settings))
        .list_tags(&img)
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::Proxy { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&format!(
            "cannot reach registry registry.invalid:5000 through the proxy http://user:****@127.0.0.1:{port}/"
        )) && text.ends_with("check the proxy's address and that it is running"),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");
}

/// A gate's reads (a manifest, a blob such as an image config or a signature, a digest read by
/// GET) are charged to the process-wide memory budget while their bodies are read, as tag pages
/// are: decisions run in the background, many at once, so their bodies must not add up
/// unbounded. A budget smaller than the body refuses it; the budget is given back after.
#[tokio::test]
async fn gate_reads_are_charged_to_the_memory_budget() {
    let config = vec![b'x'; 64 << 10];
    let config_digest = format!("sha256:{:x}", Sha256::digest(&config));
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": config.len()},
        "layers": [],
        "annotations": {"padding": "p".repeat(32 << 10)},
    })
    .to_string()
    .into_bytes();
    let (served_manifest, served_config) = (manifest.clone(), config.clone());
    let server = FaultServer::start(move |seen| match seen.path() {
        p if p.contains("/blobs/") => Reply::status(200).body(served_config.clone()),
        _ => Reply::status(200)
            .header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
            .body(served_manifest.clone()),
    })
    .await;
    let img = image(&server, "team/app");
    let small = image_reflector::registry::MemoryBudget::new(16 << 10);
    let tight = Registries::with_memory_budget(SchedulerConfig::default(), small.clone());
    let refused = |err: RegistryError| {
        let text = err.to_string();
        assert!(text.contains("memory budget"), "{text}");
    };
    refused(
        client(&tight, |_| {})
            .manifest(&img, "1.0")
            .await
            .unwrap_err(),
    );
    refused(
        client(&tight, |_| {})
            .blob(&img, &config_digest, 1 << 20)
            .await
            .unwrap_err(),
    );
    refused(
        client(&tight, |_| {})
            .digest(&img, "1.0")
            .await
            .unwrap_err(),
    );
    assert_eq!(small.available(), 16 << 10, "nothing kept after a refusal");

    let enough = image_reflector::registry::MemoryBudget::new(1 << 20);
    let roomy = Registries::with_memory_budget(SchedulerConfig::default(), enough.clone());
    let read = client(&roomy, |_| {}).manifest(&img, "1.0").await.unwrap();
    assert_eq!(read.unwrap().bytes, manifest);
    let blob = client(&roomy, |_| {})
        .blob(&img, &config_digest, 1 << 20)
        .await
        .unwrap();
    assert_eq!(blob, config);
    assert_eq!(enough.available(), 1 << 20, "given back once read");
}

/// The listing's documented bounds at their production values (docs/security.md), each
/// reached through a real listing with the default limits: 10,000 pages, 1,000,000 tags,
/// 64 MiB a page, 48 MiB of kept tags. The numbers are written out here, so changing a default
/// without the docs fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listing_bounds_hold_at_their_documented_values() {
    // Endless pages of one tag each, every one linking to the next.
    let endless = FaultServer::start(|seen| {
        let k: u64 = seen.query("k").and_then(|k| k.parse().ok()).unwrap_or(0);
        Reply::json(200, json!({"name": "team/app", "tags": [format!("t{k}")]})).header(
            "Link",
            &format!("</v2/team/app/tags/list?n=1000&k={}>; rel=\"next\"", k + 1),
        )
    })
    .await;
    let err = client(&shared(), |_| {})
        .list_tags(&image(&endless, "team/app"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("more than 10000 pages"), "{err}");
    assert_eq!(endless.seen().len(), 10_000);

    // One page of 1,000,001 short tags (about 10 MB).
    let many: Vec<String> = (0..=1_000_000).map(|i| format!("{i}")).collect();
    let body = serde_json::to_vec(&json!({"name": "team/app", "tags": many})).unwrap();
    let one_page = FaultServer::start(move |_| Reply::status(200).body(body.clone())).await;
    let err = client(&shared(), |_| {})
        .list_tags(&image(&one_page, "team/app"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("more than 1000000 tags"), "{err}");

    // A page one byte over 64 MiB; then 48 MiB of tags kept, over pages of 100,000 tags of
    // 128 bytes (152 bytes each with its String, 13 MB a page): the fourth page passes it.
    let huge = vec![b' '; (64 << 20) + 1];
    let too_big = FaultServer::start(move |_| Reply::status(200).body(huge.clone())).await;
    let err = client(&shared(), |_| {})
        .list_tags(&image(&too_big, "team/app"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("exceeds the 67108864-byte limit"),
        "{err}"
    );
    let kept = FaultServer::start(|seen| {
        let k: u64 = seen.query("k").and_then(|k| k.parse().ok()).unwrap_or(0);
        let long: Vec<String> = (0..100_000).map(|i| format!("{k}-{i:0>124}")).collect();
        Reply::json(200, json!({"name": "team/app", "tags": long})).header(
            "Link",
            &format!("</v2/team/app/tags/list?n=1000&k={}>; rel=\"next\"", k + 1),
        )
    })
    .await;
    let err = client(&shared(), |_| {})
        .list_tags(&image(&kept, "team/app"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("exceed the 50331648-byte limit one repository may hold"),
        "{err}"
    );
}
