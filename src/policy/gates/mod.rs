//! The gates a candidate tag must pass besides the ordering (docs/imagepolicy.md, "Gated
//! election"), as one list the election walks: each gate is a type that says which facts it
//! needs and judges a candidate by them. Pure: the facts about an image (when it was created,
//! which platforms it provides, what its signature check found, when its tag was first seen)
//! come in as plain values ([`Facts`]); the walk that gathers them lives with the reconciler,
//! and asks for what a gate lacks.
//!
//! Fail closed by construction: a candidate passes only as a [`Passed`], which only
//! [`Gates::judge`] makes, when every gate answered [`Judgement::Pass`]; a gate sees only the
//! facts it declared ([`Gate::needs`]), so a fact read but not declared is missing, never
//! passed.
//!
//! Adding a gate is one file here (its type, its [`Gate`] impl and its place in the order),
//! its field in the API with the line that builds it (`api/gates.rs`), and its docs
//! (docs/development.md, "Adding a gate"); a new fact is a [`Fact`] variant, its accessor in
//! [`Facts`] and its look-up in the election's fact source.

mod facts;
mod min_age;
mod platform;
mod platforms;
mod verify;

pub use facts::{Fact, Facts, ImageView, Missing, Need, SignatureView};
pub use min_age::{Age, ByBump, MinAge, SignedClock, Undated};
pub use platform::Platform;
pub use platforms::Platforms;
pub use verify::Verify;

use std::fmt;
use std::time::Duration;

/// The most platforms a policy may require (a real list names two to five).
pub const MAX_PLATFORMS: usize = 16;
/// The longest platform string accepted (`linux/arm64/v8` is 14 bytes).
pub const MAX_PLATFORM_LEN: usize = 64;
/// The longest minimum age accepted: ten years. Beyond that nothing is ever eligible, and the
/// arithmetic on Unix seconds stays far from overflow.
pub const MAX_MIN_AGE: Duration = Duration::from_secs(10 * 366 * 24 * 3600);

/// One gate: what it is called, what it needs, how it judges.
pub trait Gate: fmt::Debug + Send + Sync {
    /// Its name in `status.heldBack` (`minAge`, `platforms`, `verify`).
    fn name(&self) -> &'static str;
    /// How the spec set it, for `select --explain` (`minAge 168h`).
    fn describe(&self) -> String;
    /// The facts it judges by: the only ones [`Gate::judge`] is shown, so the walk can read
    /// them in the fewest requests (the image with the manifest that names the digest, say).
    fn needs(&self) -> Need;
    /// Passes the candidate or holds it back; `Err` names a fact it lacks (read with `?`).
    fn judge(&self, facts: &Facts<'_>) -> Result<Judgement, Missing>;
    /// Its place in the judging order, lowest first: the cheaper facts first (platforms, then
    /// age, from one image read), the signature last.
    fn order(&self) -> u8;
}

/// A gate as the list holds it.
pub fn gate(gate: impl Gate + 'static) -> Box<dyn Gate> {
    Box::new(gate)
}

/// One gate's answer for one candidate, on facts it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judgement {
    Pass,
    Hold(Hold),
}

/// Why a candidate is not eligible now, and (for `minAge`) from when it will be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    /// The gate's name.
    pub gate: &'static str,
    pub reason: String,
    /// Unix seconds from which the gate passes, when time alone will open it.
    pub eligible_at: Option<i64>,
}

impl Hold {
    /// The hold of a candidate whose `fact`, which `gate` needs, is still unknown after it was
    /// looked up: failing closed, looked at again at the recheck.
    pub fn unknown(gate: &'static str, fact: Fact) -> Hold {
        Hold {
            gate,
            reason: format!("{fact} is unknown after it was looked up; held until it is known"),
            eligible_at: None,
        }
    }
}

impl Hold {
    /// The hold of a candidate the gates did not decide once every fact was looked up (a gate
    /// that asks for a fact it was given): failing closed.
    pub fn undecided() -> Hold {
        Hold {
            gate: "gates",
            reason: "the gates did not decide once every fact was looked up; held".into(),
            eligible_at: None,
        }
    }
}

/// The proof that every gate of a list passed one candidate: made only by [`Gates::judge`], so
/// an election that carries one cannot have skipped a gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Passed {
    gates: Vec<&'static str>,
}

impl Passed {
    /// The names of the gates that passed, in their order: all of the list's.
    pub fn gates(&self) -> &[&'static str] {
        &self.gates
    }
}

/// The whole list's answer for one candidate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ruling {
    /// Every gate passed.
    Passed(Passed),
    /// Every gate that did not pass, the one that holds longest first (never empty).
    Held(Vec<Hold>),
    /// `gate` needs `fact`, which is not known: look it up and ask again.
    Lacks { gate: &'static str, fact: Fact },
}

/// The gates of one policy, in the order they judge: the cheaper facts first (platforms, then
/// age, from one image read), the signature last. Empty: Flux's election.
#[derive(Debug, Default)]
pub struct Gates(Vec<Box<dyn Gate>>);

impl Gates {
    /// The list of `gates`, each built by itself, in their judging order ([`Gate::order`]).
    pub fn of(gates: impl IntoIterator<Item = Box<dyn Gate>>) -> Gates {
        let mut list: Vec<Box<dyn Gate>> = gates.into_iter().collect();
        list.sort_by_key(|g| g.order());
        Gates(list)
    }

    /// Whether any gate is set: without one, election and requests are Flux's.
    pub fn any(&self) -> bool {
        !self.0.is_empty()
    }

    /// What the gates need, together.
    pub fn needs(&self) -> Need {
        self.0
            .iter()
            .fold(Need::NONE, |all, g| all.union(g.needs()))
    }

    /// Whether the image's manifest must be read: for its creation time or its platforms.
    pub fn needs_image(&self) -> bool {
        self.needs().contains(Fact::Image)
    }

    /// Each gate in order, each shown only the facts it declared: the first fact a gate lacks
    /// that is not among those `looked` up already, else every hold (longest first), else the
    /// proof that all passed. A fact still missing after its look-up holds its gate.
    pub fn judge(&self, facts: &Facts<'_>, looked: Need) -> Ruling {
        let mut passed = Vec::with_capacity(self.0.len());
        let mut holds = Vec::new();
        for gate in &self.0 {
            match gate.judge(&facts.only(gate.needs())) {
                Ok(Judgement::Pass) => passed.push(gate.name()),
                Ok(Judgement::Hold(hold)) => holds.push(hold),
                Err(Missing(fact)) if looked.contains(fact) => {
                    holds.push(Hold::unknown(gate.name(), fact));
                }
                Err(Missing(fact)) => {
                    let gate = gate.name();
                    return Ruling::Lacks { gate, fact };
                }
            }
        }
        if holds.is_empty() {
            return Ruling::Passed(Passed { gates: passed });
        }
        // Longest first: a hold time alone does not open, then the latest to open; ties keep
        // the gates' order.
        holds.sort_by_key(|h| std::cmp::Reverse(h.eligible_at.unwrap_or(i64::MAX)));
        Ruling::Held(holds)
    }

    /// How the spec set each gate, in order.
    pub fn describe(&self) -> Vec<String> {
        self.0.iter().map(|g| g.describe()).collect()
    }

    /// Each gate's name, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|g| g.name()).collect()
    }
}

/// Unix seconds as an RFC 3339 instant (`2026-12-07T10:00:00Z`): what a reason says instead of
/// an age, which would be stale by the time it is read.
pub fn instant(seconds: i64) -> String {
    match jiff::Timestamp::from_second(seconds) {
        Ok(at) => at.to_string(),
        Err(_) => format!("{seconds} seconds after 1970-01-01T00:00:00Z"),
    }
}

#[cfg(test)]
mod tests;
