//! `spec.filterTags.minAge`: the image is at least this old, by its creation time (which its
//! publisher writes), by when the controller first saw the tag at this digest (which no
//! publisher can backdate, but a lost store forgets), and, with `spec.verify`, by when its
//! valid signature was made as a transparency log or timestamp authority vouches (which
//! neither can change); each must be old enough.

use super::{short_age, Fact, Facts, Gate, Hold, Judgement, Missing, Need, Platform};
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

/// A minimum age, as written, and the platforms whose images count for an index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MinAge {
    age: Duration,
    written: String,
    undated: Undated,
    platforms: Vec<Platform>,
    signed: SignedClock,
}

impl MinAge {
    pub fn new(age: Duration, written: String, undated: Undated) -> MinAge {
        MinAge {
            age,
            written,
            undated,
            platforms: Vec::new(),
            signed: SignedClock::Off,
        }
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

    fn hold(&self, reason: String, eligible_at: Option<i64>) -> Result<Judgement, Missing> {
        Ok(Judgement::Hold(Hold {
            gate: self.name(),
            reason,
            eligible_at,
        }))
    }
}

impl MinAge {
    /// The third clock, once the others passed: the signing time a log or timestamp authority
    /// vouches for. A signature that is not valid passes here: the verify gate holds it, with
    /// its own reason.
    fn signed_clock(&self, facts: &Facts<'_>) -> Result<Judgement, Missing> {
        if self.signed == SignedClock::Off || facts.signature()?.is_err() {
            return Ok(Judgement::Pass);
        }
        let (written, now, needed) = (&self.written, facts.now(), self.age.as_secs() as i64);
        match facts.signed_at()? {
            Some(signed) if now.saturating_sub(signed) < needed => self.hold(
                format!(
                    "signed {} ago, as its transparency log or timestamp authority says, \
                     minAge {written}",
                    short_age(now.saturating_sub(signed))
                ),
                Some(signed.saturating_add(needed)),
            ),
            None if self.signed == SignedClock::Required => self.hold(
                format!(
                    "its signature carries no time a transparency log or timestamp authority \
                     vouches for; minAge {written} with minAgeSignedTime: Required holds it"
                ),
                None,
            ),
            _ => Ok(Judgement::Pass),
        }
    }
}

impl Gate for MinAge {
    fn name(&self) -> &'static str {
        "minAge"
    }

    fn describe(&self) -> String {
        match self.undated {
            Undated::Hold => format!("minAge {}", self.written),
            Undated::FirstSeen => format!("minAge {} (undated: first seen)", self.written),
        }
    }

    fn needs(&self) -> Need {
        let need = Need::of([Fact::Image, Fact::FirstSeen]);
        match self.signed {
            SignedClock::Off => need,
            _ => need.with(Fact::Signature),
        }
    }

    fn order(&self) -> u8 {
        1
    }

    fn judge(&self, facts: &Facts<'_>) -> Result<Judgement, Missing> {
        let image = facts.image()?;
        let (written, now) = (&self.written, facts.now());
        let needed = self.age.as_secs() as i64;
        let created = self.created(image.created, image.platforms);
        if created.is_none() && self.undated == Undated::Hold {
            return self.hold(
                format!(
                    "no creation time (neither the config's 'created' nor the \
                     org.opencontainers.image.created annotation); minAge {written} fails closed"
                ),
                None,
            );
        }
        if let Some(created) = created {
            let age = now.saturating_sub(created);
            if age < needed {
                let reason = match age < 0 {
                    true => format!(
                        "created {} in the future, minAge {written}",
                        short_age(-age)
                    ),
                    false => format!("{} old, minAge {written}", short_age(age)),
                };
                // Held either way; the first sighting, when known, only says until when.
                let at = created.saturating_add(needed);
                let at = facts
                    .first_seen()
                    .map_or(at, |s| at.max(s.saturating_add(needed)));
                return self.hold(reason, Some(at));
            }
        }
        let seen = facts.first_seen()?;
        let age = now.saturating_sub(seen);
        if age >= needed {
            return self.signed_clock(facts);
        }
        let created = match created {
            Some(created) => format!("created {} ago", short_age(now.saturating_sub(created))),
            None => "no creation time".into(),
        };
        self.hold(
            format!(
                "first seen {} ago at this digest ({created}), minAge {written}",
                short_age(age)
            ),
            Some(seen.saturating_add(needed)),
        )
    }
}

#[cfg(test)]
mod tests;
