//! One tenant cannot reach another's registry access through the state the process shares
//! (docs/security.md, "What a registry teaches the client"): challenges, schemes and backoff
//! are kept per route (origin and network path), tokens per identity (username and secret),
//! and credentials go only to the registry's origin and the realm it announced. Each case is
//! a hostile tenant's move against a victim scanning the same host name, with fake servers.

use super::registry_faults::{client, shared};
use crate::support::fault_server::{FaultServer, Reply, Seen};
use image_reflector::reference::ImageReference;
use image_reflector::registry::{Credentials, ProxySettings};
use serde_json::json;

fn creds(username: &str, password: &str) -> Credentials {
    Credentials {
        username: username.into(),
        password: password.into(),
    }
}

fn basic(username: &str, password: &str) -> String {
    use base64::Engine;
    let raw = format!("{username}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// A registry that wants Basic `alice:s3cret` and then lists `victim-tag`.
async fn basic_registry() -> FaultServer {
    FaultServer::start(|seen: &Seen| {
        if seen.header("Authorization") == Some(basic("alice", "s3cret").as_str()) {
            Reply::json(200, json!({ "tags": ["victim-tag"] }))
        } else {
            Reply::status(401).header("WWW-Authenticate", r#"Basic realm="registry""#)
        }
    })
    .await
}

/// Whether any request `server` saw carried the victim's password (Basic, to any path).
fn saw_password(server: &FaultServer) -> bool {
    let secret = basic("alice", "s3cret");
    server
        .seen()
        .iter()
        .any(|s| s.header("Authorization") == Some(secret.as_str()))
}

#[tokio::test]
async fn a_hostile_proxys_challenge_never_reaches_the_direct_path() {
    let registry = basic_registry().await;
    // Tenant B's proxy answers for the registry's host name with a realm of its own.
    let hostile = FaultServer::start_with(|addr| {
        let realm = format!("http://{addr}/steal");
        move |seen: &Seen| match seen.path() {
            "/steal" => Reply::json(200, json!({ "token": "stolen" })),
            _ => {
                Reply::status(401).header("WWW-Authenticate", &format!(r#"Bearer realm="{realm}""#))
            }
        }
    })
    .await;
    let image = ImageReference::parse(&format!("{}/team/app", registry.host()), true).unwrap();
    let registries = shared();
    let proxy = ProxySettings::parse(&format!("http://{}", hostile.host())).unwrap();
    let tenant_b = client(&registries, |o| o.proxy = Some(proxy));
    assert!(
        tenant_b.list_tags(&image).await.is_err(),
        "B's proxy refuses B"
    );

    let victim = client(&registries, |o| {
        o.credentials = Some(creds("alice", "s3cret"))
    });
    assert_eq!(victim.list_tags(&image).await.unwrap(), ["victim-tag"]);
    assert_eq!(victim.list_tags(&image).await.unwrap(), ["victim-tag"]);
    assert!(
        !saw_password(&hostile),
        "the victim's password reached the hostile proxy's realm"
    );
    assert!(
        hostile
            .seen()
            .iter()
            .all(|s| s.path() != "/steal" || s.header("Authorization").is_none()),
        "nothing of the victim's went to the hostile realm"
    );
}

#[tokio::test]
async fn a_hostile_proxys_retry_after_does_not_hold_back_the_direct_path() {
    let registry = FaultServer::start(|_| Reply::json(200, json!({ "tags": ["1.0"] }))).await;
    let hostile = FaultServer::start(|_| Reply::status(429).header("Retry-After", "86400")).await;
    let image = ImageReference::parse(&format!("{}/team/app", registry.host()), true).unwrap();
    let registries = shared();
    let proxy = ProxySettings::parse(&format!("http://{}", hostile.host())).unwrap();
    let tenant_b = client(&registries, |o| o.proxy = Some(proxy));
    let err = tenant_b.list_tags(&image).await.unwrap_err();
    assert!(
        err.to_string().contains("rate"),
        "B is throttled by its own proxy: {err}"
    );

    let victim = client(&registries, |_| {});
    assert_eq!(victim.list_tags(&image).await.unwrap(), ["1.0"]);
    assert_eq!(
        registry.seen().len(),
        1,
        "the victim's registry heard from it"
    );
}

#[tokio::test]
async fn one_username_with_another_password_gets_no_token_of_the_first() {
    // The token endpoint checks the password; the registry checks the token.
    let registry = FaultServer::start_with(|addr| {
        let realm = format!("http://{addr}/token");
        move |seen: &Seen| {
            if seen.path() == "/token" {
                return if seen.header("Authorization") == Some(basic("alice", "s3cret").as_str()) {
                    Reply::json(200, json!({ "token": "alice-token", "expires_in": 300 }))
                } else {
                    Reply::status(401)
                };
            }
            if seen.header("Authorization") == Some("Bearer alice-token") {
                return Reply::json(200, json!({ "tags": ["private"] }));
            }
            Reply::status(401).header(
                "WWW-Authenticate",
                &format!(r#"Bearer realm="{realm}",service="r""#),
            )
        }
    })
    .await;
    let image = ImageReference::parse(&format!("{}/team/app", registry.host()), true).unwrap();
    let registries = shared();
    let alice = client(&registries, |o| {
        o.credentials = Some(creds("alice", "s3cret"))
    });
    assert_eq!(alice.list_tags(&image).await.unwrap(), ["private"]);
    let guesser = client(&registries, |o| {
        o.credentials = Some(creds("alice", "guess"))
    });
    let err = guesser.list_tags(&image).await.unwrap_err();
    assert_eq!(err.status(), Some(401), "{err}");
}

#[tokio::test]
async fn a_next_page_on_another_host_is_refused_and_gets_no_credentials() {
    let elsewhere = FaultServer::start(|seen: &Seen| {
        if seen.header("Authorization").is_some() {
            Reply::json(200, json!({ "tags": ["injected"] }))
        } else {
            Reply::status(401).header("WWW-Authenticate", r#"Basic realm="x""#)
        }
    })
    .await;
    let next = format!(
        "<http://{}/v2/team/app/tags/list?last=a>; rel=\"next\"",
        elsewhere.host()
    );
    let registry = FaultServer::start(move |seen: &Seen| {
        if seen.header("Authorization") != Some(basic("alice", "s3cret").as_str()) {
            return Reply::status(401).header("WWW-Authenticate", r#"Basic realm="r""#);
        }
        Reply::json(200, json!({ "tags": ["a"] })).header("Link", &next)
    })
    .await;
    let image = ImageReference::parse(&format!("{}/team/app", registry.host()), true).unwrap();
    let victim = client(&shared(), |o| {
        o.credentials = Some(creds("alice", "s3cret"))
    });
    let err = victim.list_tags(&image).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&format!("next page is on {}", elsewhere.host())),
        "{text}"
    );
    assert!(
        elsewhere.seen().is_empty(),
        "the other host was never asked"
    );
}

#[tokio::test]
async fn a_redirect_targets_challenge_is_refused() {
    // The registry redirects to a host that asks for a token from its own realm.
    let attacker = FaultServer::start_with(|addr| {
        let realm = format!("http://{addr}/steal");
        move |seen: &Seen| match seen.path() {
            "/steal" => Reply::json(200, json!({ "token": "t" })),
            _ => {
                Reply::status(401).header("WWW-Authenticate", &format!(r#"Bearer realm="{realm}""#))
            }
        }
    })
    .await;
    let location = format!("http://{}/v2/team/app/tags/list", attacker.host());
    let registry = FaultServer::start(move |seen: &Seen| {
        if seen.header("Authorization") != Some(basic("alice", "s3cret").as_str()) {
            return Reply::status(401).header("WWW-Authenticate", r#"Basic realm="r""#);
        }
        Reply::status(307).header("Location", &location)
    })
    .await;
    let image = ImageReference::parse(&format!("{}/team/app", registry.host()), true).unwrap();
    let registries = shared();
    let victim = client(&registries, |o| {
        o.credentials = Some(creds("alice", "s3cret"))
    });
    // The first listing learns the registry's Basic challenge (and fails at the redirect);
    // the next sends Basic up front, and the redirect target's challenge is the first it sees.
    assert!(victim.list_tags(&image).await.is_err());
    let err = victim.list_tags(&image).await.unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("redirected to {}", attacker.host())),
        "{err}"
    );
    assert!(
        attacker.seen().iter().all(|s| s.path() != "/steal"),
        "the attacker's realm was never asked"
    );
    assert!(!saw_password(&attacker));
    // The registry's own challenge is still the one used: the next scan sends Basic up front.
    let _ = victim.list_tags(&image).await;
    let last = registry.seen().last().cloned().unwrap();
    assert_eq!(
        last.header("Authorization"),
        Some(basic("alice", "s3cret").as_str())
    );
}

#[tokio::test]
async fn a_malformed_realm_fails_its_request_and_is_not_remembered() {
    // One repository of the host answers with a realm that is not a URL; the others are fine.
    let registry = FaultServer::start(|seen: &Seen| {
        if seen.path().starts_with("/v2/broken/") {
            return Reply::status(401).header("WWW-Authenticate", r#"Bearer realm="::not a url""#);
        }
        Reply::json(200, json!({ "tags": ["1.0"] }))
    })
    .await;
    let registries = shared();
    let c = client(&registries, |_| {});
    let broken = ImageReference::parse(&format!("{}/broken/app", registry.host()), true).unwrap();
    let err = c.list_tags(&broken).await.unwrap_err();
    assert!(err.to_string().contains("is not a URL"), "{err}");
    let fine = ImageReference::parse(&format!("{}/team/app", registry.host()), true).unwrap();
    assert_eq!(
        c.list_tags(&fine).await.unwrap(),
        ["1.0"],
        "the host is not poisoned"
    );
    assert_eq!(
        client(&registries, |_| {}).list_tags(&fine).await.unwrap(),
        ["1.0"]
    );
}

/// One origin serving repositories from different backends, each with a realm of its own
/// (large registries and proxies do). A challenge learnt on tenant A's repository was
/// remembered for the origin and answered with tenant B's password: A's realm received it, and
/// B's scan succeeded, so nothing showed. A challenge is kept per repository now.
#[tokio::test]
async fn a_challenge_learnt_on_one_repository_is_never_answered_for_another() {
    let registry = FaultServer::start_with(|addr| {
        let realm = move |backend: &str| format!("http://{addr}/token-{backend}");
        move |seen: &Seen| match seen.path() {
            "/token-attacker" => Reply::json(200, json!({ "token": "attacker" })),
            "/token-victim"
                if seen.header("Authorization") == Some(basic("bob", "pw-b").as_str()) =>
            {
                Reply::json(200, json!({ "token": "victim-token" }))
            }
            "/token-victim" => Reply::status(401),
            p if p.starts_with("/v2/victim/")
                && seen.header("Authorization") == Some("Bearer victim-token") =>
            {
                Reply::json(200, json!({ "tags": ["b-1"] }))
            }
            p if p.starts_with("/v2/attacker/")
                && seen.header("Authorization") == Some("Bearer attacker") =>
            {
                Reply::json(200, json!({ "tags": ["a-1"] }))
            }
            p if p.starts_with("/v2/victim/") => Reply::status(401).header(
                "WWW-Authenticate",
                &format!(r#"Bearer realm="{}",service="r""#, realm("victim")),
            ),
            _ => Reply::status(401).header(
                "WWW-Authenticate",
                &format!(r#"Bearer realm="{}",service="r""#, realm("attacker")),
            ),
        }
    })
    .await;
    let registries = shared();
    let attacker_image =
        ImageReference::parse(&format!("{}/attacker/app", registry.host()), true).unwrap();
    let attacker = client(&registries, |_| {});
    assert_eq!(attacker.list_tags(&attacker_image).await.unwrap(), ["a-1"]);

    let victim_image =
        ImageReference::parse(&format!("{}/victim/app", registry.host()), true).unwrap();
    let victim = client(&registries, |o| o.credentials = Some(creds("bob", "pw-b")));
    assert_eq!(victim.list_tags(&victim_image).await.unwrap(), ["b-1"]);
    assert_eq!(victim.list_tags(&victim_image).await.unwrap(), ["b-1"]);
    let bob = basic("bob", "pw-b");
    let leaked: Vec<_> = registry
        .seen()
        .into_iter()
        .filter(|s| s.path() != "/token-victim" && s.header("Authorization") == Some(bob.as_str()))
        .map(|s| s.target)
        .collect();
    assert!(leaked.is_empty(), "B's password went to {leaked:?}");
    // The second scan of each repository authenticates up front: its challenge is kept.
    let victim_401s = registry
        .seen()
        .iter()
        .filter(|s| s.path().starts_with("/v2/victim/") && s.header("Authorization").is_none())
        .count();
    assert_eq!(
        victim_401s, 1,
        "one 401 for the victim's repository, then none"
    );
}

/// A `429 Retry-After: 86400` on one tenant's repository path held back every repository of
/// the origin for a day. Backoff is kept for the repository that got it; the host as a whole
/// is held back only when more than one of its repositories is refused, and then for at most
/// a minute.
#[tokio::test]
async fn a_day_long_retry_after_on_one_repository_holds_back_that_repository_only() {
    let registry = FaultServer::start(|seen: &Seen| match seen.path() {
        p if p.starts_with("/v2/hostile/") => Reply::status(429).header("Retry-After", "86400"),
        _ => Reply::json(200, json!({ "tags": ["1.0"] })),
    })
    .await;
    let registries = shared();
    let image = |repo: &str| {
        ImageReference::parse(&format!("{}/{repo}/app", registry.host()), true).unwrap()
    };
    let hostile = client(&registries, |_| {});
    let err = hostile.list_tags(&image("hostile")).await.unwrap_err();
    assert!(err.to_string().contains("rate"), "{err}");
    let err = hostile.list_tags(&image("hostile")).await.unwrap_err();
    assert!(err.to_string().contains("rate"), "still held back: {err}");
    assert_eq!(
        registry.seen().len(),
        1,
        "the throttled repository is not asked again before its Retry-After"
    );
    let victim = client(&registries, |_| {});
    assert_eq!(victim.list_tags(&image("victim")).await.unwrap(), ["1.0"]);
}
