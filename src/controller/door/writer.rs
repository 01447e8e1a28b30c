//! Writes each namespace's VerifiedDigests `verified` when what its policies vouch for
//! changed: told by the policy watch which namespaces to look at, a second's changes together,
//! by server-side apply, and only where something changed. Every [`RESYNC`] (and after the
//! watch listed again) what is there is read back and every namespace judged again, so an
//! object deleted or edited by someone else, or a deletion the watch missed, is put right.
//! Without `config/admission` installed (the kind not served) it writes nothing and says so
//! once, looking again each minute while there are policies.

use super::digests::{verified, Verified};
use super::found::{watch_deletions, Seen};
use crate::api::{ImagePolicy, VerifiedDigests, VerifiedDigestsSpec, VERIFIED_NAME};
use crate::controller::object::cache::ObjectCache;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The field manager of our writes.
const FIELD_MANAGER: &str = "image-reflector";
/// Changes within this are written together.
const COALESCE: Duration = Duration::from_secs(1);
/// A write that failed is tried again after this; the kind is looked for again after this.
const RETRY: Duration = Duration::from_secs(10);
const LOOK_AGAIN: Duration = Duration::from_secs(60);
/// What is written is read back and judged again this often.
pub const RESYNC: Duration = Duration::from_secs(300);

/// The namespaces whose policies changed since they were last looked at.
#[derive(Debug, Default)]
pub struct Door {
    dirty: Mutex<BTreeSet<String>>,
    /// Every namespace written is to be judged again (the watch listed again: a policy deleted
    /// meanwhile left no event).
    everything: AtomicBool,
    /// What is there is to be read back (one was deleted).
    reread: AtomicBool,
    /// The VerifiedDigests' watch ended: the kind is looked for again.
    lost: AtomicBool,
    wake: Notify,
    /// The namespace the controller watches, else all: a controller scoped to one namespace
    /// reads back and writes only that one's, never another controller's (whose policies it
    /// does not see, so it would write them empty).
    scope: Option<String>,
}

/// What the writer knows: what it wrote (or found) per namespace, and whether the kind is
/// served.
#[derive(Default)]
struct Written {
    digests: HashMap<String, Verified>,
    served: Option<bool>,
    looked_at: Option<Instant>,
    /// When what is there was last read back.
    read_at: Option<Instant>,
    /// Whether deletions are watched (from the first read back on).
    watched: bool,
    /// Read backs refused in a row: the first is said at debug (config/admission being
    /// removed refuses one), the next at warn.
    read_failures: u32,
    /// When to look again without being told: a failed write, or the kind looked for again.
    again: Option<Instant>,
}

impl Written {
    /// Whether the kind is served is looked for again `after` this, then what is there read
    /// back and watched again.
    fn forget_served(&mut self, after: Duration) {
        (self.served, self.looked_at) = (None, None);
        (self.read_at, self.watched) = (None, false);
        self.again = Some(Instant::now() + after);
    }
}

impl Door {
    /// A door whose keeper runs until `shutdown`, over the policies' watch cache.
    pub fn open(
        client: &kube::Client,
        scope: Option<String>,
        policies: &Arc<ObjectCache<ImagePolicy>>,
        shutdown: &CancellationToken,
    ) -> Arc<Door> {
        let door = Arc::new(Door {
            scope,
            ..Door::default()
        });
        let keeper = door
            .clone()
            .run(client.clone(), policies.clone(), shutdown.clone());
        tokio::spawn(keeper);
        door
    }

    /// The policies of `namespace` changed (one was added, changed or deleted).
    pub fn touch(&self, namespace: &str) {
        let mut dirty = self.dirty.lock().unwrap_or_else(PoisonError::into_inner);
        dirty.insert(namespace.to_string());
        self.wake.notify_one();
    }

    /// What the VerifiedDigests' watch saw: one deleted (read back what is there), or its end
    /// (look for the kind again).
    fn seen(&self, seen: Seen) {
        match seen {
            Seen::Deleted => self.reread.store(true, Relaxed),
            Seen::Ended => self.lost.store(true, Relaxed),
        }
        self.wake.notify_one();
    }

    /// The watch listed every policy again: every namespace is judged again.
    pub fn relisted(&self) {
        self.everything.store(true, Relaxed);
        self.wake.notify_one();
    }

    fn take(&self) -> BTreeSet<String> {
        std::mem::take(&mut *self.dirty.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Keeps the VerifiedDigests true until `shutdown`, over the policies' watch cache.
    async fn run(
        self: Arc<Self>,
        client: kube::Client,
        policies: Arc<ObjectCache<ImagePolicy>>,
        shutdown: CancellationToken,
    ) {
        policies.ready().await;
        let mut written = Written::default();
        loop {
            let again = written.again.take();
            let resync = written.read_at.map(|at| at + RESYNC);
            let wake = again.into_iter().chain(resync).min();
            tokio::select! {
                () = self.wake.notified() => {}
                () = tokio::time::sleep_until(wake.unwrap_or_else(Instant::now).into()), if wake.is_some() => {}
                () = shutdown.cancelled() => return,
            }
            tokio::select! {
                () = tokio::time::sleep(COALESCE) => {}
                () = shutdown.cancelled() => return,
            }
            if self.lost.swap(false, Relaxed) {
                // Looked for again a little later: config/admission being removed takes its
                // RBAC and its CRD in turn, and a read between them is refused.
                written.forget_served(RETRY);
                continue;
            }
            if !self.served(&client, &mut written).await {
                // Looked for again each minute while there are policies (one discovery
                // request), so that config/admission installed after them is found without
                // waiting for a change: until then, an enforced namespace denies everything.
                self.take();
                written.read_at = None;
                if !policies.is_empty() {
                    written.again = written.looked_at.map(|at| at + LOOK_AGAIN);
                }
                continue;
            }
            let due = written.read_at.is_none_or(|at| at.elapsed() >= RESYNC);
            if self.reread.swap(false, Relaxed) || due {
                let Some(version) = self.read_back(&client, &mut written).await else {
                    // A refusal may be config/admission's removal half done: the kind is
                    // looked for again, 10 s later the first time, then each minute.
                    let failures = written.read_failures;
                    written.forget_served(if failures > 1 { LOOK_AGAIN } else { RETRY });
                    continue;
                };
                if !written.watched {
                    let door = self.clone();
                    let told = move |seen| door.seen(seen);
                    watch_deletions(told, self.objects(&client), version, shutdown.clone());
                    written.watched = true;
                }
                // Every namespace with policies too: config/admission installed since, or a
                // policy whose namespace has no object yet.
                for (namespace, _) in policies.names() {
                    self.touch(&namespace);
                }
            }
            if self.everything.swap(false, Relaxed) {
                for namespace in written.digests.keys() {
                    self.touch(namespace);
                }
            }
            if !self.write_touched(&client, &policies, &mut written).await {
                written.again = Some(Instant::now() + RETRY);
            }
        }
    }

    /// Writes each touched namespace whose verified digests changed; false when a write
    /// failed (that namespace stays touched).
    async fn write_touched(
        &self,
        client: &kube::Client,
        policies: &ObjectCache<ImagePolicy>,
        written: &mut Written,
    ) -> bool {
        let mut all_written = true;
        // The cache's keys once per batch; only the touched namespaces' policies decoded.
        let mut names: HashMap<String, Vec<String>> = HashMap::new();
        for (namespace, name) in policies.names() {
            names.entry(namespace).or_default().push(name);
        }
        for namespace in self.take() {
            let listed = names.get(&namespace).into_iter().flatten();
            let in_namespace: Vec<ImagePolicy> = listed
                .filter_map(|name| policies.get(&namespace, name))
                .collect();
            let now = verified(&in_namespace);
            let before = written.digests.get(&namespace);
            if before == Some(&now) || before.is_none() && now.digests.is_empty() {
                continue;
            }
            if now.left_out > 0 {
                tracing::warn!(namespace, left_out = now.left_out, "more verified digests than a VerifiedDigests holds: previous elections, then the last policies by name, are left out (its leftOut says how many)");
            }
            match write(client, &namespace, &now).await {
                Ok(()) => drop(written.digests.insert(namespace, now)),
                // The namespace is gone: nothing to keep there.
                Err(kube::Error::Api(e)) if e.code == 404 => {
                    written.digests.remove(&namespace);
                }
                Err(error) => {
                    tracing::warn!(namespace, %error, "could not write the namespace's VerifiedDigests; tried again in 10s");
                    self.dirty
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(namespace);
                    all_written = false;
                }
            }
        }
        all_written
    }

    /// The VerifiedDigests of the scope: the watched namespace's, else all.
    fn objects(&self, client: &kube::Client) -> Api<VerifiedDigests> {
        match &self.scope {
            Some(namespace) => Api::namespaced(client.clone(), namespace),
            None => Api::all(client.clone()),
        }
    }

    /// Whether the kind is served (discovery, which every account may read: a kind not
    /// installed is no error, and asks nothing RBAC would refuse).
    async fn served(&self, client: &kube::Client, written: &mut Written) -> bool {
        let recent = written
            .looked_at
            .is_some_and(|at| at.elapsed() < LOOK_AGAIN);
        if written.served == Some(true) || recent {
            return written.served == Some(true);
        }
        written.looked_at = Some(Instant::now());
        let (version, plural) = (
            VerifiedDigests::api_version(&()),
            VerifiedDigests::plural(&()),
        );
        let group = client.list_api_group_resources(&version).await;
        let installed = group.is_ok_and(|g| g.resources.iter().any(|r| r.name == plural));
        if !installed && written.served.is_none() {
            tracing::info!("config/admission is not installed: no VerifiedDigests are written; looked for again each minute");
        }
        written.served = Some(installed);
        installed
    }

    /// Reads back what is there: a namespace whose object is not what was written (edited,
    /// deleted, or written before this process) is judged again. The list's version, to watch
    /// from; `None` when it cannot be read.
    async fn read_back(&self, client: &kube::Client, written: &mut Written) -> Option<String> {
        let list = match self.objects(client).list(&ListParams::default()).await {
            Ok(list) => list,
            Err(error) => {
                written.read_failures += 1;
                match written.read_failures {
                    1 => {
                        tracing::debug!(%error, "the VerifiedDigests cannot be read; looked for again in 10s")
                    }
                    _ => {
                        tracing::warn!(%error, "config/admission is installed but its VerifiedDigests cannot be read: check config/admission/rbac.yaml; tried again each minute")
                    }
                }
                return None;
            }
        };
        written.read_failures = 0;
        written.read_at = Some(Instant::now());
        let mut found: HashMap<String, Verified> = HashMap::new();
        for object in list.items {
            let namespace = object.namespace().unwrap_or_default();
            let verified = Verified {
                digests: object.spec.digests,
                left_out: object.spec.left_out as usize,
            };
            found.insert(namespace, verified);
        }
        let known: BTreeSet<String> = found
            .keys()
            .chain(written.digests.keys())
            .cloned()
            .collect();
        for namespace in known {
            // Judged again whatever is found: a deletion the watch missed shows here too.
            self.touch(&namespace);
            match found.remove(&namespace) {
                Some(there) => drop(written.digests.insert(namespace, there)),
                None => drop(written.digests.remove(&namespace)),
            }
        }
        Some(list.metadata.resource_version.unwrap_or_default())
    }
}

/// The namespace's VerifiedDigests, as `verified` says.
async fn write(
    client: &kube::Client,
    namespace: &str,
    verified: &Verified,
) -> Result<(), kube::Error> {
    let api = Api::<VerifiedDigests>::namespaced(client.clone(), namespace);
    let spec = VerifiedDigestsSpec {
        count: verified.digests.len() as u32,
        digests: verified.digests.clone(),
        left_out: u32::try_from(verified.left_out).unwrap_or(u32::MAX),
    };
    let object = VerifiedDigests::new(VERIFIED_NAME, spec);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(VERIFIED_NAME, &params, &Patch::Apply(&object))
        .await?;
    Ok(())
}
