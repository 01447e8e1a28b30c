//! Flux's condition semantics (fluxcd/pkg/runtime/conditions, docs/imagerepository.md): the
//! owned types Ready / Reconciling / Stalled, their reasons, ordering, per-condition
//! observedGeneration, transition times kept unless status, reason or message change, and
//! message truncation. Pure: a [`Conditions`] edits a list for one generation at one instant.

use crate::api::{Condition, ConditionStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{Timestamp, ToSpan};

/// The longest message the API server accepts (metav1.Condition).
pub const MAX_MESSAGE_LEN: usize = 32768;

/// The condition types both reconcilers own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionType {
    Ready,
    Reconciling,
    Stalled,
}

impl ConditionType {
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionType::Ready => "Ready",
            ConditionType::Reconciling => "Reconciling",
            ConditionType::Stalled => "Stalled",
        }
    }
}

/// Every reason either reconciler writes (docs/imagerepository.md, plus our own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Progressing,
    ProgressingWithRetry,
    Succeeded,
    Failed,
    ImageUrlInvalid,
    FeatureGateDisabled,
    AuthenticationFailed,
    Failure,
    ReadOperationFailed,
    DependencyNotReady,
    AccessDenied,
    InvalidPolicy,
    IntervalNotConfigured,
    /// docs/compatibility.md: the registry asked us to wait (429 / `Retry-After`).
    RateLimited,
    /// docs/compatibility.md: an `exclusionList` entry does not compile; validated before any call.
    InvalidExclusionList,
    /// docs/compatibility.md: a referenced object's name is not a valid Kubernetes name; validated
    /// before any call, as it would otherwise be pasted into a request's URL.
    InvalidReference,
    /// docs/imagepolicy.md, "Gated election": no candidate passes the policy's gates.
    NoEligibleTag,
    /// docs/imagepolicy.md, "Gated election": a gate could not be checked (a registry error,
    /// the trusted keys' Secret); the last election stays.
    GateCheckFailed,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Progressing => "Progressing",
            Reason::ProgressingWithRetry => "ProgressingWithRetry",
            Reason::Succeeded => "Succeeded",
            Reason::Failed => "Failed",
            Reason::ImageUrlInvalid => "ImageURLInvalid",
            Reason::FeatureGateDisabled => "FeatureGateDisabled",
            Reason::AuthenticationFailed => "AuthenticationFailed",
            Reason::Failure => "Failure",
            Reason::ReadOperationFailed => "ReadOperationFailed",
            Reason::DependencyNotReady => "DependencyNotReady",
            Reason::AccessDenied => "AccessDenied",
            Reason::InvalidPolicy => "InvalidPolicy",
            Reason::IntervalNotConfigured => "IntervalNotConfigured",
            Reason::RateLimited => "RateLimited",
            Reason::InvalidExclusionList => "InvalidExclusionList",
            Reason::InvalidReference => "InvalidReference",
            Reason::NoEligibleTag => "NoEligibleTag",
            Reason::GateCheckFailed => "GateCheckFailed",
        }
    }
}

/// A condition list being edited for one generation at one instant.
pub struct Conditions<'a> {
    list: &'a mut Vec<Condition>,
    generation: i64,
    now: Timestamp,
}

impl<'a> Conditions<'a> {
    pub fn new(list: &'a mut Vec<Condition>, generation: i64, now: Timestamp) -> Self {
        Conditions {
            list,
            generation,
            now,
        }
    }

    pub fn get(&self, type_: ConditionType) -> Option<&Condition> {
        self.list.iter().find(|c| c.type_ == type_.as_str())
    }

    pub fn status(&self, type_: ConditionType) -> Option<ConditionStatus> {
        self.get(type_).map(|c| c.status)
    }

    fn is_true(&self, type_: ConditionType) -> bool {
        self.status(type_) == Some(ConditionStatus::True)
    }

    /// Sets a condition: observedGeneration stamped, message truncated, transition time kept
    /// when status, reason and message are unchanged; the list stays in Flux's order.
    pub fn set(
        &mut self,
        type_: ConditionType,
        status: ConditionStatus,
        reason: Reason,
        message: &str,
    ) {
        let message = truncate(message);
        let time = match self.get(type_) {
            Some(old)
                if old.status == status
                    && old.reason == reason.as_str()
                    && old.message == message =>
            {
                old.last_transition_time.clone()
            }
            _ => whole_seconds(self.now),
        };
        self.delete(type_);
        self.list.push(Condition {
            type_: type_.as_str().into(),
            status,
            observed_generation: Some(self.generation),
            last_transition_time: time,
            reason: reason.as_str().into(),
            message,
        });
        sort(self.list);
    }

    pub fn delete(&mut self, type_: ConditionType) {
        self.list.retain(|c| c.type_ != type_.as_str());
    }

    /// Reconciling=True, and Stalled removed.
    pub fn mark_reconciling(&mut self, reason: Reason, message: &str) {
        self.set(
            ConditionType::Reconciling,
            ConditionStatus::True,
            reason,
            message,
        );
        self.delete(ConditionType::Stalled);
    }

    /// Stalled=True, and Reconciling removed.
    pub fn mark_stalled(&mut self, reason: Reason, message: &str) {
        self.set(
            ConditionType::Stalled,
            ConditionStatus::True,
            reason,
            message,
        );
        self.delete(ConditionType::Reconciling);
    }

    /// Ready=False with a reason.
    pub fn mark_false(&mut self, reason: Reason, message: &str) {
        self.set(
            ConditionType::Ready,
            ConditionStatus::False,
            reason,
            message,
        );
    }

    /// Ready=Unknown with the progress reason, only where Ready is absent or Unknown (a False
    /// Ready from an earlier failure is kept, as Flux keeps it).
    pub fn mark_unknown_if_unset(&mut self, reason: Reason, message: &str) {
        if self.is_unknown(ConditionType::Ready) {
            self.set(
                ConditionType::Ready,
                ConditionStatus::Unknown,
                reason,
                message,
            );
        }
    }

    /// The start of a reconcile (Flux §3.3 steps 3–4): Reconciling=True/Progressing, and
    /// Ready=Unknown if unset; the message names a new generation when there is one.
    pub fn mark_progress(&mut self, observed_generation: Option<i64>) {
        let observed = observed_generation.unwrap_or(-1);
        let message = if self.generation != observed {
            format!(
                "processing object: new generation {observed} -> {}",
                self.generation
            )
        } else {
            "reconciliation in progress".to_string()
        };
        self.mark_reconciling(Reason::Progressing, &message);
        self.mark_unknown_if_unset(Reason::Progressing, &message);
    }

    /// Ready absent or Unknown.
    pub fn is_unknown(&self, type_: ConditionType) -> bool {
        matches!(self.status(type_), None | Some(ConditionStatus::Unknown))
    }

    /// Ready=True and neither reconciling nor stalled.
    pub fn is_ready(&self) -> bool {
        self.is_true(ConditionType::Ready) && !self.is_reconciling() && !self.is_stalled()
    }

    /// Stalled=True and Reconciling not True.
    pub fn is_stalled(&self) -> bool {
        self.is_true(ConditionType::Stalled) && !self.is_true(ConditionType::Reconciling)
    }

    /// Reconciling=True and Stalled not True.
    pub fn is_reconciling(&self) -> bool {
        self.is_true(ConditionType::Reconciling) && !self.is_true(ConditionType::Stalled)
    }
}

/// Keeps `old`'s transition time for every condition of `new` whose type, status, reason and
/// message are unchanged: what Flux's three-way status patch does for a condition that was
/// deleted and set again within one reconcile (Ready on success).
pub fn carry_transition_times(old: &[Condition], new: &mut [Condition]) {
    for condition in new {
        if let Some(prev) = old.iter().find(|o| {
            o.type_ == condition.type_
                && o.status == condition.status
                && o.reason == condition.reason
                && o.message == condition.message
        }) {
            condition.last_transition_time = prev.last_transition_time.clone();
        }
    }
}

/// Flux's order: Stalled, Reconciling, Ready, then the rest by observedGeneration (newest
/// first) and type.
fn sort(list: &mut [Condition]) {
    let rank = |c: &Condition| match c.type_.as_str() {
        "Stalled" => 0,
        "Reconciling" => 1,
        "Ready" => 2,
        _ => 3,
    };
    list.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then_with(|| b.observed_generation.cmp(&a.observed_generation))
            .then_with(|| a.type_.cmp(&b.type_))
    });
}

/// At most [`MAX_MESSAGE_LEN`] bytes, ending in `...` when cut (on a character boundary).
fn truncate(message: &str) -> String {
    cut(message, MAX_MESSAGE_LEN)
}

/// At most `max` bytes of `text`, ending in `...` when cut (on a character boundary): a
/// condition's message, an Event's note. Control characters other than a line break or a tab
/// (a registry's or a Secret's text may hold terminal escapes, carriage returns, bells) are
/// escaped first, so `kubectl describe` shows them as text (`\u{1b}`, `\r`) and never acts on
/// them; line breaks stay, as some of Flux's messages have them.
pub fn cut(text: &str, max: usize) -> String {
    let hostile = |c: char| c.is_control() && c != '\n' && c != '\t';
    let escaped;
    let text = if text.chars().any(hostile) {
        escaped = text
            .chars()
            .map(|c| match hostile(c) {
                true => c.escape_default().to_string(),
                false => c.to_string(),
            })
            .collect::<String>();
        escaped.as_str()
    } else {
        text
    };
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max - 3;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

/// Whole seconds in UTC, as metav1.Time serialises them (so what is written reads back equal).
pub fn whole_seconds(now: Timestamp) -> Time {
    let whole = now
        .checked_sub(now.subsec_nanosecond().nanoseconds())
        .unwrap_or(now);
    Time(whole)
}

#[cfg(test)]
mod tests;
