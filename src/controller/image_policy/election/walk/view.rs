//! What the walk knows of a candidate, and what the gates are shown of it: each fact only when
//! known.

use crate::policy::{Bump, Facts, ImageView, Platform};
use crate::store::{ImageFacts, SignatureVerdict};

/// What the walk knows of one candidate: its image's facts (by digest, with the signature
/// verdicts) and when its tag was first seen at that digest.
#[derive(Clone, Debug, Default)]
pub struct Evidence {
    pub tag: String,
    pub image: ImageFacts,
    /// Unix seconds (0: before the controller); `None`: not known.
    pub first_seen: Option<i64>,
}

/// The facts the gates are shown: each one only when it is known.
pub(super) fn view<'a>(
    now: i64,
    evidence: &Evidence,
    offered: &'a [(Platform, Option<i64>)],
    verdict: Option<&'a SignatureVerdict>,
    bump: Option<Bump>,
) -> Facts<'a> {
    let mut facts = Facts::at(now);
    if let Some(bump) = bump {
        facts = facts.with_bump(bump);
    }
    if evidence.image.inspected {
        let created = evidence.image.created;
        let platforms = offered;
        facts = facts.with_image(ImageView { created, platforms });
    }
    if let Some(v) = verdict {
        facts = facts
            .with_signature(v.verified_by.as_deref().ok_or(v.reason.as_str()))
            .with_signed_at(v.signed_at);
    }
    if let Some(at) = evidence.first_seen {
        facts = facts.with_first_seen(at);
    }
    facts
}

/// The platforms an inspection found, parsed back from the store's strings.
pub(super) fn platforms(facts: &ImageFacts) -> Vec<(Platform, Option<i64>)> {
    facts
        .platforms
        .iter()
        .filter_map(|p| Platform::parse(&p.platform).ok().map(|x| (x, p.created)))
        .collect()
}
