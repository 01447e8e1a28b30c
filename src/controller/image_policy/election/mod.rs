//! The election, the step of the policy reconcile that picks the tag (docs/imagepolicy.md, "Gated
//! election"), as named steps over one [`Context`]: held at the downgrade guard's floor before any
//! request, the trusted keys read, the context built, the walk from the best candidate down
//! ([`walk`](mod@walk)) over the store's and the registry's facts ([`facts`]), and what it comes to
//! ([`Election`]). Whether any gate is on is decided once, as a [`Mode`]: without gates the walk
//! looks at the best tag only and asks for its digest as Flux does; with gates, a registry error
//! while checking a gate keeps the last `latestRef` (no downgrade to an unchecked tag).

mod attested;
mod candidates;
mod client;
mod context;
mod dating;
mod facts;
mod freshness;
mod keys;
mod mode;
mod previous;
mod signature;
mod walk;

pub(super) use candidates::Candidates;
pub use mode::Mode;
pub use walk::{MAX_INSPECTIONS, MAX_WALK};

use super::env::{PolicyEnv, PolicyReader};
use crate::api::ReflectionPolicy;
use crate::api::{HeldBackTag, ImagePolicy, ImagePolicyStatus, ImageRef};
use crate::controller::outcome::conditions::Reason;
use crate::controller::outcome::stop::Stop;
use crate::registry::RegistryError;
use context::Context;
pub(super) use context::Subject;
use dating::{date, Dated};
use facts::StoreAndRegistry;
use keys::trusted_keys;
use std::time::Duration;
pub use walk::Pause;
use walk::{walk, Elected, LookError, WalkFailure, Walked};

/// What an election came to.
#[derive(Debug)]
pub enum Election {
    /// `elected` is the policy's tag now; `next`: when to look again, if ever.
    Elected {
        elected: ImageRef,
        held: Vec<HeldBackTag>,
        next: Option<Duration>,
    },
    /// The walk paused (`pause` says why); it goes on in the next reconcile.
    Unfinished {
        held: Vec<HeldBackTag>,
        walked: usize,
        pause: Pause,
    },
    /// A newest order's tags of one sighting are being dated: `left` of `of` to read; the
    /// last election stays meanwhile.
    Dating { left: usize, of: usize },
    /// No candidate passes the gates: the last election stays.
    NoneEligible {
        held: Vec<HeldBackTag>,
        walked: usize,
        next: Duration,
    },
}

impl Election {
    /// The elected tag kept as it is, saying why (`held`; a refused downgrade's entry last).
    pub fn kept(status: &ImagePolicyStatus, held: Vec<HeldBackTag>) -> Election {
        let elected = status
            .latest_ref
            .clone()
            .expect("a kept election has a latestRef");
        Election::Elected {
            elected,
            held,
            next: None,
        }
    }
}

/// The best candidate that passes the gates (without gates: the best), with its digest per
/// `digestReflectionPolicy`; and a notice for the conditions, when what the signatures were
/// checked with is not what it should be (a public-good root the mirror did not serve).
pub(super) async fn elect<R: PolicyReader>(
    policy: &ImagePolicy,
    subject: &Subject<'_>,
    candidates: Candidates,
    status: &ImagePolicyStatus,
    env: &PolicyEnv<'_, R>,
) -> Result<(Election, Option<String>), Stop> {
    if let Some(held) = held_at_the_floor(subject, &candidates.best) {
        return Ok((Election::kept(status, vec![held]), None));
    }
    let failed = |failure| look_failed(subject, failure);
    let (keys, notice) = trusted_keys(policy, env)
        .await
        .map_err(|e| Stop::Failed(Reason::GateCheckFailed, e.to_string()))?;
    let ctx = Context::new(policy, subject, status, env, keys.as_ref()).map_err(|e| {
        let tag = candidates.best.clone();
        let error = LookError::Client(e.into());
        failed(WalkFailure { tag, error })
    })?;
    let mut source = StoreAndRegistry::open(&ctx).await;
    let candidates = match date(candidates, &mut source).await.map_err(failed)? {
        Dated::Ready(candidates) => candidates,
        Dated::Unfinished { left, of } => return Ok((Election::Dating { left, of }, None)),
    };
    let mut walked = walk(candidates, ctx.judge(), &mut source)
        .await
        .map_err(failed)?;
    if subject.mode == Mode::Gated {
        let previous = previous::previous_after(status, &walked);
        previous::judge_previous(previous, ctx.judge(), &mut source, &mut walked).await;
    }
    let due = source.known.due.take();
    let election = conclude(walked, due, &ctx, subject, status, env);
    let replaced = match (&election, subject.floor) {
        (Election::Elected { elected, .. }, Some(floor)) => floor.replaced(&elected.tag),
        _ => None,
    };
    let notices: Vec<String> = replaced.into_iter().chain(notice).collect();
    Ok((election, (!notices.is_empty()).then(|| notices.join("; "))))
}

/// The guard's entry when nothing listed ranks as high as the elected tag: no walk, no request.
fn held_at_the_floor(subject: &Subject<'_>, best: &str) -> Option<HeldBackTag> {
    let floor = subject.floor.filter(|f| f.refuses(best))?;
    Some(floor.held(best, false))
}

/// What the walk comes to. `due`: a tag whose known digest was taken, and when it is due to
/// be looked up again.
fn conclude<R>(
    walked: Walked,
    due: Option<(String, Duration)>,
    ctx: &Context<'_>,
    subject: &Subject<'_>,
    status: &ImagePolicyStatus,
    env: &PolicyEnv<'_, R>,
) -> Election {
    let mut held = walked.held;
    if let (Some(floor), Some(refused)) = (subject.floor, walked.refused) {
        held.push(floor.held(&refused, true));
        return Election::kept(status, held);
    }
    if let Some(Elected {
        tag,
        digest,
        passed,
    }) = walked.elected
    {
        // The walk elects only with the proof; every gate of the list is in it.
        debug_assert_eq!(passed.gates(), ctx.gates.names());
        // The digest of an `Always` policy is due again at its interval, or sooner when the
        // one taken was looked up before.
        let due = due.filter(|(t, _)| *t == tag).map(|(_, d)| d);
        let next = [ctx.interval, walked.look_again, due]
            .into_iter()
            .flatten()
            .min();
        let digest = digest.filter(|_| ctx.reflection != ReflectionPolicy::Never);
        let elected = ImageRef {
            name: subject.repo.spec.image.clone(),
            tag,
            digest,
        };
        return Election::Elected {
            elected,
            held,
            next,
        };
    }
    if let Some(pause) = walked.unfinished {
        return Election::Unfinished {
            held,
            walked: walked.walked,
            pause,
        };
    }
    Election::NoneEligible {
        held,
        walked: walked.walked,
        next: walked.look_again.unwrap_or(env.requeue_dependency),
    }
}

/// What a failed look means. Without gates, Flux's digest failure (`Failed`, its words); with
/// gates, `GateCheckFailed` naming the candidate. A registry that asked us to wait is asked
/// again then, either way.
fn look_failed(subject: &Subject<'_>, failure: WalkFailure) -> Stop {
    let retry_at = match &failure.error {
        LookError::Registry(RegistryError::RateLimited { retry_at, .. }) => Some(*retry_at),
        _ => None,
    };
    let (reason, message) = match subject.mode {
        Mode::Gated => (Reason::GateCheckFailed, failure.to_string()),
        Mode::Flux => {
            let reference = format!("{}:{}", subject.repo.spec.image, failure.tag);
            let why = match &failure.error {
                LookError::Client(e) => e.to_string(),
                e => format!("failed fetching descriptor for \"{reference}\": {e}"),
            };
            let message = format!("failed fetching digest of {reference}: {why}");
            (Reason::Failed, message)
        }
    };
    match retry_at {
        Some(at) => Stop::RateLimited(message, at),
        None => Stop::Failed(reason, message),
    }
}
