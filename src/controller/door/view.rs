//! What a sharded controller's door judges: every ImagePolicy of its scope, its own shard's and
//! the others'. A namespace has one VerifiedDigests, so each shard writes it from the same view
//! (every shard's elections, read from the policies' status), and the shards' writes agree
//! rather than each erasing the others' digests. Unsharded, the controller's own cache is that
//! view already.

use super::Door;
use crate::api::ImagePolicy;
use crate::controller::object::cache::ObjectCache;
use crate::controller::object::slim::slim;
use futures::StreamExt;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The door of a controller that watches only `--watch-label-selector`'s policies: it watches
/// every policy of `policies`' scope (no selector) for itself, until `shutdown`.
pub fn sharded_door(
    client: &kube::Client,
    scope: Option<String>,
    policies: Api<ImagePolicy>,
    shutdown: &CancellationToken,
) -> Arc<Door> {
    let every = Arc::new(ObjectCache::default());
    let door = Door::open(client, scope, &every, shutdown);
    let (watching, shutdown) = (door.clone(), shutdown.clone());
    tokio::spawn(async move {
        let events = watcher(policies, watcher::Config::default())
            .default_backoff()
            .modify(slim)
            .take_until(shutdown.cancelled());
        let mut events = std::pin::pin!(events);
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => {
                    every.apply(&event);
                    told(&watching, &event);
                }
                Err(error) => {
                    tracing::warn!(%error, "the door's watch of every ImagePolicy failed; retried with backoff");
                }
            }
        }
    });
    door
}

/// Tells `door` what a policy watch's `event` changed: the namespace of a policy applied or
/// deleted; after a new listing, every namespace (a deletion meanwhile left no event).
pub fn told(door: &Door, event: &watcher::Event<ImagePolicy>) {
    match event {
        watcher::Event::Apply(p) | watcher::Event::InitApply(p) | watcher::Event::Delete(p) => {
            door.touch(&p.namespace().unwrap_or_default());
        }
        watcher::Event::InitDone => door.relisted(),
        watcher::Event::Init => {}
    }
}
