//! Flux's summary of a reconcile (its "result finalizer", docs/imagerepository.md; not kube's
//! finalizer): how the conditions a reconcile left become the final Ready / Reconciling /
//! Stalled, and when `observedGeneration` moves. Pure; both kinds end with [`summarize`].

use super::conditions::{ConditionType, Conditions, Reason};
use super::next::{Failure, Next};
use crate::api::ConditionStatus;

/// How a reconcile ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Everything done: Ready=True with this message, unless a Ready was set explicitly.
    Succeeded { message: String },
    /// Stalled was marked: nothing changes until the spec does.
    Stalled,
    /// A transient error, retried with backoff; its text becomes Ready's message when the
    /// failing step set no specific reason.
    Failed { error: String },
    /// Neither success nor error: retried after a fixed delay (ImagePolicy "no tags").
    Waiting,
}

/// A step found what only a spec change can mend: Stalled with `reason`, no retry.
pub fn stall(c: &mut Conditions<'_>, reason: Reason, message: String) -> (Outcome, Next, String) {
    c.mark_stalled(reason, &message);
    (Outcome::Stalled, Next::AwaitChange, message)
}

/// A step failed for now: Ready=False with `reason`, retried with backoff.
pub fn fail(c: &mut Conditions<'_>, reason: Reason, message: String) -> (Outcome, Next, String) {
    c.mark_false(reason, &message);
    let outcome = Outcome::Failed {
        error: message.clone(),
    };
    let failure = Failure {
        reason,
        message: message.clone(),
    };
    (outcome, Next::Retry(failure), message)
}

/// The final conditions and observedGeneration for `outcome`, in Flux's order of steps.
/// Returns the observedGeneration to write: the generation when the object ends ready or
/// stalled, else `previous`.
pub fn summarize(
    conditions: &mut Conditions<'_>,
    outcome: &Outcome,
    generation: i64,
    previous: Option<i64>,
) -> Option<i64> {
    use ConditionType::{Ready, Reconciling, Stalled};
    // 1. An error means the object is not stalled.
    if matches!(outcome, Outcome::Failed { .. }) {
        conditions.delete(Stalled);
    }
    // 2. A result that is not a success: a requeue without error is not stalled either; a
    //    stalled object is not ready.
    if !matches!(outcome, Outcome::Succeeded { .. }) {
        if matches!(outcome, Outcome::Waiting) {
            conditions.delete(Stalled);
        }
        let stalled = conditions
            .get(Stalled)
            .filter(|c| c.status == ConditionStatus::True)
            .map(|c| (c.reason.clone(), c.message.clone()));
        // Ready mirrors Stalled, as Flux's summary takes the first negative condition: a
        // Ready=False left by an earlier reconcile (DependencyNotReady, say) must not stay
        // beside a Stalled that says something else.
        if let Some((reason, message)) = stalled {
            conditions.mark_false(reason_of(&reason), &message);
        }
    }
    // 3. Success or stalled: no longer reconciling.
    if matches!(outcome, Outcome::Succeeded { .. })
        || conditions.status(Stalled) == Some(ConditionStatus::True)
    {
        conditions.delete(Reconciling);
    }
    // 4. An error with no specific reason set: Ready=False/Failed with the error text.
    if let Outcome::Failed { error } = outcome {
        if conditions.status(Ready) != Some(ConditionStatus::False) {
            conditions.mark_false(Reason::Failed, error);
        }
    }
    // 6. Success with Ready cleared: Ready=True.
    if let Outcome::Succeeded { message } = outcome {
        if conditions.is_unknown(Ready) && !conditions.is_reconciling() && !conditions.is_stalled()
        {
            conditions.set(Ready, ConditionStatus::True, Reason::Succeeded, message);
        }
    }
    // After the finalizer: a Reconciling left over means "will retry".
    if let Some(message) = conditions.get(Reconciling).map(|c| c.message.clone()) {
        conditions.set(
            Reconciling,
            ConditionStatus::True,
            Reason::ProgressingWithRetry,
            &message,
        );
    }
    if conditions.is_ready() || conditions.is_stalled() {
        Some(generation)
    } else {
        previous
    }
}

/// The [`Reason`] a Stalled condition was set with (only ours are ever set).
fn reason_of(text: &str) -> Reason {
    [
        Reason::ImageUrlInvalid,
        Reason::FeatureGateDisabled,
        Reason::InvalidPolicy,
        Reason::IntervalNotConfigured,
        Reason::InvalidExclusionList,
        Reason::InvalidReference,
        Reason::AccessDenied,
        Reason::NoEligibleTag,
    ]
    .into_iter()
    .find(|r| r.as_str() == text)
    .unwrap_or(Reason::Failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Condition;
    use k8s_openapi::jiff::Timestamp;

    /// (type, status, reason, message) of each condition, in order.
    fn summary(list: &[Condition]) -> Vec<(String, ConditionStatus, String, String)> {
        list.iter()
            .map(|c| {
                (
                    c.type_.clone(),
                    c.status,
                    c.reason.clone(),
                    c.message.clone(),
                )
            })
            .collect()
    }

    fn row(
        t: &str,
        s: ConditionStatus,
        r: &str,
        m: &str,
    ) -> (String, ConditionStatus, String, String) {
        (t.into(), s, r.into(), m.into())
    }

    /// Starts as a reconcile does (Reconciling=True/Progressing, Ready=Unknown), lets `step`
    /// act, finalizes with `outcome`.
    fn run(
        start: &mut Vec<Condition>,
        step: impl FnOnce(&mut Conditions<'_>),
        outcome: Outcome,
    ) -> Option<i64> {
        let mut c = Conditions::new(start, 3, Timestamp::from_second(1000).unwrap());
        c.mark_reconciling(Reason::Progressing, "reconciliation in progress");
        c.mark_unknown_if_unset(Reason::Progressing, "reconciliation in progress");
        step(&mut c);
        summarize(&mut c, &outcome, 3, Some(2))
    }

    use ConditionStatus::{False, True};

    #[test]
    fn success_is_ready_without_reconciling() {
        let mut list = Vec::new();
        let gen = run(
            &mut list,
            |c| c.delete(ConditionType::Ready),
            Outcome::Succeeded {
                message: "done".into(),
            },
        );
        assert_eq!(summary(&list), [row("Ready", True, "Succeeded", "done")]);
        assert_eq!(gen, Some(3));
    }

    #[test]
    fn transient_error_keeps_a_specific_reason_and_retries() {
        let mut list = Vec::new();
        let gen = run(
            &mut list,
            |c| c.mark_false(Reason::ReadOperationFailed, "scan failed: x"),
            Outcome::Failed {
                error: "scan failed: x".into(),
            },
        );
        assert_eq!(
            summary(&list),
            [
                row(
                    "Reconciling",
                    True,
                    "ProgressingWithRetry",
                    "reconciliation in progress"
                ),
                row("Ready", False, "ReadOperationFailed", "scan failed: x"),
            ]
        );
        assert_eq!(gen, Some(2), "observedGeneration does not move");
    }

    #[test]
    fn transient_error_without_reason_is_failed() {
        let mut list = Vec::new();
        run(
            &mut list,
            |_| {},
            Outcome::Failed {
                error: "boom".into(),
            },
        );
        assert_eq!(summary(&list)[1], row("Ready", False, "Failed", "boom"));
    }

    #[test]
    fn stalled_is_not_ready_not_reconciling() {
        let mut list = Vec::new();
        let gen = run(
            &mut list,
            |c| c.mark_stalled(Reason::ImageUrlInvalid, "could not parse reference: x"),
            Outcome::Stalled,
        );
        assert_eq!(
            summary(&list),
            [
                row(
                    "Stalled",
                    True,
                    "ImageURLInvalid",
                    "could not parse reference: x"
                ),
                row(
                    "Ready",
                    False,
                    "ImageURLInvalid",
                    "could not parse reference: x"
                ),
            ]
        );
        assert_eq!(gen, Some(3));
    }

    #[test]
    fn waiting_is_not_ready_and_retries_without_stalled() {
        let mut list = Vec::new();
        let gen = run(
            &mut list,
            |c| {
                c.mark_false(
                    Reason::DependencyNotReady,
                    "retrying in 30s error: no tags in database",
                )
            },
            Outcome::Waiting,
        );
        assert_eq!(
            summary(&list),
            [
                row(
                    "Reconciling",
                    True,
                    "ProgressingWithRetry",
                    "reconciliation in progress"
                ),
                row(
                    "Ready",
                    False,
                    "DependencyNotReady",
                    "retrying in 30s error: no tags in database"
                ),
            ]
        );
        assert_eq!(gen, Some(2));
    }

    #[test]
    fn recovery_from_stalled_clears_it() {
        let mut list = Vec::new();
        run(
            &mut list,
            |c| c.mark_stalled(Reason::ImageUrlInvalid, "bad"),
            Outcome::Stalled,
        );
        run(
            &mut list,
            |c| c.delete(ConditionType::Ready),
            Outcome::Succeeded {
                message: "ok".into(),
            },
        );
        assert_eq!(summary(&list), [row("Ready", True, "Succeeded", "ok")]);
    }

    #[test]
    fn a_false_ready_from_a_previous_failure_is_kept_when_success_sets_none() {
        // Flux quirk (§4.2 step 8): Succeeded with Ready still False keeps it.
        let mut list = Vec::new();
        run(
            &mut list,
            |c| c.mark_false(Reason::DependencyNotReady, "old"),
            Outcome::Waiting,
        );
        let gen = run(
            &mut list,
            |_| {},
            Outcome::Succeeded {
                message: "ok".into(),
            },
        );
        assert_eq!(
            summary(&list),
            [row("Ready", False, "DependencyNotReady", "old")]
        );
        assert_eq!(gen, Some(2));
    }
}
