//! Where the gated election's facts come from in the controller and in `scan`
//! ([`StoreAndRegistry`], the walk's [`FactSource`]): the store when it knows them (a tag's
//! digest, an image's creation time and platforms, a signature verdict, a first sighting),
//! else the registry, and what is learnt is kept in the store.

use super::walk::{Budget, Cut, FactSource};
use crate::policy::{Fact, Gates, Platform};
use crate::registry::{ImageReference, Inspected, RegistryClient, TrustedKeys};
use crate::store::{
    DigestFact, DigestFacts, FirstSeen, ImageFacts, ImageFactsFile, PlatformFact, RepoKey,
    SignatureVerdict, StoreError, TagStore,
};
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
    pub keys: Option<&'a TrustedKeys>,
    /// Unix seconds.
    pub now: i64,
    /// How old a stored tag digest, or a verdict of "not signed", may be before it is looked
    /// up again.
    pub recheck: Duration,
    /// The elected tag whose stored digest is taken at any age (Flux does not resolve an
    /// elected tag again, but with `Always`).
    pub settled: Option<&'a str>,
    /// A reconcile was requested: nothing stored is taken as current but what a digest names
    /// (its image's creation time and platforms, a valid signature).
    pub fresh: bool,
}

/// The registry client, built at the first request: a walk answered from the store reads no
/// Secret and builds nothing.
pub(super) struct LazyClient<'a> {
    cell: tokio::sync::OnceCell<RegistryClient>,
    make: Box<dyn Fn() -> BoxFuture<'a, Result<RegistryClient, String>> + Send + Sync + 'a>,
}

impl<'a> LazyClient<'a> {
    pub fn new(
        make: impl Fn() -> BoxFuture<'a, Result<RegistryClient, String>> + Send + Sync + 'a,
    ) -> Self {
        LazyClient {
            cell: tokio::sync::OnceCell::new(),
            make: Box::new(make),
        }
    }

    pub(super) async fn get(&self) -> Result<&RegistryClient, Cut> {
        let made = self.cell.get_or_try_init(|| (self.make)()).await;
        made.map_err(Cut::Failed)
    }
}

/// What the store knew of the repository's digests and images when the walk began, and what
/// the walk learnt since: read once per reconcile, written through as it learns.
#[derive(Default)]
pub(super) struct Known {
    digests: DigestFacts,
    images: ImageFactsFile,
    /// When each tag was first seen at its digest.
    seen: FirstSeen,
}

impl Known {
    /// One read of each file. A failure of the advisory ones only costs requests; a first-seen
    /// record that cannot be read counts every tag as seen `now` (held, never passed early).
    pub async fn read(store: &Arc<dyn TagStore>, key: &RepoKey, now: i64) -> Known {
        let seen = blocking(store, key, |s, k| s.first_seen(k).map(Some)).await;
        let mut known = blocking(store, key, |s, k| {
            Ok(Some(Known {
                digests: s.digest_facts(k)?,
                images: s.all_image_facts(k)?,
                seen: FirstSeen::default(),
            }))
        })
        .await
        .unwrap_or_default();
        known.seen = seen.unwrap_or_else(|| FirstSeen::all_at(now));
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
                let found = inspected
                    .map_err(|e| Cut::Failed(e.to_string()))?
                    .ok_or(Cut::Gone)?;
                take_inspection(facts, found);
            }
            Fact::Signature => {
                let verdict = check_signature(looks, &facts.digest).await?;
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
            .and_then(|keys| facts.verdict(&keys.fingerprint))?;
        let recent =
            (looks.now.saturating_sub(verdict.checked_at) as u64) < looks.recheck.as_secs();
        (verdict.verified_by.is_some() || (!looks.fresh && recent)).then_some(verdict)
    }

    fn first_seen(&self, tag: &str) -> Option<i64> {
        Some(self.known.seen.at(tag))
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

/// The digest `tag` names: the stored one while it is current (looked up within `recheck`, or
/// the settled election's), else from the registry, with the inspection read along the way.
async fn digest_now(
    looks: &Looks<'_, '_>,
    known: &mut Known,
    tag: &str,
    budget: &mut Budget<'_>,
) -> Result<(String, Option<Inspected>), Cut> {
    let current = known.digests.get(tag).cloned().filter(|f| {
        let age = looks.now.saturating_sub(f.checked_at);
        !looks.fresh
            && (looks.settled == Some(tag) || (age >= 0 && (age as u64) < looks.recheck.as_secs()))
    });
    if let Some(fact) = current {
        return Ok((fact.digest, None));
    }
    budget.charge()?;
    let (digest, inspected) = resolve(looks, known, tag).await?;
    let digest = digest.ok_or(Cut::Gone)?;
    let fact = DigestFact {
        digest: digest.clone(),
        checked_at: looks.now,
    };
    known.digests.record(tag, fact.clone());
    // A digest other than the one the tag was first seen at restarts its clock.
    let (now, owned, resolved) = (looks.now, tag.to_string(), digest.clone());
    if known.seen.resolved(tag, &digest, now) {
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

/// The signatures of `digest`, read and verified against the trusted keys now.
async fn check_signature(looks: &Looks<'_, '_>, digest: &str) -> Result<SignatureVerdict, Cut> {
    let Some(keys) = looks.keys else {
        return Err(Cut::Failed("no trusted keys to verify with".into()));
    };
    let signatures = looks
        .client
        .get()
        .await?
        .cosign_signatures(looks.image, digest)
        .await
        .map_err(|e| Cut::Failed(e.to_string()))?;
    let verified = keys.verify(&signatures, looks.image, digest);
    Ok(SignatureVerdict {
        keys: keys.fingerprint.clone(),
        verified_by: verified.as_ref().ok().cloned(),
        reason: verified.err().unwrap_or_default(),
        checked_at: looks.now,
    })
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
    let failed = |e: crate::registry::RegistryError| Cut::Failed(e.to_string());
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
        Err(crate::registry::RegistryError::Status {
            status_code: 404, ..
        }) => Ok((None, None)),
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
