//! The worst wait a tenant that behaves sees while another holds each shared resource
//! (docs/security.md, "Fair shares"): `cargo bench --bench hostile -- fair-slots` (or any
//! `fair-*`), or the whole bench. Each scenario runs the attack measured in the fourth review
//! through the library's own shared parts (`Registries`, the background's `Handoffs`, the
//! `Notifier`) with fake servers on loopback, then times the other tenant's first try until
//! it is served.

use crate::fault_server::{stalling_pages, FaultServer, Reply, Seen};
use image_reflector::api::ImagePolicy;
use image_reflector::controller::events::notify::Notifier;
use image_reflector::controller::frame::handoff::{Handed, Handoffs};
use image_reflector::reference::ImageReference;
use image_reflector::registry::{
    ClientOptions, Credentials, Registries, RegistryClient, SchedulerConfig,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const SCENARIOS: &[&str] = &[
    "fair-slots",
    "fair-slots-many",
    "fair-memory",
    "fair-throttle",
    "fair-background",
    "fair-notify",
];

pub fn scenario(name: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (attack, waited, bound) = runtime.block_on(async {
        match name {
            "fair-slots" => slots().await,
            "fair-slots-many" => slots_many().await,
            "fair-memory" => memory().await,
            "fair-throttle" => throttle().await,
            "fair-background" => background().await,
            "fair-notify" => notify().await,
            other => panic!("unknown scenario {other}"),
        }
    });
    println!("| {name} | {attack} | {waited:.2?} | {bound} |");
    runtime.shutdown_background();
}

fn client(
    registries: &Arc<Registries>,
    tenant: &str,
    user: Option<(&str, &str)>,
) -> RegistryClient {
    let options = ClientOptions {
        tenant: Some(tenant.into()),
        timeout: Duration::from_secs(300),
        credentials: user.map(|(username, password)| Credentials {
            username: username.into(),
            password: password.into(),
        }),
        ..ClientOptions::default()
    };
    RegistryClient::new(options, registries.clone()).unwrap()
}

fn image(host: &str, repository: &str) -> ImageReference {
    ImageReference::parse(&format!("{host}/{repository}"), true).unwrap()
}

/// 16 listings of one tenant answered a minute late hold a host's 4 slots, 12 queued.
async fn slots() -> (String, Duration, String) {
    let hostile: Vec<(String, String)> = (0..16)
        .map(|i| ("hostile".to_string(), format!("hostile/app{i}")))
        .collect();
    let attack = "16 listings answered 60 s late hold the host's 4 slots, 12 queued";
    let bound = "10 s (a slot taken back)";
    (attack.into(), newcomers_wait(&hostile).await, bound.into())
}

/// N tenants (1 to twice the slots), each with 4 listings answered a minute late, hold a
/// host's 4 slots, the rest queued: the newcomer's wait for each N (the worst is the row's).
/// The tenants that have not been served yet are served in turn, 4 each 10 s, the newcomer
/// among them: its bound grows with N.
async fn slots_many() -> (String, Duration, String) {
    let (mut waits, mut worst) = (Vec::new(), Duration::ZERO);
    for n in [1, 2, 4, 8] {
        let hostile: Vec<(String, String)> = (0..n)
            .flat_map(|t| {
                (0..4).map(move |i| (format!("hostile-{t}"), format!("hostile{t}/app{i}")))
            })
            .collect();
        let waited = newcomers_wait(&hostile).await;
        worst = worst.max(waited);
        waits.push(format!("{n}: {waited:.1?}"));
    }
    let attack = format!(
        "N tenants of 4 listings answered 60 s late each, N = 1, 2, 4, 8 ({})",
        waits.join(", ")
    );
    let bound = "10 s a round of the host's 4 slots: ⌈(N+1)/4⌉ × 10 s, 30 s at N = 8";
    (attack, worst, bound.into())
}

/// The listings `hostile` (tenant, repository) answered a minute late, started first on one
/// host until they hold its 4 slots; then how long another tenant's listing waits.
async fn newcomers_wait(hostile: &[(String, String)]) -> Duration {
    let server = FaultServer::start(|seen: &Seen| {
        let reply = Reply::json(200, serde_json::json!({"tags": ["1.0"]}));
        match seen.path().starts_with("/v2/hostile") {
            true => reply.delayed(Duration::from_secs(60)),
            false => reply,
        }
    })
    .await;
    let registries = Registries::new(SchedulerConfig::default());
    for (tenant, repository) in hostile {
        let reader = client(&registries, tenant, None);
        let image = image(&server.host(), repository);
        tokio::spawn(async move { reader.list_tags(&image).await });
    }
    while server.seen().len() < 4 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let asked = Instant::now();
    client(&registries, "team", None)
        .list_tags(&image(&server.host(), "team/app"))
        .await
        .unwrap();
    asked.elapsed()
}

/// Two namespaces' pages of 64 and 32 MiB nearly sent, then stalled: the whole budget.
async fn memory() -> (String, Duration, String) {
    let registries = Registries::new(SchedulerConfig::default());
    for (tenant, mib) in [("hostile-a", 64), ("hostile-b", 32)] {
        let (host, _) = stalling_pages(mib << 20).await;
        let reader = client(&registries, tenant, None);
        tokio::spawn(async move { reader.list_tags(&image(&host, "x/app")).await });
        while registries.memory_budget().held_by(tenant) < (mib - 1) << 20 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let healthy =
        FaultServer::start(|_| Reply::json(200, serde_json::json!({"tags": ["1.0"]}))).await;
    let team = client(&registries, "team", None);
    let asked = Instant::now();
    // Tried again at once after a refusal, as a retry would be (the controller's first
    // retry comes 750 ms later).
    while team
        .list_tags(&image(&healthy.host(), "team/app"))
        .await
        .is_err()
    {
        tokio::task::yield_now().await;
    }
    let attack = "two namespaces hold 64 + 32 MiB of stalled pages: the whole budget";
    let bound = "the next try after one refusal (the first retry: 750 ms)";
    (attack.into(), asked.elapsed(), bound.into())
}

/// One identity throttled an hour on the path another lists with its own password.
async fn throttle() -> (String, Duration, String) {
    let server = FaultServer::start_with(|addr| {
        let challenge = format!(r#"Basic realm="{addr}""#);
        move |seen: &Seen| match seen.header("Authorization") {
            None => Reply::status(401).header("WWW-Authenticate", &challenge),
            // mallory:m
            Some(auth) if auth.ends_with("bWFsbG9yeTpt") => {
                Reply::status(429).header("Retry-After", "3600")
            }
            Some(_) => Reply::json(200, serde_json::json!({"tags": ["1.0"]})),
        }
    })
    .await;
    let registries = Registries::new(SchedulerConfig::default());
    let shared_path = image(&server.host(), "b/app");
    let mallory = client(&registries, "hostile", Some(("mallory", "m")));
    assert!(
        mallory.list_tags(&shared_path).await.is_err(),
        "mallory is throttled"
    );
    let asked = Instant::now();
    client(&registries, "team", Some(("alice", "a")))
        .list_tags(&shared_path)
        .await
        .unwrap();
    let attack = "another identity on the same path got 429 Retry-After: 3600";
    (
        attack.into(),
        asked.elapsed(),
        "none: throttling is per identity".into(),
    )
}

fn policy(namespace: &str, name: &str) -> ImagePolicy {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1",
        "kind": "ImagePolicy",
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {"imageRepositoryRef": {"name": "r"}, "policy": {"alphabetical": {}}},
    }))
    .unwrap()
}

/// 64 decisions that never end, 16 in each of 4 namespaces, fill the background.
async fn background() -> (String, Duration, String) {
    let handoffs: Handoffs<ImagePolicy, ()> = Handoffs::default();
    let decisions = ["a", "b", "c", "d"]
        .iter()
        .flat_map(|ns| (0..16).map(move |i| policy(ns, &format!("p{i}"))))
        .map(|obj| {
            let handoffs = &handoffs;
            async move { handoffs.decide(&obj, std::future::pending::<()>).await }
        });
    futures::future::join_all(decisions).await;
    let victim = policy("team", "p");
    let asked = Instant::now();
    let handed = handoffs
        .decide(&victim, || async {
            tokio::time::sleep(Duration::from_millis(3500)).await;
        })
        .await;
    assert!(
        matches!(handed, Handed::Working),
        "the other namespace gets room"
    );
    let attack = "4 namespaces x 16 decisions that never end fill the 64 places";
    let bound = "none past the worker's own 3 s (room taken back at once)";
    (attack.into(), asked.elapsed(), bound.into())
}

/// 200 notifications of one namespace that notification-controller answers 4 s late.
async fn notify() -> (String, Duration, String) {
    let server = FaultServer::start(|seen: &Seen| {
        if String::from_utf8_lossy(&seen.body).contains("\"hostile\"") {
            Reply::status(503).delayed(Duration::from_secs(4))
        } else {
            Reply::status(200)
        }
    })
    .await;
    let notifier = Notifier::new(&format!("http://{}/", server.host()), "bench".into()).unwrap();
    let event = |namespace: &str, i: usize| {
        serde_json::json!({
            "involvedObject": {"kind": "ImagePolicy", "namespace": namespace, "name": format!("p{i}")},
            "message": "m",
        })
    };
    for i in 0..200 {
        notifier.spawn_send(event("hostile", i));
    }
    while server.connections() < 4 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let asked = Instant::now();
    notifier.spawn_send(event("team", 0));
    let seen_team = || {
        server
            .seen()
            .iter()
            .any(|s| String::from_utf8_lossy(&s.body).contains("\"team\""))
    };
    while !seen_team() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let attack = "200 notifications answered 4 s late (then 503, retried)";
    (
        attack.into(),
        asked.elapsed(),
        "one attempt in flight (5 s timeout)".into(),
    )
}
