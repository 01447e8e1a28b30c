//! One tenant's registries cannot take the memory the others' reads need (docs/security.md,
//! "What a registry answers"): a body is charged as its bytes arrive, never by the length a
//! registry declares, and one namespace holds at most its share of the budget: a namespace
//! refused while others hold more than their fair share stops their largest reads.

use super::registry_faults::{client, shared};
use crate::support::fault_server::{stalling_after, stalling_pages, FaultServer, Reply};
use image_reflector::fair::WaitClock;
use image_reflector::reference::ImageReference;
use image_reflector::registry::PROCESS_BUDGET_BYTES;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Two stalled declarations of 64 and 32 MiB made every other tenant's scans fail ("memory
/// budget held by other reads") for as long as they stalled.
#[tokio::test]
async fn declared_lengths_that_never_arrive_hold_no_budget() {
    let registries = shared();
    let mut stalled = Vec::new();
    let mut counters = Vec::new();
    for mib in [64, 32] {
        // The page's opening sent, the rest never.
        let (host, asked) = stalling_after(mib << 20, 0).await;
        let image = ImageReference::parse(&format!("{host}/hostile/app"), true).unwrap();
        let hostile = client(&registries, |o| o.tenant = Some("hostile".into()));
        stalled.push(tokio::spawn(async move { hostile.list_tags(&image).await }));
        counters.push(asked);
    }
    while counters.iter().any(|c| c.load(Ordering::SeqCst) == 0) {
        tokio::task::yield_now().await;
    }
    let healthy = FaultServer::start(|_| Reply::json(200, json!({ "tags": ["1.0"] }))).await;
    let image = ImageReference::parse(&format!("{}/team/app", healthy.host()), true).unwrap();
    let team = client(&registries, |o| o.tenant = Some("team".into()));
    assert_eq!(team.list_tags(&image).await.unwrap(), ["1.0"]);
    // The stalled reads have charged what arrived (a few bytes), not what they declared.
    let budget = registries.memory_budget();
    assert!(
        budget.available() > PROCESS_BUDGET_BYTES - (1 << 20),
        "{} bytes held",
        PROCESS_BUDGET_BYTES - budget.available()
    );
    assert!(budget.held_by("hostile") < 1 << 20);
    for task in &stalled {
        assert!(!task.is_finished(), "still stalling");
        task.abort();
    }
}

/// The attack measured: two namespaces of one tenant, 64 + 32 MiB nearly sent and then
/// stalled, held the whole budget, and other namespaces' scans failed for over 6 minutes.
/// Now the other namespace's refusal stops the read over its fair share (a third each), that
/// read fails saying why, and the other namespace's next try is served while the first read's
/// stall would still last.
#[tokio::test]
async fn a_refused_namespace_stops_the_reads_over_their_fair_share() {
    let registries = shared();
    let mut stalled = Vec::new();
    for (namespace, mib) in [("hostile-a", 64), ("hostile-b", 32)] {
        let (host, sent) = stalling_pages(mib << 20).await;
        let image = ImageReference::parse(&format!("{host}/hostile/app"), true).unwrap();
        let hostile = client(&registries, |o| {
            o.tenant = Some(namespace.into());
            o.timeout = std::time::Duration::from_secs(300);
        });
        stalled.push(tokio::spawn(async move { hostile.list_tags(&image).await }));
        while sent.load(Ordering::SeqCst) == 0
            || registries.memory_budget().held_by(namespace) < (mib - 1) << 20
        {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
    let budget = registries.memory_budget();
    assert!(
        budget.available() < 1 << 20,
        "{} bytes free",
        budget.available()
    );
    let healthy = FaultServer::start(|_| Reply::json(200, json!({ "tags": ["1.0"] }))).await;
    let image = ImageReference::parse(&format!("{}/team/app", healthy.host()), true).unwrap();
    let team = client(&registries, |o| o.tenant = Some("team".into()));
    let refused = team.list_tags(&image).await.unwrap_err().to_string();
    assert!(refused.contains("were stopped to make room"), "{refused}");
    let big = stalled.remove(0).await.unwrap().unwrap_err().to_string();
    assert!(
        big.contains("the namespace hostile-a held more than its fair share (32 MiB)"),
        "{big}"
    );
    assert_eq!(team.list_tags(&image).await.unwrap(), ["1.0"]);
    assert!(
        !stalled[0].is_finished(),
        "a read within its fair share goes on"
    );
    assert_eq!(budget.held_by("hostile-b"), 32 << 20);
    stalled[0].abort();
}

/// A registry that answers headers at once and then drips its manifest body a byte at a time;
/// counts how many bodies it is dripping at once.
async fn dripping_manifests() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let (now, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let seen_peak = peak.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let (now, peak) = (now.clone(), peak.clone());
            tokio::spawn(async move {
                let mut request = vec![0; 4096];
                let _ = socket.read(&mut request).await;
                let body = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"a","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","size":1},"layers":[]}"#;
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let dripping = now.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(dripping, Ordering::SeqCst);
                for byte in body.chunks(8) {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    if socket.write_all(byte).await.is_err() {
                        break;
                    }
                }
                now.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (host, seen_peak)
}

/// A request's slot ended when its headers arrived: 200 policies whose manifests dripped held
/// 200 sockets of one host. Bodies are read at most four at once per host, as requests are.
#[tokio::test]
async fn bodies_are_read_at_most_four_at_once_per_host() {
    let (host, peak) = dripping_manifests().await;
    let registries = shared();
    let reads = (0..12).map(|i| {
        let image = ImageReference::parse(&format!("{host}/team/app{i}"), true).unwrap();
        let reader = client(&registries, |o| o.tenant = Some("team".into()));
        async move { reader.manifest(&image, "1.0").await }
    });
    let read = futures::future::join_all(reads).await;
    assert!(read.iter().all(|r| matches!(r, Ok(Some(_)))), "{read:?}");
    let peak = peak.load(Ordering::SeqCst);
    assert!((1..=4).contains(&peak), "{peak} bodies dripped at once");
}

/// One tenant's 16 reads of a dripping host hold its 4 slots with 12 queued behind them;
/// another tenant's read, arriving then, is served by the next slot that frees (the host's
/// slots are shared by tenant, registry/scheduler/fair.rs), not after the 12: first come
/// first served, a victim's first request once waited 3 min 54 s behind such a queue.
#[tokio::test]
async fn a_tenant_arriving_behind_anothers_queue_gets_the_next_free_slot() {
    let (host, peak) = dripping_manifests().await;
    let registries = shared();
    let done = Arc::new(AtomicUsize::new(0));
    let attacker: Vec<_> = (0..16)
        .map(|i| {
            let image = ImageReference::parse(&format!("{host}/hostile/app{i}"), true).unwrap();
            let reader = client(&registries, |o| o.tenant = Some("hostile".into()));
            let done = done.clone();
            tokio::spawn(async move {
                let read = reader.manifest(&image, "1.0").await;
                done.fetch_add(1, Ordering::SeqCst);
                read
            })
        })
        .collect();
    while peak.load(Ordering::SeqCst) < 4 {
        tokio::task::yield_now().await;
    }
    let image = ImageReference::parse(&format!("{host}/team/app"), true).unwrap();
    let clock = WaitClock::default();
    let team = client(&registries, |o| {
        o.tenant = Some("team".into());
        o.waits = Some(clock.clone());
    });
    let asked = std::time::Instant::now();
    assert!(matches!(team.manifest(&image, "1.0").await, Ok(Some(_))));
    // Its wait for the slot is on the scan's clock: waiting is not slowness
    // (running_scans.rs).
    let waited = clock.waited(std::time::Instant::now());
    assert!(
        waited >= std::time::Duration::from_millis(100) && waited <= asked.elapsed(),
        "{waited:?} of {:?}",
        asked.elapsed()
    );
    let before = done.load(Ordering::SeqCst);
    assert!(
        before <= 8,
        "{before} of the other tenant's 16 reads were served first"
    );
    for read in attacker {
        assert!(matches!(read.await.unwrap(), Ok(Some(_))));
    }
}

/// One tenant's 4 requests to a shared host that answers them after a minute hold all its
/// slots; another tenant's request, under its fair share (2 of 4), takes one back once held
/// 10 s (crate::fair::TAKE_BACK_AFTER): it is served in about 10 s, not a minute, and the
/// stopped request says why. Before, it waited for a slot to free, up to the attacker's
/// timeout (5 minutes at most).
#[tokio::test]
async fn a_slot_held_past_ten_seconds_is_taken_back_for_a_tenant_under_its_share() {
    let server = FaultServer::start(|seen| {
        if seen.path().starts_with("/v2/hostile/") {
            Reply::json(200, json!({ "tags": ["late"] }))
                .delayed(std::time::Duration::from_secs(60))
        } else {
            Reply::json(200, json!({ "tags": ["1.0"] }))
        }
    })
    .await;
    let registries = shared();
    let attacker: Vec<_> = (0..4)
        .map(|i| {
            let image =
                ImageReference::parse(&format!("{}/hostile/app{i}", server.host()), true).unwrap();
            let reader = client(&registries, |o| {
                o.tenant = Some("hostile".into());
                o.timeout = std::time::Duration::from_secs(300);
            });
            tokio::spawn(async move { reader.list_tags(&image).await })
        })
        .collect();
    while server.seen().len() < 4 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let image = ImageReference::parse(&format!("{}/team/app", server.host()), true).unwrap();
    let team = client(&registries, |o| o.tenant = Some("team".into()));
    let asked = std::time::Instant::now();
    assert_eq!(team.list_tags(&image).await.unwrap(), ["1.0"]);
    // Served while the attacker's answers are still a minute away: by a slot taken back.
    let waited = asked.elapsed();
    let finished = attacker.iter().filter(|t| t.is_finished()).count();
    assert_eq!(finished, 1, "served after {waited:?}");
    let mut stopped = 0;
    for task in attacker {
        if task.is_finished() {
            let err = task.await.unwrap().unwrap_err().to_string();
            assert!(err.contains("stopped after 10s"), "{err}");
            stopped += 1;
        } else {
            task.abort();
        }
    }
    assert_eq!(
        stopped, 1,
        "one slot taken back, the attacker keeps its share"
    );
}
