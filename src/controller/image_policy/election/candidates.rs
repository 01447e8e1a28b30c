//! An election's candidates, best first: the best tag, found as the stored tags were read, and
//! the rest, ranked only when the walk gets past the best (it was held back), as far as the
//! downgrade guard lets the walk go. A steady state whose best passes ranks nothing, so it
//! costs what Flux's election costs.

use super::super::downgrade::Floor;
use crate::policy::Policy;
use crate::store::TagList;

/// The best tag and what follows it.
pub struct Candidates {
    pub best: String,
    rest: Rest,
}

/// The candidates after the best.
enum Rest {
    /// None: no gate can hold the best back.
    Nothing,
    /// The stored tags and what ranks them, with the guard's floor if it holds (boxed: a
    /// policy is large beside the other cases).
    Unranked(Box<Unranked>),
    /// Already in order (the walk's tests).
    #[cfg(test)]
    Listed(Vec<String>),
}

/// Tags not ranked yet.
struct Unranked {
    tags: TagList,
    ranking: Policy,
    floor: Option<Floor>,
}

/// The candidates after the best, as far as the guard lets the walk go.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Ranked {
    /// Best first, none ranked below the guard's floor.
    pub allowed: Vec<String>,
    /// The first candidate the guard refused, when the tag it holds at is no longer listed:
    /// the walk ended there, and a downgrade was refused.
    pub refused: Option<String>,
}

impl Candidates {
    /// The best alone: an election without gates.
    pub fn best(best: String) -> Candidates {
        let rest = Rest::Nothing;
        Candidates { best, rest }
    }

    /// The best, then the stored `tags` as `ranking` orders them, none below `floor`.
    pub fn ranked(best: String, tags: TagList, ranking: Policy, floor: Option<&Floor>) -> Self {
        let floor = floor.cloned();
        let rest = Rest::Unranked(Box::new(Unranked {
            tags,
            ranking,
            floor,
        }));
        Candidates { best, rest }
    }

    /// Candidates already in order, the first the best (the walk's tests); a tag written `!x`
    /// is where the downgrade guard refuses `x`.
    #[cfg(test)]
    pub fn listed(tags: &[&str]) -> Candidates {
        let mut tags: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
        let best = tags.remove(0);
        let rest = Rest::Listed(tags);
        Candidates { best, rest }
    }

    /// The candidates whose creation time decides a newest order and is not known
    /// ([`Policy::to_date`]): none for another order.
    pub(super) fn to_date(&self) -> Vec<String> {
        match &self.rest {
            Rest::Unranked(u) => u
                .ranking
                .to_date(u.tags.iter())
                .into_iter()
                .map(String::from)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The candidates with these creation times known: the best elected again.
    pub(super) fn dated(self, dates: Vec<(String, Option<i64>)>) -> Candidates {
        let Rest::Unranked(mut unranked) = self.rest else {
            return self;
        };
        let Some(mut sightings) = unranked.ranking.sightings().cloned() else {
            let rest = Rest::Unranked(unranked);
            return Candidates {
                best: self.best,
                rest,
            };
        };
        for (tag, created) in dates {
            sightings = sightings.dated(&tag, created);
        }
        unranked.ranking = unranked.ranking.with_sightings(sightings);
        let best = unranked.ranking.select(unranked.tags.iter());
        let best = best.map_or(self.best, str::to_string);
        let rest = Rest::Unranked(unranked);
        Candidates { best, rest }
    }

    /// Ranks the candidates after the best (of the `most` best), on the blocking pool: the tags
    /// may number a million and the ordering is a tenant's.
    pub(super) async fn rest(self, most: usize) -> Result<Ranked, tokio::task::JoinError> {
        let best = self.best;
        match self.rest {
            Rest::Nothing => Ok(Ranked::default()),
            #[cfg(test)]
            Rest::Listed(mut allowed) => {
                // A tag written `!x` is one the guard refused: the walk ends before it.
                let cut = allowed.iter().position(|t| t.starts_with('!'));
                let refused = cut.map(|at| allowed.split_off(at).swap_remove(0)[1..].to_string());
                Ok(Ranked { allowed, refused })
            }
            Rest::Unranked(unranked) => {
                let rank = move || rank(&best, &unranked, most);
                tokio::task::spawn_blocking(rank).await
            }
        }
    }
}

/// The tags after `best` as `ranking` orders them (of the `most` best), cut at the first the
/// floor refuses.
fn rank(best: &str, unranked: &Unranked, most: usize) -> Ranked {
    let Unranked {
        tags,
        ranking,
        floor,
    } = unranked;
    let ranked = ranking.ranked(tags.iter(), most);
    let mut allowed: Vec<String> = ranked
        .into_iter()
        .map(|c| c.tag)
        .filter(|t| t != best)
        .collect();
    let Some(floor) = floor else {
        return Ranked {
            allowed,
            refused: None,
        };
    };
    let refused = allowed
        .iter()
        .position(|t| floor.refuses(t))
        .map(|cut| allowed.split_off(cut).swap_remove(0));
    // A floor still listed is no refused downgrade: the walk only stopped above it.
    let floor_listed = tags.iter().any(|t| t == floor.tag);
    Ranked {
        allowed,
        refused: refused.filter(|_| !floor_listed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ImagePolicySpec, ImagePolicyStatus, ImageRef};
    use crate::policy::PolicyChoice;

    fn numerical() -> Policy {
        let choice = PolicyChoice {
            numerical: Some(crate::policy::Order::Asc),
            ..Default::default()
        };
        Policy::new(&choice, None).unwrap()
    }

    fn floor_at(tag: &str) -> Floor {
        let spec: ImagePolicySpec = serde_json::from_value(serde_json::json!({
            "imageRepositoryRef": {"name": "r"},
            "policy": {"numerical": {"order": "asc"}},
            "downgrade": "Refuse",
        }))
        .unwrap();
        let status = ImagePolicyStatus {
            observed_generation: Some(1),
            latest_ref: Some(ImageRef {
                name: "img".into(),
                tag: tag.into(),
                digest: None,
            }),
            ..Default::default()
        };
        Floor::recorded(&spec, &status, None, &numerical()).unwrap()
    }

    async fn rest(tags: &[&str], floor: Option<&Floor>) -> Ranked {
        let list = TagList::new(tags).unwrap();
        let candidates = Candidates::ranked("9".into(), list, numerical(), floor);
        candidates.rest(MOST).await.unwrap()
    }

    const MOST: usize = 4;

    #[tokio::test]
    async fn the_rest_is_ranked_after_the_best_and_no_further_than_asked() {
        let ranked = rest(&["1", "9", "3", "7", "5", "2"], None).await;
        assert_eq!(ranked.allowed, ["7", "5", "3"]);
        assert_eq!(ranked.refused, None);
        let alone = Candidates::best("9".into()).rest(MOST).await.unwrap();
        assert_eq!(alone, Ranked::default());
    }

    #[tokio::test]
    async fn the_guard_cuts_the_rest_at_its_floor_and_refuses_only_when_the_floor_is_gone() {
        // The floor is listed: the walk stops at it, nothing is refused.
        let floor = floor_at("5");
        let ranked = rest(&["1", "9", "3", "7", "5"], Some(&floor)).await;
        assert_eq!(ranked.allowed, ["7", "5"]);
        assert_eq!(ranked.refused, None);
        // The floor is gone: the first candidate below it is a refused downgrade.
        let floor = floor_at("6");
        let ranked = rest(&["1", "9", "3", "7", "5"], Some(&floor)).await;
        assert_eq!(ranked.allowed, ["7"]);
        assert_eq!(ranked.refused.as_deref(), Some("5"));
    }
}
