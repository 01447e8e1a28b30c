//! `spec.filterTags.minAge`: the image is at least this old, by its creation time.

use super::{short_age, Fact, Facts, Gate, Hold, Judgement, Need, Platform};
use std::time::Duration;

/// A minimum age, as written, and the platforms whose images count for an index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MinAge {
    age: Duration,
    written: String,
    platforms: Vec<Platform>,
}

impl MinAge {
    /// `platforms`: `spec.platforms` (an index is as young as the images serving them; all of
    /// its images without it).
    pub fn new(age: Duration, written: String, platforms: Vec<Platform>) -> MinAge {
        MinAge {
            age,
            written,
            platforms,
        }
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
}

impl Gate for MinAge {
    fn name(&self) -> &'static str {
        "minAge"
    }

    fn describe(&self) -> String {
        format!("minAge {}", self.written)
    }

    fn needs(&self) -> Need {
        Need {
            image: true,
            signature: false,
        }
    }

    fn judge(&self, facts: &Facts<'_>) -> Judgement {
        let Some(image) = facts.image else {
            return Judgement::Lacks(Fact::Image);
        };
        let written = &self.written;
        let hold = |reason, eligible_at| {
            Judgement::Hold(Hold {
                gate: self.name(),
                reason,
                eligible_at,
            })
        };
        let Some(created) = self.created(image.created, image.platforms) else {
            return hold(
                format!(
                    "no creation time (neither the config's 'created' nor the \
                     org.opencontainers.image.created annotation); minAge {written} fails closed"
                ),
                None,
            );
        };
        let age = facts.now.saturating_sub(created);
        let needed = self.age.as_secs() as i64;
        if age >= needed {
            return Judgement::Pass;
        }
        let reason = match age < 0 {
            true => format!(
                "created {} in the future, minAge {written}",
                short_age(-age)
            ),
            false => format!("{} old, minAge {written}", short_age(age)),
        };
        hold(reason, Some(created.saturating_add(needed)))
    }
}
