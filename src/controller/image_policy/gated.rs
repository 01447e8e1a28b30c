//! The gated election (docs/imagepolicy.md, "Gated election"): the candidates from the best
//! down, each looked at until one passes every gate. What a look needs comes from the store
//! when it is known (a tag's digest, an image's creation time and platforms, a signature
//! verdict), else from the registry, for at most [`MAX_INSPECTIONS`] candidates per reconcile
//! and [`MAX_WALK`] in all.

use crate::api::HeldBackTag;
use crate::policy::{check_image, created_for, Gate, Gates, Hold, Platform};
use crate::registry::{ImageReference, Inspected, RegistryClient, TrustedKeys};
use crate::store::{
    DigestFact, ImageFacts, PlatformFact, RepoKey, SignatureVerdict, StoreError, TagStore,
};
use std::sync::Arc;
use std::time::Duration;

/// Candidates walked per reconcile, best first: beyond, nothing is elected (NoEligibleTag).
pub const MAX_WALK: usize = 50;
/// Candidates per reconcile whose look needs the registry; when spent, the walk goes on in
/// the next reconcile, seconds later, with what this one learnt in the store.
pub const MAX_INSPECTIONS: usize = 10;

/// What the walk reads besides the candidates.
pub(super) struct Looks<'a> {
    pub client: &'a RegistryClient,
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

/// Where the walk ended.
#[derive(Debug, Default)]
pub(super) struct Walked {
    /// The tag elected and its digest.
    pub elected: Option<(String, String)>,
    /// The better-ranked candidates held back, best first.
    pub held: Vec<HeldBackTag>,
    /// When a held candidate should be looked at again (a minimum age reached, a recheck).
    pub look_again: Option<Duration>,
    /// Candidates looked at, and how many of them needed the registry.
    pub walked: usize,
    pub inspected: usize,
    /// The walk stopped at [`MAX_INSPECTIONS`] and goes on in the next reconcile.
    pub unfinished: bool,
}

/// Walks `ranked` (best first) and elects the first candidate that passes every gate. A
/// registry error ends the walk with an error: nothing unchecked is elected.
pub(super) async fn walk(ranked: &[String], looks: &Looks<'_>) -> Result<Walked, String> {
    let mut walked = Walked::default();
    for tag in ranked.iter().take(MAX_WALK) {
        walked.walked += 1;
        let mut spent = false;
        let mut budget = |walked: &mut Walked| {
            if !spent {
                if walked.inspected == MAX_INSPECTIONS {
                    return false;
                }
                spent = true;
                walked.inspected += 1;
            }
            true
        };
        let fail = |e: String| format!("checking the gates of {tag}: {e}");
        // The digest the tag names now, and what looking it up read along the way.
        let stored = blocking(looks.store, looks.key, {
            let tag = tag.clone();
            move |s, k| s.digest_fact(k, &tag)
        })
        .await;
        let current = stored.filter(|f| {
            let age = looks.now.saturating_sub(f.checked_at);
            !looks.fresh
                && (looks.settled == Some(tag.as_str())
                    || (age >= 0 && (age as u64) < looks.recheck.as_secs()))
        });
        let (digest, mut inspected) = match current {
            Some(fact) => (fact.digest, None),
            None => {
                if !budget(&mut walked) {
                    walked.unfinished = true;
                    break;
                }
                let (digest, inspected) = resolve(looks, tag).await.map_err(fail)?;
                let Some(digest) = digest else {
                    continue; // gone since the scan: not a candidate
                };
                let fact = DigestFact {
                    digest: digest.clone(),
                    checked_at: looks.now,
                };
                let owned = tag.clone();
                blocking(looks.store, looks.key, move |s, k| {
                    s.record_digest(k, &owned, fact).map(Some)
                })
                .await;
                (digest, inspected)
            }
        };
        let mut facts = blocking(looks.store, looks.key, {
            let digest = digest.clone();
            move |s, k| s.image_facts(k, &digest)
        })
        .await
        .unwrap_or_else(|| ImageFacts {
            digest: digest.clone(),
            ..Default::default()
        });
        let mut changed = false;
        if looks.gates.needs_image() && !facts.inspected {
            if inspected.is_none() {
                if !budget(&mut walked) {
                    walked.unfinished = true;
                    break;
                }
                inspected = looks
                    .client
                    .inspect(looks.image, &digest)
                    .await
                    .map_err(|e| fail(e.to_string()))?;
                // (the digest's manifest is gone: not a candidate, below)
            }
            let Some(found) = inspected.take() else {
                continue;
            };
            take_inspection(&mut facts, found);
            changed = true;
        }
        let hold = match check_facts(looks.gates, &facts, looks.now) {
            Err(hold) => Some(hold),
            Ok(()) => match looks.keys {
                None => None,
                Some(keys) => {
                    let known = facts.verdict(&keys.fingerprint).filter(|v| {
                        v.verified_by.is_some()
                            || (!looks.fresh
                                && (looks.now.saturating_sub(v.checked_at) as u64)
                                    < looks.recheck.as_secs())
                    });
                    let verdict = match known {
                        Some(v) => v.clone(),
                        None => {
                            if !budget(&mut walked) {
                                walked.unfinished = true;
                                break;
                            }
                            let signatures = looks
                                .client
                                .cosign_signatures(looks.image, &digest)
                                .await
                                .map_err(|e| fail(e.to_string()))?;
                            let verified = keys.verify(&signatures, looks.image, &digest);
                            let verdict = SignatureVerdict {
                                keys: keys.fingerprint.clone(),
                                verified_by: verified.as_ref().ok().cloned(),
                                reason: verified.err().unwrap_or_default(),
                                checked_at: looks.now,
                            };
                            facts.set_verdict(verdict.clone());
                            changed = true;
                            verdict
                        }
                    };
                    verdict.verified_by.is_none().then(|| Hold {
                        gate: Gate::Verify,
                        reason: verdict.reason.clone(),
                        eligible_at: None,
                    })
                }
            },
        };
        if changed {
            facts.recorded_at = looks.now;
            blocking(looks.store, looks.key, move |s, k| {
                s.record_image_facts(k, facts).map(Some)
            })
            .await;
        }
        let Some(hold) = hold else {
            walked.elected = Some((tag.clone(), digest));
            break;
        };
        let again = match hold.eligible_at {
            Some(at) => Duration::from_secs(at.saturating_sub(looks.now).max(1) as u64),
            None => looks.recheck,
        };
        walked.look_again = Some(walked.look_again.map_or(again, |d| d.min(again)));
        walked.held.push(HeldBackTag {
            tag: tag.clone(),
            digest: Some(digest),
            gate: hold.gate.as_str().into(),
            reason: hold.reason,
        });
    }
    Ok(walked)
}

/// The digest `tag` names now: with the image gates, by GETting the manifest (which the
/// inspection then reads on, unless its digest is already known); otherwise a HEAD. `None`:
/// the tag is gone.
async fn resolve(
    looks: &Looks<'_>,
    tag: &str,
) -> Result<(Option<String>, Option<Inspected>), String> {
    if looks.gates.needs_image() {
        let client = looks.client;
        let manifest = client.manifest(looks.image, tag).await;
        let Some(manifest) = manifest.map_err(|e| e.to_string())? else {
            return Ok((None, None));
        };
        let digest = manifest.digest.clone();
        let known = blocking(looks.store, looks.key, {
            let digest = digest.clone();
            move |s, k| s.image_facts(k, &digest)
        })
        .await
        .is_some_and(|f| f.inspected);
        if known {
            return Ok((Some(digest), None));
        }
        let inspected = client.inspect_manifest(looks.image, manifest).await;
        return Ok((Some(digest), Some(inspected.map_err(|e| e.to_string())?)));
    }
    match looks.client.digest(looks.image, tag).await {
        Ok(digest) => Ok((Some(digest), None)),
        Err(crate::registry::RegistryError::Status {
            status_code: 404, ..
        }) => Ok((None, None)),
        Err(e) => Err(e.to_string()),
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

/// The image gates over stored facts.
pub(super) fn check_facts(gates: &Gates, facts: &ImageFacts, now: i64) -> Result<(), Hold> {
    if !gates.needs_image() {
        return Ok(());
    }
    let platforms: Vec<(Platform, Option<i64>)> = facts
        .platforms
        .iter()
        .filter_map(|p| Platform::parse(&p.platform).ok().map(|x| (x, p.created)))
        .collect();
    let offered: Vec<Platform> = platforms.iter().map(|(p, _)| p.clone()).collect();
    let created = created_for(gates, facts.created, &platforms);
    check_image(gates, created, &offered, now)
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
