//! The gates a candidate tag must pass besides the ordering (docs/imagepolicy.md, "Gated
//! election"), as one list the election walks: each gate is a type that says which facts it
//! needs and judges a candidate by them. Pure: the facts about an image (when it was created,
//! which platforms it provides, what its signature check found) come in as plain values; the
//! walk that gathers them lives with the reconciler, and asks for what a gate lacks.
//!
//! Adding a gate is one file here (its type, its [`Gate`] impl and its place in the order),
//! its field in the API with the line that builds it from the spec (`ImagePolicySpec::gates`),
//! and its docs (docs/development.md).

mod min_age;
mod platform;
mod platforms;
mod verify;

pub use min_age::{MinAge, Undated};
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
    /// The facts it judges by, so the walk can read them in the fewest requests (the image
    /// with the manifest that names the digest, say).
    fn needs(&self) -> Need;
    /// Passes the candidate, holds it back, or says which fact it lacks.
    fn judge(&self, facts: &Facts<'_>) -> Judgement;
    /// Its place in the judging order, lowest first: the cheaper facts first (platforms, then
    /// age, from one image read), the signature last.
    fn order(&self) -> u8;
}

/// A gate as the list holds it.
pub fn gate(gate: impl Gate + 'static) -> Box<dyn Gate> {
    Box::new(gate)
}

/// Facts a gate may need beyond the digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fact {
    /// The image's creation time and platforms (its manifest and config).
    Image,
    /// The signature check of the digest.
    Signature,
}

/// The facts a gate judges by (a set of [`Fact`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Need {
    pub image: bool,
    pub signature: bool,
}

/// What is known of one candidate when a gate judges it; `None`: not looked at yet.
#[derive(Clone, Debug, Default)]
pub struct Facts<'a> {
    /// Unix seconds.
    pub now: i64,
    pub image: Option<ImageView<'a>>,
    /// `Ok(key)`: a valid signature by that key; `Err(reason)`: none.
    pub signature: Option<Result<&'a str, &'a str>>,
    /// When the tag was first seen at this digest (Unix seconds, 0: before the controller),
    /// if the controller keeps it: a time the publisher does not write.
    pub first_seen: Option<i64>,
}

/// An image as its manifest and config describe it.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImageView<'a> {
    /// The image's own creation time (a single manifest's config, or an index's annotation).
    pub created: Option<i64>,
    /// The platforms it provides, with each platform image's creation time.
    pub platforms: &'a [(Platform, Option<i64>)],
}

/// A gate's answer for one candidate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judgement {
    Pass,
    Hold(Hold),
    /// The walk must look this up, then ask again.
    Lacks(Fact),
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
        self.0.iter().fold(Need::default(), |all, g| {
            let need = g.needs();
            Need {
                image: all.image || need.image,
                signature: all.signature || need.signature,
            }
        })
    }

    /// Whether the image's manifest must be read: for its creation time or its platforms.
    pub fn needs_image(&self) -> bool {
        self.needs().image
    }

    /// The first gate's answer that is not a pass, in order.
    pub fn judge(&self, facts: &Facts<'_>) -> Judgement {
        self.0
            .iter()
            .map(|gate| gate.judge(facts))
            .find(|j| *j != Judgement::Pass)
            .unwrap_or(Judgement::Pass)
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

/// A duration as people say it: `3h`, `2d4h`, `12m`, `40s` (whole units, rounded down).
pub fn short_age(seconds: i64) -> String {
    let seconds = seconds.max(0);
    let (d, h, m) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{seconds}s"),
        (0, 0, m) => format!("{m}m"),
        (0, h, _) => format!("{h}h"),
        (d, 0, _) => format!("{d}d"),
        (d, h, _) => format!("{d}d{h}h"),
    }
}

#[cfg(test)]
mod tests;
