//! The signature gate's verdict for one digest: its signatures read from the registry,
//! verified off the async workers, and kept (in the image facts) for as long as it holds.

use super::attested::{Trust, Unattested};
use super::walk::{Cut, Pause};
use crate::reference::ImageReference;
use crate::registry::{RegistryClient, RegistryError};
use crate::store::SignatureVerdict;
use crate::verify::{Refusal, Signed, TrustedKeys, Verified};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Verifies on the blocking pool: each signature costs public-key operations (at most 16
/// signatures an image, one per DSSE envelope, against at most 16 keys or a root's chains),
/// which a tenant's registry chooses to make many, and async workers serve every tenant.
async fn verify(
    keys: &Arc<TrustedKeys>,
    signatures: Vec<Signed>,
    image: &ImageReference,
    digest: &str,
    now: SystemTime,
) -> Result<Verified, Refusal> {
    let (keys, image, digest) = (keys.clone(), image.clone(), digest.to_string());
    tokio::task::spawn_blocking(move || keys.verify_until(&signatures, &image, &digest, now))
        .await
        .unwrap_or_else(|e| Err(Refusal::Unfinished(e.to_string())))
}

/// Whether a kept verdict still stands at `now`: a valid signature until its verdict's end, if
/// it has one (a notation signature's expiry or certificate's, at `strict`), then it is judged
/// again; "not valid" within `recheck`, and not when a reconcile was requested (`fresh`).
pub(super) fn verdict_holds(
    verdict: &SignatureVerdict,
    now: i64,
    recheck: Duration,
    fresh: bool,
) -> bool {
    match verdict.verified_by {
        Some(_) => verdict.valid_until.is_none_or(|until| now < until),
        None => !fresh && (now.saturating_sub(verdict.checked_at) as u64) < recheck.as_secs(),
    }
}

/// Whether a verdict counts in this walk: as [`verdict_holds`] says, except that a verdict this
/// walk just checked (`checked_now`) is never discarded for a requested reconcile: the request
/// asked for this very check.
pub(super) fn verdict_counts(
    verdict: &SignatureVerdict,
    now: i64,
    recheck: Duration,
    requested: bool,
    checked_now: bool,
) -> bool {
    verdict_holds(verdict, now, recheck, requested && !checked_now)
}

/// Unix seconds as the verifiers take the time (certificates, notation expiry): before 1970
/// is 1970.
fn system_time(unix: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(unix.max(0) as u64)
}

/// What a verdict is kept for: the trust configuration and the image's name, since a notation
/// statement applies by repository and cosign's legacy payload names the repository. The same
/// digest moved from a repository whose notation statement is `audit` to one whose statement is
/// `strict` kept its verdict when the trust configuration alone keyed it.
pub(super) fn verdict_key(fingerprint: &str, image: &ImageReference) -> String {
    use sha2::Digest;
    let name = sha2::Sha256::digest(image.canonical().as_bytes());
    let short: String = name[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{fingerprint}-{short}")
}

/// The signatures of `digest`, read and verified against the trusted keys now: the bundles
/// attached as referrers first (cosign v3's default), then, when none of them verifies, the
/// legacy `.sig` tag's; with `spec.verify.attestations`, each entry's attestations among the
/// bundles and under the legacy `.att` tag too; with `imageSignature: NotRequired`, those
/// alone. A verdict whose conditions read the clock holds until `recheck` is over.
pub(super) async fn check_signature(
    trust: &Arc<Trust>,
    client: &RegistryClient,
    image: &ImageReference,
    digest: &str,
    (checked_at, recheck): (i64, Duration),
) -> Result<SignatureVerdict, Cut> {
    let (keys, now) = (&trust.keys, system_time(checked_at));
    let signatures = match keys.is_notation() {
        true => client.notation_signatures(image, digest).await?,
        false => {
            client
                .bundles(image, digest, &trust.predicate_types())
                .await?
        }
    };
    let (mut verdict, signed_at) = match trust.signature {
        true => signed(keys, client, signatures.clone(), image, (digest, now)).await?,
        // No image signature asked for: the attestations alone decide. None (the spec's
        // check refuses that) holds: nothing was verified.
        false if trust.rules.is_empty() => {
            let why = "imageSignature: NotRequired, and no attestation to verify".to_string();
            ((None, None, why), None)
        }
        false => {
            let names: Vec<&str> = trust.rules.iter().map(|r| r.name.as_str()).collect();
            let who = format!("its attestations ({})", names.join(", "));
            ((Some(who), None, String::new()), None)
        }
    };
    if verdict.0.is_some() && !trust.rules.is_empty() {
        // cosign v2 keeps attestations under the `.att` tag: those are judged with the
        // referrers', every one of a type (one request more, a 404 when there is none).
        let mut attestations = signatures;
        let types = trust.predicate_types();
        attestations.extend(client.legacy_attestations(image, digest, &types).await?);
        match attested(trust, attestations, digest, now, client.tenant()).await {
            Err(Unattested::Held(why)) => verdict = (None, None, why),
            // Given up for another namespace: nothing judged, nothing kept; soon again.
            Err(Unattested::Stopped) => return Err(Cut::Paused(Pause::Yielded)),
            Ok(()) if trust.reads_now() => {
                let next = checked_at.saturating_add(recheck.as_secs() as i64);
                verdict.1 = Some(verdict.1.map_or(next, |until| until.min(next)));
            }
            Ok(()) => {}
        }
    }
    let (verified_by, valid_until, reason) = verdict;
    let signed_at = signed_at.filter(|_| verified_by.is_some());
    Ok(SignatureVerdict {
        keys: verdict_key(&trust.fingerprint, image),
        verified_by,
        valid_until,
        reason,
        checked_at,
        signed_at,
    })
}

/// A verdict before the attestations: who signed, until when, or why none did.
type Verdict = (Option<String>, Option<i64>, String);

/// The image signature among `signatures` (the referrers'), else the legacy `.sig` tag's:
/// the verdict, and when it was signed.
async fn signed(
    keys: &Arc<TrustedKeys>,
    client: &RegistryClient,
    signatures: Vec<Signed>,
    image: &ImageReference,
    (digest, now): (&str, SystemTime),
) -> Result<(Verdict, Option<i64>), RegistryError> {
    let mut verified = verify(keys, signatures, image, digest, now).await;
    if let (Err(refusal), false) = (&verified, keys.is_notation()) {
        // Only the legacy signatures are judged now: the bundles were, once.
        let legacy = client.legacy_signatures(image, digest).await?;
        if !legacy.is_empty() {
            let first = refusal.clone();
            let second = verify(keys, legacy, image, digest, now).await;
            verified = second.map_err(|more| first.and(more));
        }
    }
    let unix = |t: SystemTime| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
    };
    Ok(match verified {
        Ok(v) => ((Some(v.who), v.until.map(unix), String::new()), v.signed_at),
        Err(refusal) => ((None, None, refusal.to_string()), None),
    })
}

/// The attestation evaluations that run at once, shared by namespace (crate::fair): a
/// namespace's conditions wait for a slot only behind namespaces holding no more than it does,
/// and never hold the async workers other namespaces' scans run on.
pub const EVALUATION_SLOTS: usize = 2;

static EVALUATIONS: std::sync::LazyLock<Arc<crate::fair::FairSlots>> =
    std::sync::LazyLock::new(|| crate::fair::FairSlots::new(EVALUATION_SLOTS));

/// Sets its flag when dropped: a decision aborted (its policy changed or was deleted, so its
/// background work is dropped) stops its evaluation at the next unit.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Relaxed);
    }
}

/// [`Trust::attested`] on the blocking pool, in one of [`EVALUATION_SLOTS`] held for
/// `tenant`: verification and conditions cost CPU. Stopped when its slot is taken back for a
/// namespace under its fair share, or when this future is dropped.
async fn attested(
    trust: &Arc<Trust>,
    signatures: Vec<Signed>,
    digest: &str,
    now: SystemTime,
    tenant: Option<&str>,
) -> Result<(), Unattested> {
    let permit = EVALUATIONS.acquire(tenant).await;
    let stop = StopOnDrop(Arc::new(AtomicBool::new(false)));
    let (trust, digest, flag) = (trust.clone(), digest.to_string(), stop.0.clone());
    let task =
        tokio::task::spawn_blocking(move || trust.attested(&signatures, &digest, now, Some(flag)));
    let mut task = std::pin::pin!(task);
    let done = tokio::select! {
        done = &mut task => done,
        () = permit.stopped() => {
            stop.0.store(true, Relaxed);
            task.await
        }
    };
    drop(permit);
    let unfinished = |e| format!("verifying the attestations did not finish: {e}");
    done.unwrap_or_else(|e| Err(Unattested::Held(unfinished(e))))
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
            signed_at: None,
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

    use super::ImageReference;

    /// Certificates and expiries are judged at the reconcile's time, not another.
    #[test]
    fn verdicts_are_judged_at_the_reconcile_time() {
        let at = |unix: i64| {
            super::system_time(unix)
                .duration_since(std::time::SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_secs()
        };
        assert_eq!(at(1_764_000_000), 1_764_000_000);
        assert_eq!(at(0), 0);
        assert_eq!(at(-5), 0, "before 1970 is 1970");
    }

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
