//! The scheduler's bounds and backoff.

use super::series::{MAX_HOST_SERIES, OTHER_HOSTS};
use super::*;

#[tokio::test]
async fn hosts_and_their_series_are_bounded() {
    let scheduler = Scheduler::default();
    // A host with a request in flight and one backing off are kept over idle ones.
    let busy = scheduler.acquire("busy.example").await.unwrap();
    scheduler.record("slow.example", Some(429), Some(Duration::from_secs(600)));
    for i in 0..MAX_HOSTS + 500 {
        let host = format!("h{i}.example");
        let slot = scheduler.acquire(&host).await.unwrap();
        drop(slot);
        scheduler.record(&host, Some(200), None);
    }
    // The documented bound (docs/security.md), not the constant: changing one fails here.
    assert_eq!(scheduler.host_count(), 1024);
    assert!(scheduler.hosts.lock().unwrap().contains("busy.example"));
    assert!(
        matches!(
            scheduler.acquire("slow.example").await,
            Err(RegistryError::RateLimited { .. })
        ),
        "the backoff was kept"
    );
    let backoffs = scheduler.backoffs();
    assert!(backoffs.len() <= MAX_HOST_SERIES + 1, "{}", backoffs.len());
    assert!(backoffs.contains_key(OTHER_HOSTS));
    assert!(backoffs["slow.example"] > Duration::from_secs(500));
    drop(busy);

    let counts = scheduler.request_counts();
    let hosts: HashSet<&String> = counts.keys().map(|(host, _)| host).collect();
    assert_eq!(
        hosts.len(),
        257,
        "256 hosts and `other` (docs/operations.md)"
    );
    let total: u64 = counts.values().sum();
    assert_eq!(total, MAX_HOSTS as u64 + 500 + 1, "every request counted");
    assert_eq!(
        counts[&(OTHER_HOSTS.to_string(), "200".to_string())],
        (MAX_HOSTS + 500 + 1 - MAX_HOST_SERIES) as u64,
        "the hosts past the cap, folded"
    );
}

/// Hosts not asked for an hour, with nothing in flight and no backoff, go with their series;
/// a busy one, one backing off and one asked since stay.
#[tokio::test]
async fn hosts_no_one_asks_any_more_go_with_their_series() {
    let scheduler = Scheduler::default();
    for host in ["old.example", "busy.example", "asked.example"] {
        drop(scheduler.acquire(host).await.unwrap());
        scheduler.record(host, Some(200), None);
    }
    scheduler.record("slow.example", Some(429), Some(Duration::from_secs(86_400)));
    let busy = scheduler.acquire("busy.example").await.unwrap();
    let hour = Duration::from_secs(3600);
    let later = Instant::now() + hour;
    *scheduler.host("asked.example").used.lock().unwrap() = later;
    assert_eq!(
        scheduler.forget_idle(hour, Instant::now()),
        0,
        "all asked just now"
    );
    assert_eq!(scheduler.forget_idle(hour, later), 1);
    let hosts = scheduler.hosts.lock().unwrap();
    let mut kept: Vec<&str> = hosts.iter().map(|(h, _)| h.as_str()).collect();
    kept.sort();
    assert_eq!(kept, ["asked.example", "busy.example", "slow.example"]);
    drop((hosts, busy));
    let counts = scheduler.request_counts();
    assert!(
        !counts.keys().any(|(h, _)| h == "old.example"),
        "{counts:?}"
    );
    assert!(counts.keys().any(|(h, _)| h == "asked.example"));
    assert_eq!(
        scheduler.series.label("old.example"),
        "old.example",
        "a free label again"
    );
}

#[test]
fn backoff_grows_is_capped_and_jittered() {
    let s = Scheduler::new(SchedulerConfig {
        base_backoff: Duration::from_secs(1),
        max_backoff: Duration::from_secs(10),
        ..Default::default()
    });
    for (streak, nominal) in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 10.0)] {
        let d = s.computed_backoff(streak).as_secs_f64();
        assert!(
            (nominal * 0.8..=nominal * 1.2).contains(&d),
            "{streak}: {d}"
        );
    }
}

#[tokio::test]
async fn a_throttled_host_fails_fast_beyond_max_wait() {
    let s = Scheduler::new(SchedulerConfig {
        max_wait: Duration::ZERO,
        ..Default::default()
    });
    let at = s.record("r.example", Some(429), Some(Duration::from_secs(60)));
    assert!(at.is_some());
    assert!(s.record("r.example", Some(200), None).is_none());
    match s.acquire("r.example").await {
        Err(RegistryError::RateLimited {
            host,
            status,
            retry_at,
        }) => {
            assert_eq!((host.as_str(), status), ("r.example", 429));
            let left = retry_at.duration_since(SystemTime::now()).unwrap();
            assert!(left > Duration::from_secs(55), "{left:?}");
        }
        other => panic!("expected RateLimited, got {:?}", other.map(|_| ())),
    }
    assert!(s.acquire("other.example").await.is_ok(), "per host");
    assert_eq!(
        s.request_counts()
            .get(&("r.example".to_string(), "429".to_string())),
        Some(&1)
    );
    assert_eq!(s.refused_counts().get("r.example"), Some(&1));
    let backoffs = s.backoffs();
    assert!(
        backoffs["r.example"] > Duration::from_secs(55),
        "{backoffs:?}"
    );
    assert_eq!(backoffs["other.example"], Duration::ZERO);
}
