//! Where the election's facts come from in the controller and in `scan` ([`StoreAndRegistry`],
//! the walk's [`FactSource`]): the store when it knows them (a tag's digest while the
//! [`DigestRule`] says it is current, an image's creation time and platforms, a signature
//! verdict, a first sighting), else the registry, and what is learnt is kept in the store.

use super::client::ClientError;
use super::freshness::DigestRule;
use super::signature::{check_signature, verdict_holds, verdict_key};
use super::walk::{Budget, Cut, FactSource, LookError};
use crate::policy::{Fact, Gates, Platform};
use crate::registry::{ImageReference, Inspected, RegistryClient, RegistryError};
use crate::store::{
    DigestFact, DigestFacts, FirstSeen, ImageFacts, ImageFactsFile, PlatformFact, RepoKey,
    SignatureVerdict, StoreError, TagStore,
};
use crate::verify::TrustedKeys;
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;

/// What the walk reads besides the candidates.
pub(super) struct Looks<'a, 'c> {
    pub client: &'a LazyClient<'c>,
    pub image: &'a ImageReference,
    pub key: &'a RepoKey,
    pub store: &'a Arc<dyn TagStore>,
    pub gates: &'a Gates,
    pub keys: Option<&'a std::sync::Arc<TrustedKeys>>,
    /// Unix seconds.
    pub now: i64,
    /// When a tag's known digest is current.
    pub rule: DigestRule<'a>,
    /// How old a verdict of "not signed" may be before it is looked up again.
    pub recheck: Duration,
    /// A reconcile was requested: a verdict of "not signed" is looked up again.
    pub fresh: bool,
    /// A tag gone from the registry is skipped (a gated walk); without gates it fails the
    /// election, as Flux's digest fetch does.
    pub skip_gone: bool,
    /// The repository's `spec.timeout`, for each digest lookup.
    pub timeout: Duration,
}

/// The registry client, built at the first request: a walk answered from the store reads no
/// Secret and builds nothing.
pub(super) struct LazyClient<'a> {
    cell: tokio::sync::OnceCell<RegistryClient>,
    make: Box<dyn Fn() -> BoxFuture<'a, Result<RegistryClient, ClientError>> + Send + Sync + 'a>,
}

impl<'a> LazyClient<'a> {
    pub fn new(
        make: impl Fn() -> BoxFuture<'a, Result<RegistryClient, ClientError>> + Send + Sync + 'a,
    ) -> Self {
        LazyClient {
            cell: tokio::sync::OnceCell::new(),
            make: Box::new(make),
        }
    }

    pub(super) async fn get(&self) -> Result<&RegistryClient, Cut> {
        let made = self.cell.get_or_try_init(|| (self.make)()).await;
        made.map_err(Cut::from)
    }
}

/// What the store knew of the repository's digests and images when the walk began, and what
/// the walk learnt since: read once per reconcile, written through as it learns.
#[derive(Default)]
pub(super) struct Known {
    digests: DigestFacts,
    images: ImageFactsFile,
    /// When each tag was first seen at its digest; not read without gates.
    seen: Option<FirstSeen>,
    /// A tag whose known digest was taken, and when it is due to be looked up again.
    pub due: Option<(String, Duration)>,
}

impl Known {
    /// One read of each file the election needs: the digests when the rule may take one, the
    /// images and first sightings with gates; an election without gates that asks the registry
    /// reads nothing. A failure of the advisory ones only costs requests; a first-seen record
    /// that cannot be read counts every tag as seen `now` (held, never passed early).
    pub async fn read(looks: &Looks<'_, '_>) -> Known {
        let (store, key, now) = (looks.store, looks.key, looks.now);
        let mut known = Known::default();
        if looks.rule.reads_store() {
            known.digests = blocking(store, key, |s, k| s.digest_facts(k).map(Some))
                .await
                .unwrap_or_default();
        }
        if looks.gates.any() {
            let images = blocking(store, key, |s, k| s.all_image_facts(k).map(Some)).await;
            known.images = images.unwrap_or_default();
            let seen = blocking(store, key, |s, k| s.first_seen(k).map(Some)).await;
            known.seen = Some(seen.unwrap_or_else(|| FirstSeen::all_at(now)));
        }
        known
    }
}

/// The walk's facts from the store, else the registry.
pub(super) struct StoreAndRegistry<'l, 'a, 'c> {
    pub looks: &'l Looks<'a, 'c>,
    pub known: Known,
}

impl FactSource for StoreAndRegistry<'_, '_, '_> {
    async fn digest(&mut self, tag: &str, budget: &mut Budget<'_>) -> Result<String, Cut> {
        let (digest, inspected) = digest_now(self.looks, &mut self.known, tag, budget).await?;
        if let Some(found) = inspected {
            let mut facts = self.known(&digest);
            if !facts.inspected {
                take_inspection(&mut facts, found);
                self.keep(facts).await;
            }
        }
        Ok(digest)
    }

    fn known(&self, digest: &str) -> ImageFacts {
        self.known
            .images
            .get(digest)
            .cloned()
            .unwrap_or_else(|| ImageFacts {
                digest: digest.to_string(),
                ..Default::default()
            })
    }

    async fn look_up(&mut self, fact: Fact, facts: &mut ImageFacts) -> Result<(), Cut> {
        let looks = self.looks;
        match fact {
            Fact::Image => {
                let client = looks.client.get().await?;
                let inspected = client.inspect(looks.image, &facts.digest).await;
                let found = inspected.map_err(Cut::from)?.ok_or(Cut::Gone)?;
                take_inspection(facts, found);
            }
            Fact::Signature => {
                let Some(keys) = looks.keys else {
                    return Err(LookError::NoKeys.into());
                };
                let client = looks.client.get().await?;
                let (image, digest) = (looks.image, &facts.digest);
                let verdict = check_signature(keys, client, image, digest, looks.now).await?;
                facts.set_verdict(verdict);
            }
        }
        Ok(())
    }

    /// The verdict for the trusted keys while it holds: a valid signature always; "not
    /// valid" within `recheck`, and not when a reconcile was requested.
    fn verdict<'f>(&self, facts: &'f ImageFacts) -> Option<&'f SignatureVerdict> {
        let looks = self.looks;
        let verdict = looks
            .keys
            .and_then(|keys| facts.verdict(&verdict_key(&keys.fingerprint, looks.image)))?;
        verdict_holds(verdict, looks.now, looks.recheck, looks.fresh).then_some(verdict)
    }

    fn first_seen(&self, tag: &str) -> Option<i64> {
        self.known.seen.as_ref().map(|seen| seen.at(tag))
    }

    async fn keep(&mut self, mut facts: ImageFacts) {
        facts.recorded_at = self.looks.now;
        self.known.images.record(facts.clone());
        blocking(self.looks.store, self.looks.key, move |s, k| {
            s.record_image_facts(k, facts).map(Some)
        })
        .await;
    }
}

/// The digest `tag` names: the known one while the rule says it is current (and when it is
/// due, kept in `known.due`), else from the registry, with the inspection read along the way.
async fn digest_now(
    looks: &Looks<'_, '_>,
    known: &mut Known,
    tag: &str,
    budget: &mut Budget<'_>,
) -> Result<(String, Option<Inspected>), Cut> {
    if let Some((digest, due_in)) = looks.rule.current(tag, known.digests.get(tag)) {
        known.due = known.due.clone().or(due_in.map(|d| (tag.to_string(), d)));
        return Ok((digest, None));
    }
    budget.charge()?;
    let resolved = tokio::time::timeout(looks.timeout, resolve(looks, known, tag)).await;
    let (digest, inspected) =
        resolved.map_err(|_| Cut::from(LookError::Timeout(looks.timeout)))??;
    let digest = digest.ok_or(Cut::Gone)?;
    let fact = DigestFact {
        digest: digest.clone(),
        checked_at: looks.now,
    };
    known.digests.record(tag, fact.clone());
    // A digest other than the one the tag was first seen at restarts its clock.
    let (now, owned, resolved) = (looks.now, tag.to_string(), digest.clone());
    let seen = known.seen.as_mut();
    if seen.is_some_and(|seen| seen.resolved(tag, &digest, now)) {
        blocking(looks.store, looks.key, move |s, k| {
            s.resolved(k, &owned, &resolved, now).map(Some)
        })
        .await;
    }
    let owned = tag.to_string();
    blocking(looks.store, looks.key, move |s, k| {
        s.record_digest(k, &owned, fact).map(Some)
    })
    .await;
    Ok((digest, inspected))
}

/// The digest `tag` names now: with the image gates, by GETting the manifest (which the
/// inspection then reads on, unless its digest is already known); otherwise a HEAD. `None`:
/// the tag is gone.
async fn resolve(
    looks: &Looks<'_, '_>,
    known: &Known,
    tag: &str,
) -> Result<(Option<String>, Option<Inspected>), Cut> {
    let client = looks.client.get().await?;
    let failed = |e: RegistryError| Cut::from(e);
    if looks.gates.needs_image() {
        let Some(manifest) = client.manifest(looks.image, tag).await.map_err(failed)? else {
            return Ok((None, None));
        };
        let digest = manifest.digest.clone();
        if known.images.get(&digest).is_some_and(|f| f.inspected) {
            return Ok((Some(digest), None));
        }
        let inspected = client.inspect_manifest(looks.image, manifest).await;
        return Ok((Some(digest), Some(inspected.map_err(failed)?)));
    }
    match client.digest(looks.image, tag).await {
        Ok(digest) => Ok((Some(digest), None)),
        Err(RegistryError::Status {
            status_code: 404, ..
        }) if looks.skip_gone => Ok((None, None)),
        Err(e) => Err(failed(e)),
    }
}

/// Keeps what an inspection found in `facts` (verdicts stay).
fn take_inspection(facts: &mut ImageFacts, found: Inspected) {
    facts.inspected = true;
    facts.created = found.created;
    facts.platforms = found
        .platforms
        .into_iter()
        .map(|p| PlatformFact {
            platform: Platform::new(&p.os, &p.architecture, p.variant.as_deref()).to_string(),
            created: p.created,
        })
        .collect();
}

/// A store call on the blocking pool; a failure only costs a request later (the facts are
/// advisory), so it is logged and taken as "not known".
async fn blocking<T: Send + 'static>(
    store: &Arc<dyn TagStore>,
    key: &RepoKey,
    f: impl FnOnce(&dyn TagStore, &RepoKey) -> Result<Option<T>, StoreError> + Send + 'static,
) -> Option<T> {
    let (store, key) = (store.clone(), key.clone());
    match tokio::task::spawn_blocking(move || f(store.as_ref(), &key)).await {
        Ok(Ok(value)) => value,
        Ok(Err(err)) => {
            tracing::debug!(%err, "the store's image facts were not read or kept");
            None
        }
        Err(_) => None,
    }
}
