//! Why a reconcile's steps ended before the end: one typed answer for both kinds, turned into
//! conditions and what to do next in one place ([`Stop::into_steps`]). A step returns
//! `Result<_, Stop>`, so whether a failure stalls, retries or waits is said where it is found
//! and mapped to conditions here, never at the call site.

use super::conditions::{ConditionType, Conditions, Reason};
use super::next::Next;
use super::status::{finish_status, FluxStatus};
use super::summary::{fail, stall, Outcome};
use crate::api::ConditionStatus;
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use std::time::{Duration, SystemTime};

/// How the steps ended: done with an outcome, or held without a status change (`Err`: when
/// next, and why).
pub type Steps = Result<(Outcome, Next, String), (Next, String)>;

/// Why the steps stopped before the end.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// Nothing will change until the spec does: Stalled with the reason, no retry.
    Stalled(Reason, String),
    /// Retried with backoff: Ready=False with the reason.
    Failed(Reason, String),
    /// The registry asked us to wait until then: Ready=False `RateLimited`.
    RateLimited(String, SystemTime),
    /// Not done and not failed: Ready=False with the reason, looked at again after the delay,
    /// without backoff and without a Warning (a policy with no tags to elect from yet).
    Waiting(Reason, String, Duration),
    /// Decided, and nothing can be elected as things stand (every candidate held by a gate):
    /// Ready=False and Stalled=True with the reason, so kstatus reads it as Failed, as Flux's
    /// controllers mark a terminal state, and `flux reconcile` or a Kustomization's health
    /// check return with the reason instead of waiting out their timeout (kstatus reads a
    /// False Ready without Stalled as in progress); unlike a stall, looked at again after the
    /// delay, without backoff and without a spec change.
    Settled(Reason, String, Duration),
    /// Under way: Reconciling with the message, looked at again after the delay; with
    /// `unknown`, Ready=Unknown `Progressing` too (nothing was ever decided).
    Progressing {
        message: String,
        next: Duration,
        unknown: bool,
    },
    /// Not this time, nothing written (no scan slot, deleted while scanning, a warm start
    /// keeping the last election).
    Held(Next, String),
}

impl Stop {
    /// The conditions and the outcome for this stop.
    pub fn into_steps(self, c: &mut Conditions<'_>) -> Steps {
        match self {
            Stop::Stalled(reason, message) => Ok(stall(c, reason, message)),
            Stop::Failed(reason, message) => Ok(fail(c, reason, message)),
            Stop::RateLimited(message, until) => {
                c.mark_false(Reason::RateLimited, &message);
                let outcome = Outcome::Failed {
                    error: message.clone(),
                };
                Ok((outcome, Next::RetryAt(until), message))
            }
            Stop::Waiting(reason, message, next) => {
                c.mark_false(reason, &message);
                Ok((Outcome::Waiting, Next::After(next), message))
            }
            Stop::Settled(reason, message, next) => {
                let (outcome, _, message) = stall(c, reason, message);
                Ok((outcome, Next::After(next), message))
            }
            Stop::Progressing {
                message,
                next,
                unknown,
            } => {
                c.mark_reconciling(Reason::Progressing, &message);
                if unknown {
                    c.set(
                        ConditionType::Ready,
                        ConditionStatus::Unknown,
                        Reason::Progressing,
                        &message,
                    );
                }
                Ok((Outcome::Waiting, Next::After(next), message))
            }
            Stop::Held(next, summary) => Err((next, summary)),
        }
    }

    /// What a reconcile of `obj` that stops before its kind decided writes (a panicked
    /// decision, one with no room in the background): its last status (`old`: the election,
    /// tags and digest kept) with this stop's conditions, then when next and the summary.
    /// `None` for [`Stop::Held`], which writes nothing.
    pub fn over<K: Resource, S: FluxStatus>(
        self,
        obj: &K,
        old: &S,
        now: Timestamp,
    ) -> Option<(S, Next, String)> {
        let generation = obj.meta().generation.unwrap_or(0);
        let mut list = old.conditions().to_vec();
        let steps = self.into_steps(&mut Conditions::new(&mut list, generation, now));
        let (outcome, next, summary) = steps.ok()?;
        let mut status = old.clone();
        finish_status(obj, old, &mut status, list, &outcome, now);
        Some((status, next, summary))
    }

    /// A stall with `reason`, for `map_err`.
    pub fn stalled(reason: Reason) -> impl Fn(String) -> Stop + Copy {
        move |message| Stop::Stalled(reason, message)
    }

    /// A failure with `reason`, for `map_err`.
    pub fn failed(reason: Reason) -> impl Fn(String) -> Stop + Copy {
        move |message| Stop::Failed(reason, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Condition;
    use crate::controller::outcome::summary::summarize;

    /// Every candidate held: Ready=False and Stalled=True with the reason, not reconciling,
    /// the generation observed, and looked at again after the delay.
    #[test]
    fn settled_is_stalled_with_its_reason_and_still_rechecked() {
        let mut list: Vec<Condition> = Vec::new();
        let mut c = Conditions::new(&mut list, 3, Timestamp::from_second(1000).unwrap());
        c.mark_reconciling(Reason::Progressing, "reconciliation in progress");
        let held = "no tag passes the gates";
        let stop = Stop::Settled(Reason::NoEligibleTag, held.into(), Duration::from_secs(60));
        let (outcome, next, _) = stop.into_steps(&mut c).unwrap();
        assert_eq!(next, Next::After(Duration::from_secs(60)));
        assert_eq!(summarize(&mut c, &outcome, 3, Some(2)), Some(3));
        let said: Vec<_> = list
            .iter()
            .map(|c| {
                (
                    c.type_.as_str(),
                    c.status,
                    c.reason.as_str(),
                    c.message.as_str(),
                )
            })
            .collect();
        let (f, t) = (ConditionStatus::False, ConditionStatus::True);
        assert_eq!(
            said,
            [
                ("Stalled", t, "NoEligibleTag", held),
                ("Ready", f, "NoEligibleTag", held)
            ]
        );
    }
}
