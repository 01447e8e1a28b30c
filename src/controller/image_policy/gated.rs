//! Where the election's facts come from in the controller and in `scan` ([`StoreAndRegistry`],
//! the walk's [`FactSource`]): the store when it knows them (a tag's digest while the
//! [`DigestRule`] says it is current, an image's creation time and platforms, a signature
//! verdict, a first sighting), else the registry, and what is learnt is kept in the store.

use super::client::ClientError;
use super::freshness::DigestRule;
use super::walk::{Budget, Cut, FactSource, LookError};
use crate::policy::{Fact, Gates, Platform};
use crate::registry::{ImageReference, Inspected, RegistryClient, RegistryError, TrustedKeys};
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

/// Verifies on the blocking pool: each signature costs public-key operations (at most 16
/// signatures an image, one per DSSE envelope, against at most 16 keys or a root's chains),
/// which a tenant's registry chooses to make many, and async workers serve every tenant.
async fn verify(
    keys: &std::sync::Arc<TrustedKeys>,
    signatures: &[crate::registry::Signed],
    image: &ImageReference,
    digest: &str,
    now: std::time::SystemTime,
) -> Result<(String, Option<std::time::SystemTime>), String> {
    let (keys, signatures, image, digest) = (
        keys.clone(),
        signatures.to_vec(),
        image.clone(),
        digest.to_string(),
    );
    tokio::task::spawn_blocking(move || keys.verify_until(&signatures, &image, &digest, now))
        .await
        .unwrap_or_else(|e| Err(format!("verifying the signatures did not finish: {e}")))
}

/// Whether a kept verdict still stands at `now`: a valid signature until its verdict's end, if
/// it has one (a notation signature's expiry or certificate's, at `strict`), then it is judged
/// again; "not valid" within `recheck`, and not when a reconcile was requested (`fresh`).
fn verdict_holds(verdict: &SignatureVerdict, now: i64, recheck: Duration, fresh: bool) -> bool {
    match verdict.verified_by {
        Some(_) => verdict.valid_until.is_none_or(|until| now < until),
        None => !fresh && (now.saturating_sub(verdict.checked_at) as u64) < recheck.as_secs(),
    }
}

/// What a verdict is kept for: the trust configuration and the image's name, since a notation
/// statement applies by repository and cosign's legacy payload names the repository. The same
/// digest moved from a repository whose notation statement is `audit` to one whose statement is
/// `strict` kept its verdict when the trust configuration alone keyed it.
fn verdict_key(fingerprint: &str, image: &crate::registry::ImageReference) -> String {
    use sha2::Digest;
    let name = sha2::Sha256::digest(image.canonical().as_bytes());
    let short: String = name[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{fingerprint}-{short}")
}

/// The signatures of `digest`, read and verified against the trusted keys now: the bundles
/// attached as referrers first (cosign v3's default), then, when none of them verifies, the
/// legacy `.sig` tag's.
async fn check_signature(looks: &Looks<'_, '_>, digest: &str) -> Result<SignatureVerdict, Cut> {
    let Some(keys) = looks.keys else {
        return Err(LookError::NoKeys.into());
    };
    let client = looks.client.get().await?;
    let now = std::time::UNIX_EPOCH + Duration::from_secs(looks.now.max(0) as u64);
    let mut signatures = match keys.is_notation() {
        true => client.notation_signatures(looks.image, digest).await?,
        false => client.bundle_signatures(looks.image, digest).await?,
    };
    let mut verified = verify(keys, &signatures, looks.image, digest, now).await;
    if verified.is_err() && !keys.is_notation() {
        signatures.extend(client.legacy_signatures(looks.image, digest).await?);
        verified = verify(keys, &signatures, looks.image, digest, now).await;
    }
    let unix = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
    };
    Ok(SignatureVerdict {
        keys: verdict_key(&keys.fingerprint, looks.image),
        verified_by: verified.as_ref().ok().map(|(who, _)| who.clone()),
        valid_until: verified
            .as_ref()
            .ok()
            .and_then(|(_, until)| until.map(unix)),
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

#[cfg(test)]
mod tests {
    use super::{verdict_holds, verdict_key, SignatureVerdict};
    use std::time::Duration;

    /// A valid signature's verdict ends with the signature (a notation expiry): a digest
    /// signed for a day was elected for good when verdicts were kept forever.
    #[test]
    fn a_kept_verdict_stands_until_its_end() {
        let verdict = |verified: bool, until: Option<i64>| SignatureVerdict {
            keys: "k".into(),
            verified_by: verified.then(|| "CN=x".into()),
            reason: String::new(),
            checked_at: 1_000,
            valid_until: until,
        };
        let hour = Duration::from_secs(3600);
        assert!(verdict_holds(&verdict(true, None), 1_000_000, hour, true));
        assert!(verdict_holds(
            &verdict(true, Some(2_000)),
            1_999,
            hour,
            false
        ));
        assert!(!verdict_holds(
            &verdict(true, Some(2_000)),
            2_000,
            hour,
            false
        ));
        assert!(verdict_holds(
            &verdict(false, None),
            1_000 + 3_599,
            hour,
            false
        ));
        assert!(!verdict_holds(
            &verdict(false, None),
            1_000 + 3_600,
            hour,
            false
        ));
        assert!(
            !verdict_holds(&verdict(false, None), 1_001, hour, true),
            "asked for"
        );
    }

    use crate::registry::ImageReference;

    /// A verdict kept for one image name is not another name's, for the same trust.
    #[test]
    fn verdicts_are_kept_per_trust_and_image_name() {
        let image = |name: &str| ImageReference::parse(name, false).unwrap();
        let audit = verdict_key("notation-1", &image("r.example/audit/app"));
        let strict = verdict_key("notation-1", &image("r.example/strict/app"));
        assert_ne!(
            audit, strict,
            "the same digest under another name is judged again"
        );
        assert_eq!(
            audit,
            verdict_key("notation-1", &image("r.example/audit/app"))
        );
        assert_ne!(
            audit,
            verdict_key("notation-2", &image("r.example/audit/app"))
        );
        assert!(audit.starts_with("notation-1-") && audit.len() == "notation-1-".len() + 16);
    }
}
