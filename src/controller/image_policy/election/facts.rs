//! Where the election's facts come from in the controller and in `scan` ([`StoreAndRegistry`],
//! the walk's [`FactSource`]): the store when it knows them (a tag's digest while the
//! [`DigestRule`](super::freshness::DigestRule) says it is current, an image's creation time
//! and platforms, a signature verdict, a first sighting), else the registry, and what is learnt
//! is kept in the store.

use super::context::Context;
use super::mode::Mode;
use super::signature::{check_signature, verdict_counts, verdict_key};
use super::walk::{Budget, Cut, Evidence, FactSource, LookError};
use crate::policy::{Fact, Platform};
use crate::registry::{Inspected, RegistryError};
use crate::store::{
    DigestFact, DigestFacts, FirstSeen, ImageFacts, ImageFactsFile, PlatformFact, RepoKey,
    SignatureVerdict, StoreError, TagStore,
};
use std::sync::Arc;
use std::time::Duration;

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
    /// images and first sightings with gates or a newest order; an election without either
    /// that asks the registry reads nothing. A failure of the advisory ones only costs requests; a first-seen record
    /// that cannot be read counts every tag as seen `now` (held, never passed early).
    pub async fn read(ctx: &Context<'_>) -> Known {
        let (store, key, now) = (ctx.store, ctx.key, ctx.now);
        let mut known = Known::default();
        if ctx.rule.reads_store() {
            known.digests = blocking(store, key, |s, k| s.digest_facts(k).map(Some))
                .await
                .unwrap_or_default();
        }
        if ctx.mode == Mode::Gated || ctx.newest {
            let images = blocking(store, key, |s, k| s.all_image_facts(k).map(Some)).await;
            known.images = images.unwrap_or_default();
            let seen = blocking(store, key, |s, k| s.first_seen(k).map(Some)).await;
            known.seen = Some(seen.unwrap_or_else(|| FirstSeen::all_at(now)));
        }
        known
    }
}

/// The walk's facts from the store, else the registry.
pub(super) struct StoreAndRegistry<'l, 'a> {
    pub ctx: &'l Context<'a>,
    pub known: Known,
}

impl<'l, 'a> StoreAndRegistry<'l, 'a> {
    /// The source over what the store knows now (one read of each file the election needs).
    pub async fn open(ctx: &'l Context<'a>) -> Self {
        let known = Known::read(ctx).await;
        StoreAndRegistry { ctx, known }
    }

    /// What is known of the image `digest` without a request.
    fn image(&self, digest: &str) -> ImageFacts {
        self.known
            .images
            .get(digest)
            .cloned()
            .unwrap_or_else(|| ImageFacts {
                digest: digest.to_string(),
                ..Default::default()
            })
    }

    /// When `tag` was first seen at its digest (Unix seconds), if kept.
    fn first_seen(&self, tag: &str) -> Option<i64> {
        self.known.seen.as_ref().map(|seen| seen.at(tag))
    }
}

impl FactSource for StoreAndRegistry<'_, '_> {
    async fn digest(&mut self, tag: &str, budget: &mut Budget<'_>) -> Result<String, Cut> {
        let (digest, inspected) = digest_now(self.ctx, &mut self.known, tag, budget).await?;
        if let Some(found) = inspected {
            let mut facts = self.image(&digest);
            if !facts.inspected {
                take_inspection(&mut facts, found);
                self.keep(facts).await;
            }
        }
        Ok(digest)
    }

    fn known(&self, tag: &str, digest: &str) -> Evidence {
        Evidence {
            tag: tag.to_string(),
            image: self.image(digest),
            first_seen: self.first_seen(tag),
        }
    }

    async fn look_up(&mut self, fact: Fact, evidence: &mut Evidence) -> Result<(), Cut> {
        let ctx = self.ctx;
        let facts = &mut evidence.image;
        match fact {
            Fact::Image => {
                let client = ctx.client.get().await?;
                let inspected = client.inspect(ctx.image, &facts.digest).await;
                let found = inspected.map_err(|e| cut(ctx, e))?.ok_or(Cut::Gone)?;
                take_inspection(facts, found);
            }
            Fact::Signature => {
                let Some(keys) = ctx.keys else {
                    return Err(LookError::NoKeys.into());
                };
                let client = ctx.client.get().await?;
                let (image, digest) = (ctx.image, &facts.digest);
                let at = (ctx.now, ctx.recheck);
                let verdict = check_signature(keys, client, image, digest, at).await?;
                facts.set_verdict(verdict);
            }
            // Read once per reconcile: a record that could not be read counts every tag as
            // seen now (held, never passed early); none without gates.
            Fact::FirstSeen => evidence.first_seen = self.first_seen(&evidence.tag),
            // Given with the candidate by the walk (its judge's bumps), never looked up: a
            // gate still lacking it holds the candidate.
            Fact::Bump => {}
        }
        Ok(())
    }

    /// The verdict for the trusted keys while it holds: a valid signature until its end; "not
    /// valid" within `recheck`, not when a reconcile was requested, and always when this walk
    /// just checked it (a requested reconcile re-checks; it does not discard the re-check).
    fn verdict<'f>(
        &self,
        facts: &'f ImageFacts,
        checked_now: bool,
    ) -> Option<&'f SignatureVerdict> {
        let ctx = self.ctx;
        let verdict = ctx
            .keys
            .and_then(|keys| facts.verdict(&verdict_key(&keys.fingerprint, ctx.image)))?;
        verdict_counts(verdict, ctx.now, ctx.recheck, ctx.fresh, checked_now).then_some(verdict)
    }

    async fn keep(&mut self, mut facts: ImageFacts) {
        facts.recorded_at = self.ctx.now;
        self.known.images.record(facts.clone());
        blocking(self.ctx.store, self.ctx.key, move |s, k| {
            s.record_image_facts(k, facts).map(Some)
        })
        .await;
    }
}

/// The digest `tag` names: the known one while the rule says it is current (and when it is
/// due, kept in `known.due`), else from the registry, with the inspection read along the way.
async fn digest_now(
    ctx: &Context<'_>,
    known: &mut Known,
    tag: &str,
    budget: &mut Budget<'_>,
) -> Result<(String, Option<Inspected>), Cut> {
    if let Some((digest, due_in)) = ctx.rule.current(tag, known.digests.get(tag)) {
        known.due = known.due.clone().or(due_in.map(|d| (tag.to_string(), d)));
        return Ok((digest, None));
    }
    budget.charge()?;
    let resolved = tokio::time::timeout(ctx.timeout, resolve(ctx, known, tag)).await;
    let (digest, inspected) =
        resolved.map_err(|_| Cut::from(LookError::Timeout(ctx.timeout)))??;
    let digest = digest.ok_or(Cut::Gone)?;
    let fact = DigestFact {
        digest: digest.clone(),
        checked_at: ctx.now,
    };
    known.digests.record(tag, fact.clone());
    // A digest other than the one the tag was first seen at restarts its clock.
    let (now, owned, resolved) = (ctx.now, tag.to_string(), digest.clone());
    let seen = known.seen.as_mut();
    if seen.is_some_and(|seen| seen.resolved(tag, &digest, now)) {
        blocking(ctx.store, ctx.key, move |s, k| {
            s.resolved(k, &owned, &resolved, now).map(Some)
        })
        .await;
    }
    let owned = tag.to_string();
    blocking(ctx.store, ctx.key, move |s, k| {
        s.record_digest(k, &owned, fact).map(Some)
    })
    .await;
    Ok((digest, inspected))
}

/// The digest `tag` names now: with the image gates, by GETting the manifest (which the
/// inspection then reads on, unless its digest is already known); otherwise a HEAD. `None`:
/// the tag is gone.
async fn resolve(
    ctx: &Context<'_>,
    known: &Known,
    tag: &str,
) -> Result<(Option<String>, Option<Inspected>), Cut> {
    let client = ctx.client.get().await?;
    let failed = |e: RegistryError| cut(ctx, e);
    if ctx.gates.needs_image() {
        let Some(manifest) = client.manifest(ctx.image, tag).await.map_err(failed)? else {
            return Ok((None, None));
        };
        let digest = manifest.digest.clone();
        if known.images.get(&digest).is_some_and(|f| f.inspected) {
            return Ok((Some(digest), None));
        }
        let inspected = client.inspect_manifest(ctx.image, manifest).await;
        return Ok((Some(digest), Some(inspected.map_err(failed)?)));
    }
    match client.digest(ctx.image, tag).await {
        Ok(digest) => Ok((Some(digest), None)),
        Err(RegistryError::Status {
            status_code: 404, ..
        }) if ctx.mode == Mode::Gated => Ok((None, None)),
        Err(e) => Err(failed(e)),
    }
}

/// A failed registry request as the walk takes it: with gates, the registry's refusal to serve
/// the image by its own policy holds the candidate back ([`Cut::Refused`]); anything else, and
/// without gates (Flux's digest failure), ends the walk.
fn cut(ctx: &Context<'_>, error: RegistryError) -> Cut {
    match error.refusal() {
        Some(why) if ctx.mode == Mode::Gated => Cut::Refused(why),
        _ => Cut::from(error),
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
