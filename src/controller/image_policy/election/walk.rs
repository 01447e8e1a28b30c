//! The gated election's walk (docs/imagepolicy.md, "Gated election"): the candidates from the
//! best down, each judged by the gate list (`crate::policy::gates`) until one passes. Facts
//! come from a [`FactSource`]: the store and the registry in the controller (`facts.rs`), a
//! table in the tests. At most [`MAX_INSPECTIONS`] candidates per reconcile may need the
//! registry, and [`MAX_WALK`] are walked in all. A policy without gates walks its best tag
//! only, through no gate, asking for nothing but the digest `digestReflectionPolicy` wants.

use super::candidates::Candidates;
use super::client::ClientError;
use super::mode::Mode;
use crate::api::{format_go_duration, HeldBackTag, HeldBy};
use crate::policy::{Bumps, Fact, Facts, Gates, Hold, Need, Passed, Ruling};
use crate::registry::RegistryError;
use crate::store::{ImageFacts, SignatureVerdict};
use std::future::Future;
use std::time::Duration;
use thiserror::Error;

/// Candidates walked per reconcile, best first: beyond, nothing is elected (NoEligibleTag).
pub const MAX_WALK: usize = 50;
/// The `gate` of a candidate the registry refuses to serve (no spec field sets it: a tag no
/// node can pull is never elected).
pub const SERVED: &str = "served";
/// Candidates per reconcile whose look needs the registry; when spent, the walk goes on in
/// the next reconcile, seconds later, with what this one learnt in the store.
pub const MAX_INSPECTIONS: usize = 10;

/// Where the walk's facts come from, asked by [`Fact`]. A method that must ask the registry
/// charges the reconcile's [`Budget`] first (the walk charges it before a look-up that
/// [`Fact::asks_registry`]).
pub(super) trait FactSource: Send {
    /// The digest `tag` names now. What the same request read of the image is kept, so
    /// [`FactSource::known`] has it.
    fn digest(
        &mut self,
        tag: &str,
        budget: &mut Budget<'_>,
    ) -> impl Future<Output = Result<String, Cut>> + Send;

    /// What is known of `tag` at the image `digest` without a request.
    fn known(&self, tag: &str, digest: &str) -> Evidence;

    /// Looks `fact` up for `evidence`'s tag and image, into `evidence`. A fact it cannot find
    /// stays unknown: the walk then holds the candidate.
    fn look_up(
        &mut self,
        fact: Fact,
        evidence: &mut Evidence,
    ) -> impl Future<Output = Result<(), Cut>> + Send;

    /// The signature verdict that holds now, if one is known. `checked_now`: this walk just
    /// looked it up, so it counts whatever its age or a requested reconcile says.
    fn verdict<'f>(&self, facts: &'f ImageFacts, checked_now: bool)
        -> Option<&'f SignatureVerdict>;

    /// Keeps what the walk learnt of an image.
    fn keep(&mut self, facts: ImageFacts) -> impl Future<Output = ()> + Send;
}

/// The tag elected, its digest (none when nothing needed it), and the proof that every gate
/// passed it.
#[derive(Debug)]
pub(super) struct Elected {
    pub tag: String,
    pub digest: Option<String>,
    pub passed: Passed,
}

/// Why a walk paused before it elected or held every candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pause {
    /// This reconcile's [`MAX_INSPECTIONS`] registry inspections are spent.
    Inspections,
    /// An attestation evaluation gave its slot to a namespace under its fair share.
    Yielded,
}

/// Where the walk ended.
#[derive(Debug, Default)]
pub(super) struct Walked {
    /// The tag elected, only with the proof that it passed every gate.
    pub elected: Option<Elected>,
    /// The better-ranked candidates held back, best first.
    pub held: Vec<HeldBackTag>,
    /// When a held candidate should be looked at again (a minimum age reached, a recheck).
    pub look_again: Option<Duration>,
    /// Candidates looked at, and how many of them needed the registry.
    pub walked: usize,
    pub inspected: usize,
    /// Why the walk paused, to go on in the next reconcile.
    pub unfinished: Option<Pause>,
    /// The downgrade guard ended the walk at this candidate, and the tag it holds at is no
    /// longer listed: a downgrade refused.
    pub refused: Option<String>,
}

impl<E: Into<LookError>> From<E> for Cut {
    fn from(error: E) -> Self {
        Cut::Failed(Box::new(error.into()))
    }
}

/// Why a look at a candidate ended early.
#[derive(Debug)]
pub(super) enum Cut {
    /// The tag or its manifest is gone since the scan: not a candidate.
    Gone,
    /// The registry refuses to serve its manifest by its own policy, in its words
    /// ([`RegistryError::refusal`]): held back by [`SERVED`].
    Refused(String),
    /// Not looked at in this reconcile (its inspections spent, or its attestations'
    /// evaluation gave its slot to another namespace): the walk goes on in the next.
    Paused(Pause),
    /// The registry failed: the walk ends. (Boxed: a registry error is large, and a cut is
    /// returned on every look.)
    Failed(Box<LookError>),
}

/// Why a fact could not be looked up.
#[derive(Debug, Error)]
pub(super) enum LookError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("no answer within {} (the ImageRepository's spec.timeout)", format_go_duration(*.0))]
    Timeout(Duration),
    #[error("no trusted keys to verify with")]
    NoKeys,
    #[error("ranking the candidates after the best: {0}")]
    Ranking(String),
}

/// The candidate whose look failed, and why: the walk ends there.
#[derive(Debug, Error)]
#[error("checking the gates of {tag}: {error}")]
pub(super) struct WalkFailure {
    pub tag: String,
    pub error: LookError,
}

/// The reconcile's registry inspections, charged once per candidate that needs one.
pub(super) struct Budget<'a> {
    used: &'a mut usize,
    charged: bool,
}

impl<'a> Budget<'a> {
    /// A candidate's share of the inspections `used` counts.
    pub fn new(used: &'a mut usize) -> Budget<'a> {
        Budget {
            used,
            charged: false,
        }
    }

    pub fn charge(&mut self) -> Result<(), Cut> {
        if !self.charged {
            if *self.used == MAX_INSPECTIONS {
                return Err(Cut::Paused(Pause::Inspections));
            }
            *self.used += 1;
            self.charged = true;
        }
        Ok(())
    }
}

/// What the walk judges by.
#[derive(Clone, Copy)]
pub(super) struct Judge<'a> {
    pub gates: &'a Gates,
    pub mode: Mode,
    /// Whether the elected tag's digest is wanted (`digestReflectionPolicy` is not `Never`).
    /// A candidate's digest is looked up when this or a gate needs it.
    pub wants_digest: bool,
    /// Unix seconds.
    pub now: i64,
    /// When a hold that time alone does not open is looked at again.
    pub recheck: Duration,
    /// How each candidate rises from the tag elected now, when a gate asks (`minAgeByBump`);
    /// without it, such a gate holds every candidate.
    pub bumps: Option<&'a Bumps>,
}

/// Walks the candidates from the best down and elects the first that passes every gate; the
/// candidates after the best are ranked only when the walk gets past it. A registry error ends
/// the walk with an error: nothing unchecked is elected.
pub(super) async fn walk<S: FactSource>(
    candidates: Candidates,
    judge: Judge<'_>,
    source: &mut S,
) -> Result<Walked, WalkFailure> {
    let mut walked = Walked::default();
    let best = std::slice::from_ref(&candidates.best);
    walk_on(best, judge, source, &mut walked).await?;
    if walked.elected.is_some() || walked.unfinished.is_some() {
        return Ok(walked);
    }
    let tag = candidates.best.clone();
    let rest = candidates.rest(MAX_WALK).await.map_err(|e| WalkFailure {
        tag,
        error: LookError::Ranking(e.to_string()),
    })?;
    walk_on(&rest.allowed, judge, source, &mut walked).await?;
    walked.refused = rest
        .refused
        .filter(|_| walked.elected.is_none() && walked.unfinished.is_none());
    Ok(walked)
}

/// Walks `ranked` (best first) on from where `walked` stands, until one is elected.
async fn walk_on<S: FactSource>(
    ranked: &[String],
    judge: Judge<'_>,
    source: &mut S,
    walked: &mut Walked,
) -> Result<(), WalkFailure> {
    let Judge { now, recheck, .. } = judge;
    for tag in ranked.iter().take(MAX_WALK.saturating_sub(walked.walked)) {
        walked.walked += 1;
        let mut budget = Budget::new(&mut walked.inspected);
        if let (false, Mode::Flux, Ruling::Passed(passed)) = (
            judge.wants_digest,
            judge.mode,
            judge.gates.judge(&Facts::at(now), Need::NONE),
        ) {
            // Flux's election with `Never`: no gate, nothing to look up.
            let (tag, digest) = (tag.clone(), None);
            walked.elected = Some(Elected {
                tag,
                digest,
                passed,
            });
            break;
        }
        let (digest, ruled) = match look_at(judge, source, tag, &mut budget).await {
            Ok(looked) => looked,
            Err(Cut::Gone) => continue,
            Err(Cut::Refused(why)) => {
                // Looked at again at the recheck (the scan interval): a cooldown ends.
                let hold = Hold {
                    gate: SERVED,
                    reason: format!("the registry refuses to serve it: {why}"),
                    eligible_at: None,
                };
                walked.hold(tag, None, vec![hold], now, recheck);
                continue;
            }
            Err(Cut::Paused(pause)) => {
                walked.unfinished = Some(pause);
                break;
            }
            Err(Cut::Failed(error)) => {
                let tag = tag.clone();
                return Err(WalkFailure { tag, error: *error });
            }
        };
        let holds = match ruled {
            Ok(passed) => {
                let (tag, digest) = (tag.clone(), Some(digest));
                walked.elected = Some(Elected {
                    tag,
                    digest,
                    passed,
                });
                break;
            }
            Err(holds) => holds,
        };
        walked.hold(tag, Some(digest), holds, now, recheck);
    }
    Ok(())
}

impl Walked {
    /// Holds `tag` back, looked at again when the first of its holds may open (one opening
    /// changes what status.heldBack says, even while another still holds), else at `recheck`.
    pub(super) fn hold(
        &mut self,
        tag: &str,
        digest: Option<String>,
        holds: Vec<Hold>,
        now: i64,
        recheck: Duration,
    ) {
        for hold in &holds {
            let again = match hold.eligible_at {
                Some(at) => Duration::from_secs(at.saturating_sub(now).max(1) as u64),
                None => recheck,
            };
            self.look_again = Some(self.look_again.map_or(again, |d| d.min(again)));
        }
        self.held.push(held_back(tag, digest, holds));
    }
}

/// A candidate's heldBack entry: the longest hold first, the others after.
fn held_back(tag: &str, digest: Option<String>, holds: Vec<Hold>) -> HeldBackTag {
    let mut holds = holds.into_iter().map(|h| HeldBy {
        gate: h.gate.into(),
        reason: h.reason,
    });
    let first = holds.next().unwrap_or_else(|| {
        let Hold { gate, reason, .. } = Hold::undecided();
        HeldBy {
            gate: gate.into(),
            reason,
        }
    });
    let also: Vec<HeldBy> = holds.collect();
    HeldBackTag {
        tag: tag.into(),
        digest,
        gate: first.gate,
        reason: first.reason,
        also_held_by: (!also.is_empty()).then_some(also),
    }
}

/// One candidate: its digest now, then [`judge_at`] that digest.
async fn look_at<S: FactSource>(
    judge: Judge<'_>,
    source: &mut S,
    tag: &str,
    budget: &mut Budget<'_>,
) -> Result<(String, Result<Passed, Vec<Hold>>), Cut> {
    let digest = source.digest(tag, budget).await?;
    let ruled = judge_at(judge, source, tag, &digest, budget).await?;
    Ok((digest, ruled))
}

/// `tag` at the image `digest`: the gates in their order, each asking for the facts it lacks,
/// each fact looked up at most once and kept. Returns the proof that every gate passed, or why
/// it is held back. Fails closed: a fact still unknown after its look-up holds it, and the
/// rounds are bounded by the number of facts (one look-up each, then the last judging), past
/// which it is held too.
pub(super) async fn judge_at<S: FactSource>(
    judge: Judge<'_>,
    source: &mut S,
    tag: &str,
    digest: &str,
    budget: &mut Budget<'_>,
) -> Result<Result<Passed, Vec<Hold>>, Cut> {
    let (gates, now) = (judge.gates, judge.now);
    let bump = judge.bumps.map(|b| b.of(tag));
    let mut evidence = source.known(tag, digest);
    let mut looked = Need::NONE;
    let mut asked = false;
    let mut ruled = None;
    for _ in 0..=Fact::ALL.len() {
        let offered = platforms(&evidence.image);
        let verdict = source.verdict(&evidence.image, looked.contains(Fact::Signature));
        let fact = match gates.judge(&view(now, &evidence, &offered, verdict, bump), looked) {
            Ruling::Passed(passed) => Ok(passed),
            Ruling::Held(holds) => Err(holds),
            Ruling::Lacks { fact, .. } => {
                if fact.asks_registry() {
                    budget.charge()?;
                    asked = true;
                }
                source.look_up(fact, &mut evidence).await?;
                looked = looked.with(fact);
                continue;
            }
        };
        ruled = Some(fact);
        break;
    }
    if asked {
        source.keep(evidence.image).await;
    }
    Ok(ruled.unwrap_or_else(|| Err(vec![Hold::undecided()])))
}

mod view;
pub(super) use view::Evidence;
use view::{platforms, view};

#[cfg(test)]
mod table;
#[cfg(test)]
mod tests;

#[cfg(test)]
mod model;
#[cfg(test)]
mod oracle;
#[cfg(test)]
mod property;
