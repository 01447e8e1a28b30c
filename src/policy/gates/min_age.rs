//! `spec.filterTags.minAge`: the image is at least this old, by its creation time (which its
//! publisher writes), by when the controller first saw the tag at this digest (which no
//! publisher can backdate, but a lost store forgets), and, with `spec.verify`, by when its
//! valid signature was made as a transparency log or timestamp authority vouches (which
//! neither can change); each must be old enough. With `minAgeByBump`, the age asked depends on
//! how the candidate's version rises from the tag elected now (major, minor, patch).

use super::{instant, Fact, Facts, Gate, Hold, Judgement, Missing, Need, Platform};
use crate::policy::Bump;
use std::time::Duration;

/// What `minAge` does with an image that says nothing of when it was created
/// (`spec.filterTags.minAgeUndated`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Undated {
    /// Hold it back: no age, no election (fails closed).
    #[default]
    Hold,
    /// Judge it by when it was first seen alone (reproducible builds date images to 1970 or
    /// not at all).
    FirstSeen,
}

/// What `minAge` does with the signing time (`spec.filterTags.minAgeSignedTime`), when
/// `spec.verify` is set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SignedClock {
    /// Not read: no `spec.verify`.
    #[default]
    Off,
    /// Held until the signing time is old enough, when the valid signature carries one.
    IfPresent,
    /// Also held when the valid signature carries none (a key's signature, a keyless one
    /// without a log entry or timestamp).
    Required,
}

/// An age as the spec wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Age {
    pub age: Duration,
    pub written: String,
}

/// `spec.filterTags.minAgeByBump`: the age each kind of bump asks for; one not set asks for
/// `minAge`'s.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ByBump {
    pub major: Option<Age>,
    pub minor: Option<Age>,
    pub patch: Option<Age>,
}

impl ByBump {
    fn is_empty(&self) -> bool {
        self.major.is_none() && self.minor.is_none() && self.patch.is_none()
    }

    fn of(&self, bump: Bump) -> Option<&Age> {
        match bump {
            Bump::Major => self.major.as_ref(),
            Bump::Minor => self.minor.as_ref(),
            Bump::Patch => self.patch.as_ref(),
            Bump::Unranked => None,
        }
    }
}

/// A minimum age, as written, and the platforms whose images count for an index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MinAge {
    /// `minAge`; `None` when only `minAgeByBump` is set (an unranked candidate then passes).
    base: Option<Age>,
    by_bump: ByBump,
    undated: Undated,
    platforms: Vec<Platform>,
    signed: SignedClock,
}

/// The age one candidate is held to, and how its reasons name it (`minAge 168h`,
/// `minAgeByBump.major 720h`).
struct Asked {
    needed: i64,
    named: String,
}

impl MinAge {
    pub fn new(age: Duration, written: String, undated: Undated) -> MinAge {
        MinAge {
            base: Some(Age { age, written }),
            by_bump: ByBump::default(),
            undated,
            platforms: Vec::new(),
            signed: SignedClock::Off,
        }
    }

    /// `minAgeByBump` without `minAge`: a candidate that is no bump passes on age.
    pub fn by_bump_only(by_bump: ByBump, undated: Undated) -> MinAge {
        MinAge {
            base: None,
            by_bump,
            undated,
            platforms: Vec::new(),
            signed: SignedClock::Off,
        }
    }

    /// `minAgeByBump`: the age of each kind of bump, the others `minAge`'s.
    pub fn with_bumps(self, by_bump: ByBump) -> MinAge {
        MinAge { by_bump, ..self }
    }

    /// The signing time as a third clock (`spec.verify` set).
    pub fn with_signed_clock(self, signed: SignedClock) -> MinAge {
        MinAge { signed, ..self }
    }

    /// `spec.platforms`: an index is as young as the images serving them (all of its images
    /// without it).
    pub fn for_platforms(self, platforms: Vec<Platform>) -> MinAge {
        MinAge { platforms, ..self }
    }

    /// The creation time the age is taken from: the image's own (a single manifest's, or an
    /// index's annotation), else the newest of the platform images that matter. `None` when
    /// one of them has no time: an image is as young as its youngest part, and an undated
    /// part fails closed.
    pub fn created(&self, own: Option<i64>, platforms: &[(Platform, Option<i64>)]) -> Option<i64> {
        if own.is_some() {
            return own;
        }
        let cared = platforms.iter().filter(|(offered, _)| {
            self.platforms.is_empty() || self.platforms.iter().any(|w| w.served_by(offered))
        });
        let mut newest: Option<i64> = None;
        for (_, created) in cared {
            let created = (*created)?;
            newest = Some(newest.map_or(created, |n| n.max(created)));
        }
        newest
    }

    fn held(&self, reason: String, eligible_at: Option<i64>) -> Judgement {
        Judgement::Hold(Hold {
            gate: self.name(),
            reason,
            eligible_at,
        })
    }
}

impl MinAge {
    /// The age `facts`' candidate is held to: its bump's, else `minAge`; `None` when neither
    /// is set for it (only `minAgeByBump`, and the candidate is no bump of that kind).
    fn asked(&self, facts: &Facts<'_>) -> Result<Option<Asked>, Missing> {
        let asked = |age: &Age, named: String| Asked {
            needed: age.age.as_secs() as i64,
            named,
        };
        if !self.by_bump.is_empty() {
            let bump = facts.bump()?;
            if let Some(age) = self.by_bump.of(bump) {
                let named = format!("minAgeByBump.{bump} {} (a {bump} bump)", age.written);
                return Ok(Some(asked(age, named)));
            }
        }
        let base = self.base.as_ref();
        Ok(base.map(|age| asked(age, format!("minAge {}", age.written))))
    }

    /// The third clock: the signing time a log or timestamp authority vouches for, `None` when
    /// it is not read or there is none. A signature that is not valid has none here: the
    /// verify gate holds it, with its own reason. `Err` holds it: `Required`, and a valid
    /// signature without such a time.
    fn signed_clock(&self, facts: &Facts<'_>, asked: &Asked) -> Result<Option<i64>, Judgement> {
        let (Ok(signature), Ok(signed)) = (facts.signature(), facts.signed_at()) else {
            return Ok(None);
        };
        match (self.signed, signed) {
            (SignedClock::Off, _) => Ok(None),
            (SignedClock::Required, None) if signature.is_ok() => Err(self.held(
                format!(
                    "its signature carries no time a transparency log or timestamp authority \
                     vouches for; {} with minAgeSignedTime: Required holds it",
                    asked.named
                ),
                None,
            )),
            (_, signed) => Ok(signed),
        }
    }
}

impl Gate for MinAge {
    fn name(&self) -> &'static str {
        "minAge"
    }

    fn describe(&self) -> String {
        let mut parts: Vec<String> = self.base.iter().map(|a| a.written.clone()).collect();
        let bumps = [
            (Bump::Major, &self.by_bump.major),
            (Bump::Minor, &self.by_bump.minor),
            (Bump::Patch, &self.by_bump.patch),
        ];
        for (bump, age) in bumps {
            if let Some(age) = age {
                parts.push(format!("{bump} {}", age.written));
            }
        }
        let ages = parts.join(", ");
        match self.undated {
            Undated::Hold => format!("minAge {ages}"),
            Undated::FirstSeen => format!("minAge {ages} (undated: first seen)"),
        }
    }

    fn needs(&self) -> Need {
        let mut need = Need::of([Fact::Image, Fact::FirstSeen]);
        if self.signed != SignedClock::Off {
            need = need.with(Fact::Signature);
        }
        if !self.by_bump.is_empty() {
            need = need.with(Fact::Bump);
        }
        need
    }

    fn order(&self) -> u8 {
        1
    }

    fn judge(&self, facts: &Facts<'_>) -> Result<Judgement, Missing> {
        let image = facts.image()?;
        let Some(asked) = self.asked(facts)? else {
            return Ok(Judgement::Pass);
        };
        let created = self.created(image.created, image.platforms);
        if created.is_none() && self.undated == Undated::Hold {
            return Ok(self.held(
                format!(
                    "no creation time (neither the config's 'created' nor the \
                     org.opencontainers.image.created annotation); {} fails closed",
                    asked.named
                ),
                None,
            ));
        }
        if self.signed != SignedClock::Off {
            facts.signed_at()?; // the signature's verdict, looked up if it is not known
        }
        let signed = match self.signed_clock(facts, &asked) {
            Ok(signed) => signed,
            Err(held) => return Ok(held),
        };
        let clocks = [
            (created, Clock::Created),
            (Some(facts.first_seen()?), Clock::FirstSeen),
            (signed, Clock::Signed),
        ];
        // Each clock must be old enough: the one that opens last says until when (the first
        // named, of clocks that open together).
        let (now, needed) = (facts.now(), asked.needed);
        let last = clocks
            .into_iter()
            .filter_map(|(at, clock)| at.map(|at| (at.saturating_add(needed), at, clock)))
            .rev()
            .max_by_key(|(opens, ..)| *opens);
        match last {
            Some((opens, at, clock)) if opens > now => Ok(self.held(
                format!(
                    "until {}: {} after {}",
                    instant(opens),
                    asked.named,
                    clock.since(at, now)
                ),
                Some(opens),
            )),
            _ => Ok(Judgement::Pass),
        }
    }
}

/// The three clocks of an image's age.
#[derive(Clone, Copy)]
enum Clock {
    Created,
    FirstSeen,
    Signed,
}

impl Clock {
    /// What the clock started at, in words, for a reason.
    fn since(self, at: i64, now: i64) -> String {
        let at_ = instant(at);
        match self {
            Clock::Created if at > now => format!("its creation ({at_}, in the future)"),
            Clock::Created => format!("its creation ({at_})"),
            Clock::FirstSeen => format!("it was first seen at this digest ({at_})"),
            Clock::Signed => format!(
                "it was signed ({at_}, as its transparency log or timestamp authority says)"
            ),
        }
    }
}

#[cfg(test)]
mod tests;
