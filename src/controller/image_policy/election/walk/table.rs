//! The walk's fact source made of tables (no registry, no store), for `tests.rs`.

use super::*;
use crate::store::PlatformFact;
use std::collections::{HashMap, HashSet};

pub(super) const NOW: i64 = 1_000 * 86_400;
pub(super) const DAY: i64 = 86_400;

/// One image per tag: its digest is `d-<tag>`.
#[derive(Default)]
pub(super) struct Table {
    pub(super) created: HashMap<String, Option<i64>>,
    pub(super) platforms: HashMap<String, Vec<&'static str>>,
    pub(super) signed: HashSet<String>,
    pub(super) first_seen: HashMap<String, i64>,
    /// Tags whose digest the store knows (no request).
    pub(super) stored: HashSet<String>,
    pub(super) gone: HashSet<String>,
    /// Tags whose manifest the registry refuses to serve (403 `DENIED`).
    pub(super) refused: HashSet<String>,
    /// Tags whose attestations' evaluation gives its slot to another namespace.
    pub(super) yielded: HashSet<String>,
    /// Every registry request, as `digest <tag>`, `image <digest>`, `signature <digest>`.
    pub(super) asked: Vec<String>,
    pub(super) kept: Vec<String>,
}

impl Table {
    pub(super) fn image(mut self, tag: &str, age_days: i64, platforms: &[&'static str]) -> Table {
        self.created.insert(tag.into(), Some(NOW - age_days * DAY));
        self.platforms.insert(tag.into(), platforms.to_vec());
        self
    }
}

fn tag_of(digest: &str) -> &str {
    digest.strip_prefix("d-").unwrap()
}

impl FactSource for Table {
    async fn digest(&mut self, tag: &str, budget: &mut Budget<'_>) -> Result<String, Cut> {
        if !self.stored.contains(tag) {
            budget.charge()?;
            self.asked.push(format!("digest {tag}"));
        }
        if self.refused.contains(tag) {
            return Err(Cut::Refused("403 Forbidden: DENIED: cooldown".into()));
        }
        match self.gone.contains(tag) {
            true => Err(Cut::Gone),
            false => Ok(format!("d-{tag}")),
        }
    }

    fn known(&self, tag: &str, digest: &str) -> Evidence {
        let image = ImageFacts {
            digest: digest.into(),
            ..Default::default()
        };
        let first_seen = Some(self.first_seen.get(tag).copied().unwrap_or(0));
        let tag = tag.to_string();
        Evidence {
            tag,
            image,
            first_seen,
        }
    }

    async fn look_up(&mut self, fact: Fact, evidence: &mut Evidence) -> Result<(), Cut> {
        let facts = &mut evidence.image;
        let tag = tag_of(&facts.digest).to_string();
        match fact {
            Fact::Image => {
                self.asked.push(format!("image {}", facts.digest));
                facts.inspected = true;
                facts.created = self.created.get(&tag).copied().flatten();
                facts.platforms = self
                    .platforms
                    .get(&tag)
                    .into_iter()
                    .flatten()
                    .map(|p| PlatformFact {
                        platform: p.to_string(),
                        created: facts.created,
                    })
                    .collect();
            }
            Fact::Signature => {
                self.asked.push(format!("signature {}", facts.digest));
                if self.yielded.contains(&tag) {
                    return Err(Cut::Paused(Pause::Yielded));
                }
                let signed = self.signed.contains(&tag);
                facts.set_verdict(SignatureVerdict {
                    valid_until: None,
                    keys: "k".into(),
                    verified_by: signed.then(|| "cosign.pub".into()),
                    reason: if signed {
                        String::new()
                    } else {
                        "no cosign signature".into()
                    },
                    checked_at: NOW,
                    signed_at: None,
                });
            }
            Fact::FirstSeen => unreachable!("the table knows every first sighting"),
            Fact::Bump => {} // given by the judge, or never
        }
        Ok(())
    }

    fn verdict<'f>(&self, facts: &'f ImageFacts, _: bool) -> Option<&'f SignatureVerdict> {
        facts.verdict("k")
    }

    async fn keep(&mut self, facts: ImageFacts) {
        self.kept.push(facts.digest);
    }
}

/// A source whose store knows every verdict ("not signed", checked now).
pub(super) struct Stored(pub(super) Table);

impl FactSource for Stored {
    async fn digest(&mut self, tag: &str, budget: &mut Budget<'_>) -> Result<String, Cut> {
        self.0.digest(tag, budget).await
    }

    fn known(&self, tag: &str, digest: &str) -> Evidence {
        let mut evidence = self.0.known(tag, digest);
        evidence.image.set_verdict(SignatureVerdict {
            valid_until: None,
            keys: "k".into(),
            verified_by: None,
            reason: "no cosign signature".into(),
            checked_at: NOW,
            signed_at: None,
        });
        evidence
    }

    async fn look_up(&mut self, fact: Fact, evidence: &mut Evidence) -> Result<(), Cut> {
        self.0.look_up(fact, evidence).await
    }

    fn verdict<'f>(&self, facts: &'f ImageFacts, now: bool) -> Option<&'f SignatureVerdict> {
        self.0.verdict(facts, now)
    }

    async fn keep(&mut self, facts: ImageFacts) {
        self.0.keep(facts).await
    }
}
