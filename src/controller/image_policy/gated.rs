//! The gated election (docs/imagepolicy.md, "Gated election"): the candidates from the best
//! down, each looked at until one passes every gate. What a look needs comes from the store
//! when it is known (a tag's digest, an image's creation time and platforms, a signature
//! verdict), else from the registry, for at most [`MAX_INSPECTIONS`] candidates per reconcile
//! and [`MAX_WALK`] in all.

use crate::api::HeldBackTag;
use crate::policy::{Fact, Facts, Gates, Hold, ImageView, Judgement, Platform};
use crate::registry::{ImageReference, Inspected, RegistryClient, TrustedKeys};
use crate::store::{
    DigestFact, DigestFacts, FirstSeen, ImageFacts, ImageFactsFile, PlatformFact, RepoKey,
    SignatureVerdict, StoreError, TagStore,
};
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;

/// Candidates walked per reconcile, best first: beyond, nothing is elected (NoEligibleTag).
pub const MAX_WALK: usize = 50;
/// Candidates per reconcile whose look needs the registry; when spent, the walk goes on in
/// the next reconcile, seconds later, with what this one learnt in the store.
pub const MAX_INSPECTIONS: usize = 10;

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

    async fn get(&self) -> Result<&RegistryClient, Cut> {
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

/// Walks `ranked` (best first) on from where `walked` stands, and elects the first candidate
/// that passes every gate. A registry error ends the walk with an error: nothing unchecked is
/// elected.
pub(super) async fn walk(
    ranked: &[String],
    looks: &Looks<'_, '_>,
    known: &mut Known,
    walked: &mut Walked,
) -> Result<(), String> {
    for tag in ranked.iter().take(MAX_WALK.saturating_sub(walked.walked)) {
        walked.walked += 1;
        let mut budget = Budget {
            used: &mut walked.inspected,
            charged: false,
        };
        let (digest, hold) = match look_at(looks, known, tag, &mut budget).await {
            Ok(looked) => looked,
            Err(Cut::Gone) => continue,
            Err(Cut::Spent) => {
                walked.unfinished = true;
                break;
            }
            Err(Cut::Failed(e)) => return Err(format!("checking the gates of {tag}: {e}")),
        };
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
            gate: hold.gate.into(),
            reason: hold.reason,
        });
    }
    Ok(())
}

/// Why a look at a candidate ended early.
enum Cut {
    /// The tag or its manifest is gone since the scan: not a candidate.
    Gone,
    /// It needs the registry and this reconcile's inspections are spent.
    Spent,
    /// The registry failed: the walk ends.
    Failed(String),
}

/// The reconcile's registry inspections, charged once per candidate that needs one.
struct Budget<'a> {
    used: &'a mut usize,
    charged: bool,
}

impl Budget<'_> {
    fn charge(&mut self) -> Result<(), Cut> {
        if !self.charged {
            if *self.used == MAX_INSPECTIONS {
                return Err(Cut::Spent);
            }
            *self.used += 1;
            self.charged = true;
        }
        Ok(())
    }
}

/// One candidate: its digest now, then the gates in their order, each asking for the facts it
/// lacks (the image, the signature check), looked up once and kept. Returns the digest and,
/// when a gate holds it back, why.
async fn look_at(
    looks: &Looks<'_, '_>,
    known: &mut Known,
    tag: &str,
    budget: &mut Budget<'_>,
) -> Result<(String, Option<Hold>), Cut> {
    let (digest, inspected) = digest_now(looks, known, tag, budget).await?;
    let mut facts = known
        .images
        .get(&digest)
        .cloned()
        .unwrap_or_else(|| ImageFacts {
            digest: digest.clone(),
            ..Default::default()
        });
    let mut changed = false;
    if let Some(found) = inspected.filter(|_| !facts.inspected) {
        take_inspection(&mut facts, found);
        changed = true;
    }
    // Each fact is looked up at most once, so the gates answer within as many rounds.
    let mut hold = None;
    let first_seen = Some(known.seen.at(tag));
    for _ in 0..=2 {
        let offered = platforms(&facts);
        let lacks = match looks
            .gates
            .judge(&view(looks, &facts, &offered, first_seen))
        {
            Judgement::Pass => break,
            Judgement::Hold(held) => {
                hold = Some(held);
                break;
            }
            Judgement::Lacks(lacks) => lacks,
        };
        budget.charge()?;
        match lacks {
            Fact::Image => {
                let client = looks.client.get().await?;
                let inspected = client.inspect(looks.image, &digest).await;
                let found = inspected
                    .map_err(|e| Cut::Failed(e.to_string()))?
                    .ok_or(Cut::Gone)?;
                take_inspection(&mut facts, found);
            }
            Fact::Signature => {
                let verdict = check_signature(looks, &facts.digest).await?;
                facts.set_verdict(verdict);
            }
        }
        changed = true;
    }
    if changed {
        facts.recorded_at = looks.now;
        known.images.record(facts.clone());
        blocking(looks.store, looks.key, move |s, k| {
            s.record_image_facts(k, facts).map(Some)
        })
        .await;
    }
    Ok((digest, hold))
}

/// What the gates see of `facts`: the image once inspected, and the signature verdict for
/// the trusted keys while it holds (a valid signature always; "not valid" within `recheck`,
/// and not when a reconcile was requested).
fn view<'a>(
    looks: &Looks<'_, '_>,
    facts: &'a ImageFacts,
    platforms: &'a [(Platform, Option<i64>)],
    first_seen: Option<i64>,
) -> Facts<'a> {
    let verdict = looks.keys.and_then(|keys| facts.verdict(&keys.fingerprint));
    let current = verdict.filter(|v| {
        v.verified_by.is_some()
            || (!looks.fresh
                && (looks.now.saturating_sub(v.checked_at) as u64) < looks.recheck.as_secs())
    });
    Facts {
        now: looks.now,
        image: facts.inspected.then_some(ImageView {
            created: facts.created,
            platforms,
        }),
        signature: current.map(|v| v.verified_by.as_deref().ok_or(v.reason.as_str())),
        first_seen,
    }
}

/// The platforms an inspection found, parsed back from the store's strings.
fn platforms(facts: &ImageFacts) -> Vec<(Platform, Option<i64>)> {
    facts
        .platforms
        .iter()
        .filter_map(|p| Platform::parse(&p.platform).ok().map(|x| (x, p.created)))
        .collect()
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
