//! The newest order's dating (`spec.policy.newest`, docs/imagepolicy.md): tags first listed at
//! the same scan are ordered by their image's creation time, read here as the walk reads an
//! image (the digest, then the manifest and config), within the walk's bounds: at most
//! [`MAX_INSPECTIONS`] tags a reconcile, going on in the next, and at most `MAX_DATED` tags of
//! one sighting. What is read is kept, so each tag is read once. A steady state (the tag seen
//! last is alone at its sighting) reads nothing.

use super::super::newest::created;
use super::candidates::Candidates;
use super::walk::{Budget, Cut, Evidence, FactSource, WalkFailure, MAX_INSPECTIONS};
use crate::policy::Fact;

/// Where the dating ended.
pub(super) enum Dated {
    /// Every tag that decides is dated: the candidates, ranked again.
    Ready(Candidates),
    /// This reconcile's inspections are spent: `left` of `of` tags still to read.
    Unfinished { left: usize, of: usize },
}

/// Dates the candidates that decide a newest order, through `source`.
pub(super) async fn date<S: FactSource>(
    candidates: Candidates,
    source: &mut S,
) -> Result<Dated, WalkFailure> {
    let to_date = candidates.to_date();
    if to_date.is_empty() {
        return Ok(Dated::Ready(candidates));
    }
    let mut used = 0;
    let mut dates = Vec::new();
    for tag in &to_date {
        match date_one(tag, source, &mut Budget::new(&mut used)).await {
            Ok(created) => dates.push((tag.clone(), created)),
            // Gone since the scan, or refused (the walk then holds it): it ranks by its name,
            // undated.
            Err(Cut::Gone | Cut::Refused(_)) => dates.push((tag.clone(), None)),
            Err(Cut::Paused(_)) => break,
            Err(Cut::Failed(error)) => {
                let tag = tag.clone();
                return Err(WalkFailure { tag, error: *error });
            }
        }
    }
    if dates.len() < to_date.len() {
        // What was read is kept: the next reconcile goes on from there.
        let (left, of) = (to_date.len() - dates.len(), to_date.len());
        return Ok(Dated::Unfinished { left, of });
    }
    debug_assert!(used <= MAX_INSPECTIONS);
    Ok(Dated::Ready(candidates.dated(dates)))
}

/// One tag's creation time: its digest, then its image unless the store has it.
async fn date_one<S: FactSource>(
    tag: &str,
    source: &mut S,
    budget: &mut Budget<'_>,
) -> Result<Option<i64>, Cut> {
    let digest = source.digest(tag, budget).await?;
    let mut evidence: Evidence = source.known(tag, &digest);
    if !evidence.image.inspected {
        budget.charge()?;
        source.look_up(Fact::Image, &mut evidence).await?;
        source.keep(evidence.image.clone()).await;
    }
    Ok(created(&evidence.image))
}
