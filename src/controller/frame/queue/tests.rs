use super::*;

#[test]
fn depth_counts_due_objects_once_each() {
    let q = WorkQueue::new("imagerepository");
    let t0 = Instant::now();
    q.add("a".into(), t0);
    q.add("a".into(), t0);
    q.add("b".into(), t0 + Duration::from_secs(60));
    assert_eq!(q.stats(t0).depth, 1, "b is not due yet; a counts once");
    assert_eq!(q.stats(t0).adds, 3);
    // A trigger brings a later requeue forward.
    q.add("b".into(), t0);
    assert_eq!(q.stats(t0).depth, 2);
    q.start("a", t0);
    let stats = q.stats(t0 + Duration::from_secs(2));
    assert_eq!((stats.depth, stats.running), (1, 1));
    assert_eq!(stats.oldest_running, Some(Duration::from_secs(2)));
    q.finish(
        "a",
        Some(Duration::from_secs(30)),
        t0 + Duration::from_secs(2),
    );
    let stats = q.stats(t0 + Duration::from_secs(3));
    assert_eq!((stats.depth, stats.running), (1, 0));
    assert_eq!(
        q.stats(t0 + Duration::from_secs(40)).depth,
        2,
        "a is due again"
    );
    q.forget("a");
    q.forget("b");
    assert_eq!(q.stats(t0 + Duration::from_secs(40)).depth, 0);
}

#[test]
fn waits_reconcile_times_and_retries_are_recorded() {
    let metrics = crate::telemetry::metrics::Metrics::default();
    let q = WorkQueue::new("imagerepository");
    q.record_into(metrics.queue(q.name));
    let t0 = Instant::now();
    q.add("a".into(), t0);
    q.start("a", t0 + Duration::from_millis(300));
    assert_eq!(
        q.unfinished(t0 + Duration::from_millis(500)),
        Duration::from_millis(200)
    );
    q.retried();
    q.finish(
        "a",
        Some(Duration::from_secs(1)),
        t0 + Duration::from_secs(2),
    );
    let text = metrics.encode();
    let line = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix} in {text}"))
            .to_string()
    };
    assert!(
        line("workqueue_queue_duration_seconds_sum{name=\"imagerepository\"}").ends_with(" 0.3")
    );
    assert!(
        line("workqueue_work_duration_seconds_sum{name=\"imagerepository\"}").ends_with(" 1.7")
    );
    assert!(line("workqueue_retries_total{name=\"imagerepository\"}").ends_with(" 1"));
}

#[test]
fn unhealthy_when_a_loop_ended_or_a_reconcile_is_stuck() {
    let q = WorkQueue::new("imagepolicy");
    let t0 = Instant::now();
    let limit = Duration::from_secs(60);
    assert_eq!(
        unhealthy(&[&q], limit, t0).as_deref(),
        Some("the imagepolicy controller is not running")
    );
    q.set_alive(true);
    q.start("p", t0);
    assert_eq!(unhealthy(&[&q], limit, t0 + Duration::from_secs(59)), None);
    assert_eq!(
        unhealthy(&[&q], limit, t0 + Duration::from_secs(61)).as_deref(),
        Some("the reconcile of p has been running for 61s (more than 60s)")
    );
    q.finish("p", None, t0 + Duration::from_secs(61));
    assert_eq!(unhealthy(&[&q], limit, t0 + Duration::from_secs(62)), None);
}

fn released(q: &WorkQueue, now: Instant, limit: usize) -> Option<String> {
    match q.state().next_due(now, limit) {
        Due::Now(key) => Some(key.into()),
        Due::Later(_) => None,
    }
}

#[test]
fn objects_are_released_in_due_order_a_few_at_a_time() {
    let q = WorkQueue::new("imagerepository");
    let t0 = Instant::now();
    q.add("R/ns/c".into(), t0 + Duration::from_millis(2));
    q.add("R/ns/a".into(), t0);
    q.add("R/ns/b".into(), t0 + Duration::from_millis(1));
    let now = t0 + Duration::from_secs(1);
    assert_eq!(released(&q, now, 2).as_deref(), Some("R/ns/a"));
    assert_eq!(released(&q, now, 2).as_deref(), Some("R/ns/b"));
    assert_eq!(
        q.state().next_due(now, 2),
        Due::Later(None),
        "two released and not started: no third"
    );
    assert_eq!(
        q.stats(now).depth,
        3,
        "released and not started still count"
    );
    q.start("R/ns/a", now);
    assert_eq!(released(&q, now, 2).as_deref(), Some("R/ns/c"));
    assert_eq!(q.state().next_due(now, 3), Due::Later(None), "none left");
}

#[test]
fn a_later_time_waits_and_an_earlier_one_wins() {
    let q = WorkQueue::new("imagepolicy");
    let t0 = Instant::now();
    let later = t0 + Duration::from_secs(60);
    q.add("P/ns/a".into(), later);
    assert_eq!(q.state().next_due(t0, 4), Due::Later(Some(later)));
    q.add("P/ns/a".into(), later + Duration::from_secs(1));
    assert_eq!(
        q.state().next_due(t0, 4),
        Due::Later(Some(later)),
        "the earlier time stays"
    );
    q.add("P/ns/a".into(), t0);
    assert_eq!(released(&q, t0, 4).as_deref(), Some("P/ns/a"));
    // The entry it left at `later` is stale: nothing is due then.
    assert_eq!(q.state().next_due(later, 4), Due::Later(None));
    assert!(q.state().timeline.is_empty());
}

#[test]
fn a_start_takes_what_waited_for_its_object() {
    let q = WorkQueue::new("imagepolicy");
    let t0 = Instant::now();
    q.add("P/ns/a".into(), t0);
    assert_eq!(released(&q, t0, 4).as_deref(), Some("P/ns/a"));
    // Triggered again before its reconcile starts: that reconcile reads the new state.
    q.add("P/ns/a".into(), t0);
    q.start("P/ns/a", t0);
    assert_eq!(q.state().next_due(t0, 4), Due::Later(None));
    q.finish("P/ns/a", Some(Duration::from_secs(5)), t0);
    let requeued = t0 + Duration::from_secs(5);
    assert_eq!(q.state().next_due(t0, 4), Due::Later(Some(requeued)));
    assert_eq!(released(&q, requeued, 4).as_deref(), Some("P/ns/a"));
}

#[test]
fn stale_entries_do_not_pile_up() {
    let q = WorkQueue::new("imagepolicy");
    let t0 = Instant::now();
    for i in (0..1_000u64).rev() {
        q.add("P/ns/a".into(), t0 + Duration::from_secs(i));
    }
    let state = q.state();
    assert_eq!(state.waiting.len(), 1);
    assert!(
        state.timeline.len() <= 2 + 64 + 1,
        "{}",
        state.timeline.len()
    );
}

#[test]
fn an_object_that_will_not_start_frees_its_place() {
    let q = WorkQueue::new("imagepolicy");
    let t0 = Instant::now();
    q.add("P/ns/a".into(), t0);
    q.add("P/ns/b".into(), t0 + Duration::from_millis(1));
    let now = t0 + Duration::from_secs(1);
    assert_eq!(released(&q, now, 1).as_deref(), Some("P/ns/a"));
    assert_eq!(released(&q, now, 1), None);
    q.dropped("P/ns/a");
    assert_eq!(released(&q, now, 1).as_deref(), Some("P/ns/b"));
    q.forget("P/ns/b");
    assert!(q.state().released.is_empty(), "forgotten, released or not");
}

fn cached(names: &[&str]) -> Arc<crate::controller::frame::stage::Stage<ImageRepository>> {
    use crate::controller::object::cache::ObjectCache;
    let cache = Arc::new(ObjectCache::default());
    cache.apply(&kube::runtime::watcher::Event::Init);
    for name in names {
        let repo: ImageRepository = serde_json::from_value(serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
            "metadata": {"name": name, "namespace": "team", "uid": "u"},
            "spec": {"image": format!("r/{name}"), "interval": "5m"},
        }))
        .unwrap();
        cache.apply(&kube::runtime::watcher::Event::InitApply(repo));
    }
    crate::controller::frame::stage::Stage::new(cache)
}

use crate::api::ImageRepository;

#[tokio::test]
async fn the_stream_hands_kube_names_alone_when_due() {
    use futures::StreamExt;
    let q = Arc::new(WorkQueue::new("imagerepository"));
    let stage = cached(&["app", "second", "third"]);
    let mut releases = Box::pin(q.releases::<ImageRepository>(1, stage.clone()));
    q.add("ImageRepository/team/app".into(), Instant::now());
    let early = tokio::time::timeout(Duration::from_millis(50), releases.next()).await;
    assert!(
        early.is_err(),
        "nothing released before the cache has the first list"
    );
    stage.cache.apply(&kube::runtime::watcher::Event::InitDone);
    let first = tokio::time::timeout(Duration::from_secs(10), releases.next())
        .await
        .expect("released once due")
        .unwrap();
    assert_eq!(
        (first.name.as_str(), first.namespace.as_deref()),
        ("app", Some("team"))
    );
    assert_eq!(
        (&first.extra.uid, &first.extra.resource_version),
        (&None, &None)
    );
    assert!(
        stage.reader().get(&first).is_some(),
        "staged for kube's controller"
    );
    // One worker: two released and not started at most; the third waits for a start.
    q.add("ImageRepository/team/second".into(), Instant::now());
    assert_eq!(releases.next().await.unwrap().name, "second");
    q.add("ImageRepository/team/third".into(), Instant::now());
    let waiting = tokio::time::timeout(Duration::from_millis(50), releases.next()).await;
    assert!(waiting.is_err(), "held back while two have not started");
    q.start("ImageRepository/team/app", Instant::now());
    let third = tokio::time::timeout(Duration::from_secs(10), releases.next())
        .await
        .expect("released once a place is free")
        .unwrap();
    assert_eq!(third.name, "third");
    assert_eq!(stage.len(), 3);
    // A reconcile that ends unstages its object; one released again meanwhile stays.
    q.finish("ImageRepository/team/app", None, Instant::now());
    assert!(
        stage.reader().get(&first).is_none(),
        "unstaged once its reconcile ended"
    );
    q.start("ImageRepository/team/second", Instant::now());
    q.add("ImageRepository/team/second".into(), Instant::now());
    let again = releases.next().await.unwrap();
    q.finish("ImageRepository/team/second", None, Instant::now());
    assert!(
        stage.reader().get(&again).is_some(),
        "released again: kept for its next run"
    );
    q.forget("ImageRepository/team/third");
    assert_eq!(stage.len(), 1, "a forgotten object is unstaged");
}

#[tokio::test]
async fn an_object_gone_before_its_turn_is_not_released() {
    use futures::StreamExt;
    let q = Arc::new(WorkQueue::new("imagerepository"));
    let stage = cached(&["here"]);
    stage.cache.apply(&kube::runtime::watcher::Event::InitDone);
    let mut releases = Box::pin(q.releases::<ImageRepository>(1, stage.clone()));
    q.add("ImageRepository/team/gone".into(), Instant::now());
    q.add(
        "ImageRepository/team/here".into(),
        Instant::now() + Duration::from_millis(1),
    );
    let next = tokio::time::timeout(Duration::from_secs(10), releases.next())
        .await
        .expect("the next one comes")
        .unwrap();
    assert_eq!(next.name, "here", "the gone one is passed over");
    assert!(!q
        .state()
        .released
        .contains(&q.hash("ImageRepository/team/gone")));
}

#[tokio::test]
async fn an_object_gone_from_the_cache_frees_its_place() {
    use kube::runtime::controller::Error as ControllerError;
    use kube::runtime::reflector::ObjectRef;
    let q = Arc::new(WorkQueue::new("imagerepository"));
    let now = Instant::now();
    q.add("ImageRepository/team/gone".into(), now);
    assert!(released(&q, now, 1).is_some());
    let gone = ObjectRef::<ImageRepository>::new("gone")
        .within("team")
        .erase();
    let results: Vec<Result<(), ControllerError<std::io::Error, std::io::Error>>> =
        vec![Err(ControllerError::ObjectNotFound(Box::new(gone)))];
    q.clone().run_loop(futures::stream::iter(results)).await;
    assert!(q.state().released.is_empty());
    assert!(!q.stats(now).alive, "the loop ended");
}
