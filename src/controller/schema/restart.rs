//! A watch that starts again, with a fresh list, whenever the served schema of its kind
//! changes ([`super::monitor::ServedSchema`]): a watch opened under the old schema would go on
//! serving objects as that schema decoded them.

use futures::stream::{BoxStream, Stream, StreamExt};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

/// A kind's watch, as both controllers run it (kube's watcher, its default backoff), listed
/// again whenever `restarts` changes.
pub fn restarting_watch<K>(
    api: Api<K>,
    config: watcher::Config,
    restarts: watch::Receiver<u64>,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    restarting(restarts, move || {
        watcher(api.clone(), config.clone()).default_backoff()
    })
}

/// The stream `start()` makes, made again each time `restarts` changes. A restart drops the
/// running stream and begins the new one (for a kube watcher: `Init`, the list, `InitDone`,
/// which the caches take as a relist).
pub fn restarting<T, S>(
    restarts: watch::Receiver<u64>,
    start: impl Fn() -> S + Send + 'static,
) -> impl Stream<Item = T> + Send
where
    S: Stream<Item = T> + Send + 'static,
    T: Send + 'static,
{
    let first: BoxStream<'static, T> = start().boxed();
    futures::stream::unfold(
        (first, restarts, start),
        |(mut running, mut restarts, start)| async move {
            loop {
                tokio::select! {
                    // The sender dropped (no monitor): this branch is off, the watch runs on.
                    Ok(()) = restarts.changed() => {
                        tracing::info!("the served schema changed: the watch lists again");
                        running = start().boxed();
                    }
                    item = running.next() => {
                        return item.map(|item| (item, (running, restarts, start)));
                    }
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    #[tokio::test]
    async fn a_restart_begins_the_stream_again_and_without_one_it_runs_on() {
        let (sender, receiver) = watch::channel(0u64);
        let starts = Arc::new(AtomicU64::new(0));
        let counted = starts.clone();
        let start = move || {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            // Each start yields its number, then waits forever (as a watch does).
            futures::stream::iter([n]).chain(futures::stream::pending())
        };
        let mut stream = Box::pin(restarting(receiver, start));
        assert_eq!(stream.next().await, Some(0));
        sender.send(1).unwrap();
        assert_eq!(stream.next().await, Some(1), "started again");
        drop(sender);
        let next = tokio::time::timeout(std::time::Duration::from_millis(50), stream.next());
        assert!(
            next.await.is_err(),
            "no monitor: the running stream goes on"
        );
        assert_eq!(starts.load(Ordering::SeqCst), 2);
    }
}
