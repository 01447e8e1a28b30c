//! The election: one pass over the tags, keeping the best candidate.
//!
//! Tie rule (docs/compatibility.md): ties go to the tag Flux's unfiltered election picks on the store's
//! descending byte order. For semver that is the first equal tag (the byte-greatest); for
//! numerical Flux keeps the last equal one (the byte-smallest); alphabetical values can only tie
//! after extraction, and then the byte-greatest tag wins. Because the rule looks at the tags
//! and not at their positions, any input order gives the same answer.

use super::best::{self, directed, EachValue, Order};
use super::newest::Sightings;
use super::numeric::Number;
use super::version::Version;
use super::{Constraints, Filter, InvalidPolicy, NotElected};
use serde::Serialize;
use std::cmp::Ordering;
use std::sync::Arc;

/// The policy as written in `spec.policy`: the first one set of semver, alphabetical,
/// numerical, newest is used.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyChoice {
    pub semver: Option<String>,
    pub alphabetical: Option<Order>,
    pub numerical: Option<Order>,
    /// `newest: {}`: the tag first seen most recently.
    pub newest: bool,
}

/// `spec.filterTags`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilterSpec {
    pub pattern: String,
    pub extract: String,
}

/// The policy kind in effect (the first one set of `spec.policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    SemVer,
    Alphabetical,
    Numerical,
    Newest,
}

/// A validated policy, ready to elect.
#[derive(Clone, Debug)]
pub struct Policy {
    rule: Rule,
    filter: Option<Filter>,
}

#[derive(Clone, Debug)]
enum Rule {
    SemVer(Constraints),
    Alphabetical(Order),
    Numerical(Order),
    /// Shared: a policy is cloned a few times per reconcile, the sightings number thousands.
    Newest(Arc<Sightings>),
}

/// A tag that satisfies the policy, with the value it was compared by.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Candidate {
    pub tag: String,
    /// The extracted value, or the tag itself without `extract`.
    pub value: String,
}

/// How an election went, for `select --explain`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// Tags given.
    pub read: usize,
    /// Tags the `filterTags` pattern did not match.
    pub filtered_out: usize,
    /// Values that are not versions (semver) or numbers (numerical).
    pub unparsable: usize,
    /// Versions outside the semver range.
    pub out_of_range: usize,
    /// Tags dropped because a byte-smaller tag extracted the identical value (Flux keeps
    /// one original tag per extracted value).
    pub collided: usize,
    /// Candidates left to elect from, one per distinct value.
    pub candidates: usize,
    /// The elected tag, if any.
    pub elected: Option<Candidate>,
    /// The next best candidates, best first.
    pub runners_up: Vec<Candidate>,
    /// Why nothing was elected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The first few tags counted in `unparsable` and `out_of_range`, for a reader to see
    /// which (at most [`EXAMPLES`] each).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unparsable_tags: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub out_of_range_tags: Vec<String>,
}

/// Tags of each skipped kind an explanation names.
pub const EXAMPLES: usize = 5;

impl Policy {
    /// Builds the policy; errors say why the ImagePolicy can never elect (Stalled).
    pub fn new(choice: &PolicyChoice, filter: Option<&FilterSpec>) -> Result<Self, InvalidPolicy> {
        let rule = if let Some(range) = &choice.semver {
            Rule::SemVer(Constraints::parse(range)?)
        } else if let Some(order) = choice.alphabetical {
            Rule::Alphabetical(order)
        } else if let Some(order) = choice.numerical {
            Rule::Numerical(order)
        } else if choice.newest {
            Rule::Newest(Arc::new(Sightings::unknown()))
        } else {
            return Err(InvalidPolicy::NoPolicy);
        };
        let filter = filter
            .map(|f| Filter::new(&f.pattern, &f.extract))
            .transpose()?;
        Ok(Policy { rule, filter })
    }

    /// Which of semver, alphabetical, numerical this policy elects by.
    pub fn kind(&self) -> PolicyKind {
        match self.rule {
            Rule::SemVer(_) => PolicyKind::SemVer,
            Rule::Alphabetical(_) => PolicyKind::Alphabetical,
            Rule::Numerical(_) => PolicyKind::Numerical,
            Rule::Newest(_) => PolicyKind::Newest,
        }
    }

    /// A newest policy ordering by `sightings`; any other policy as it is.
    pub fn with_sightings(&self, sightings: Sightings) -> Policy {
        let mut policy = self.clone();
        if let Rule::Newest(_) = policy.rule {
            policy.rule = Rule::Newest(Arc::new(sightings));
        }
        policy
    }

    /// The tags of `tags` this newest policy keeps whose creation time decides the election
    /// and is not known ([`Sightings::to_date`]); none for another policy.
    pub fn to_date<'t>(&self, tags: impl IntoIterator<Item = &'t str>) -> Vec<&'t str> {
        let Rule::Newest(sightings) = &self.rule else {
            return Vec::new();
        };
        let mut kept = Vec::new();
        self.for_each_value(tags.into_iter(), |tag, _| kept.push(tag));
        sightings.to_date(kept)
    }

    /// What a newest policy orders by.
    pub fn sightings(&self) -> Option<&Sightings> {
        match &self.rule {
            Rule::Newest(sightings) => Some(sightings),
            _ => None,
        }
    }

    /// The value `tag` is ranked by (after `filterTags`' `extract`), or `None` when the
    /// pattern does not keep it.
    pub fn value(&self, tag: &str) -> Option<String> {
        let mut value = None;
        self.for_each_value(std::iter::once(tag), |_, v| value = Some(v.to_string()));
        value
    }

    /// Whether `filterTags` is set, and whether it extracts a value from each tag.
    pub fn filters(&self) -> (bool, bool) {
        (
            self.filter.is_some(),
            self.filter.as_ref().is_some_and(Filter::extracts),
        )
    }

    /// Elects the latest tag.
    pub fn select<'t>(
        &self,
        tags: impl IntoIterator<Item = &'t str>,
    ) -> Result<&'t str, NotElected> {
        let tags = tags.into_iter();
        let tie = |a: &str, b: &str| self.tie(a, b);
        let (best, passed) = match &self.rule {
            Rule::SemVer(range) => best::semver(range, self.kept(tags), tie),
            Rule::Alphabetical(order) if self.filter.is_none() => {
                best::alphabetical_unfiltered(*order, tags)
            }
            Rule::Alphabetical(order) => best::alphabetical(*order, self.kept(tags), tie),
            Rule::Numerical(order) => best::numerical(*order, self.kept(tags), tie),
            Rule::Newest(sightings) => {
                let mut kept = Vec::new();
                let passed = self.kept(tags).each(|tag, _| kept.push(tag));
                (sightings.newest(kept), passed)
            }
        };
        match best {
            Some(tag) => Ok(tag),
            None if passed == 0 => Err(NotElected::EmptyList),
            None => Err(NotElected::NoMatch),
        }
    }

    /// Elects from tags in the store's order (descending bytes, as a store `TagList` holds
    /// them), with the same answer as [`Policy::select`]. Plain alphabetical then reads one tag
    /// instead of all: the store's order already is alphabetical order (asc elects the first
    /// tag, desc the last). Tags in any other order give an unspecified answer.
    pub fn select_sorted<'t, I>(&self, tags: I) -> Result<&'t str, NotElected>
    where
        I: IntoIterator<Item = &'t str>,
        I::IntoIter: DoubleEndedIterator + Clone,
    {
        let mut tags = tags.into_iter();
        debug_assert!(
            {
                let mut rest = tags.clone();
                let mut ordered = true;
                if let Some(mut previous) = rest.next() {
                    for tag in rest {
                        ordered &= previous.as_bytes() >= tag.as_bytes();
                        previous = tag;
                    }
                }
                ordered
            },
            "select_sorted needs tags in descending byte order"
        );
        match (&self.rule, &self.filter) {
            (Rule::Alphabetical(Order::Asc), None) => tags.next().ok_or(NotElected::EmptyList),
            (Rule::Alphabetical(Order::Desc), None) => {
                tags.next_back().ok_or(NotElected::EmptyList)
            }
            _ => self.select(tags),
        }
    }

    /// Elects like [`Policy::select`], and reports what happened to every tag plus the
    /// `runners_up` next best candidates.
    pub fn explain<'t>(
        &self,
        tags: impl IntoIterator<Item = &'t str>,
        runners_up: usize,
    ) -> Explanation {
        let tags: Vec<&str> = tags.into_iter().collect();
        let mut x = Explanation {
            read: tags.len(),
            filtered_out: 0,
            unparsable: 0,
            out_of_range: 0,
            collided: 0,
            candidates: 0,
            elected: None,
            runners_up: Vec::new(),
            error: None,
            unparsable_tags: Vec::new(),
            out_of_range_tags: Vec::new(),
        };
        let mut ranked: Vec<Candidate> = Vec::new();
        let passed = self.for_each_value(tags.iter().copied(), |tag, value| {
            let usable = match &self.rule {
                Rule::SemVer(range) => match Version::parse_tag(value) {
                    None => Err((&mut x.unparsable, &mut x.unparsable_tags)),
                    Some(v) if !range.matches(&v) => {
                        Err((&mut x.out_of_range, &mut x.out_of_range_tags))
                    }
                    Some(_) => Ok(()),
                },
                Rule::Numerical(_) if Number::parse(value).is_none() => {
                    Err((&mut x.unparsable, &mut x.unparsable_tags))
                }
                _ => Ok(()),
            };
            // Newest ranks tags, not values: none collide.
            let value = match &self.rule {
                Rule::Newest(_) => tag,
                _ => value,
            };
            match usable {
                Ok(()) => ranked.push(Candidate {
                    tag: tag.to_string(),
                    value: value.to_string(),
                }),
                Err((counter, examples)) => {
                    *counter += 1;
                    if examples.len() < EXAMPLES {
                        examples.push(tag.to_string());
                    }
                }
            }
        });
        x.filtered_out = tags.len() - passed;
        // Identical values are one candidate: the byte-smallest tag (see `BestClass`).
        ranked.sort_by(|a, b| a.value.cmp(&b.value).then_with(|| a.tag.cmp(&b.tag)));
        let before = ranked.len();
        ranked.dedup_by(|later, first| later.value == first.value);
        x.collided = before - ranked.len();
        x.candidates = ranked.len();
        ranked.sort_by(|a, b| self.rank(b, a));
        let mut ranked = ranked.into_iter();
        x.elected = ranked.next();
        x.runners_up = ranked.take(runners_up).collect();
        if x.elected.is_none() {
            let why = if passed == 0 {
                NotElected::EmptyList
            } else {
                NotElected::NoMatch
            };
            x.error = Some(why.to_string());
        }
        x
    }

    /// The `limit` best candidates, best first (the first is [`Policy::select`]'s): the order a
    /// gated election walks.
    pub fn ranked<'t>(
        &self,
        tags: impl IntoIterator<Item = &'t str>,
        limit: usize,
    ) -> Vec<Candidate> {
        let x = self.explain(tags, limit.saturating_sub(1));
        x.elected
            .into_iter()
            .chain(x.runners_up)
            .take(limit)
            .collect()
    }

    /// Whether `a` ranks below `b` (tie rule included): `None` when they are not two
    /// candidates (one is filtered out, outside the range or not a number, or both extract the
    /// same value), which is never a downgrade.
    pub fn ranks_below(&self, a: &str, b: &str) -> Option<bool> {
        match self.ranked([a, b], 2).as_slice() {
            [first, second] => Some(first.tag == b && second.tag == a),
            _ => None,
        }
    }

    /// Orders two candidates, greater = better, tie rule included.
    fn rank(&self, a: &Candidate, b: &Candidate) -> Ordering {
        let by_value = match &self.rule {
            Rule::SemVer(_) => match (Version::parse_tag(&a.value), Version::parse_tag(&b.value)) {
                (Some(x), Some(y)) => x.precedence(&y),
                _ => Ordering::Equal,
            },
            Rule::Alphabetical(order) => {
                directed(*order, a.value.as_bytes().cmp(b.value.as_bytes()))
            }
            Rule::Numerical(order) => directed(
                *order,
                Number::parse(&a.value).cmp(&Number::parse(&b.value)),
            ),
            Rule::Newest(sightings) => sightings.rank(&a.tag, &b.tag),
        };
        by_value.then_with(|| self.tie(&a.tag, &b.tag))
    }

    /// Between two equally ranked tags, `Greater` means `a` wins.
    fn tie(&self, a: &str, b: &str) -> Ordering {
        let bytes = a.as_bytes().cmp(b.as_bytes());
        match self.rule {
            Rule::Numerical(_) => bytes.reverse(),
            Rule::SemVer(_) | Rule::Alphabetical(_) | Rule::Newest(_) => bytes,
        }
    }

    /// The tags the filter keeps, for a pass of [`best`].
    fn kept<'p, 't, I: Iterator<Item = &'t str>>(&'p self, tags: I) -> Kept<'p, I> {
        Kept { policy: self, tags }
    }

    /// Calls `f(tag, value)` for every tag the filter keeps; returns how many it kept.
    #[inline(always)]
    fn for_each_value<'t>(
        &self,
        tags: impl Iterator<Item = &'t str>,
        mut f: impl FnMut(&'t str, &str),
    ) -> usize {
        match &self.filter {
            None => {
                let mut kept = 0;
                for tag in tags {
                    kept += 1;
                    f(tag, tag);
                }
                kept
            }
            Some(filter) => {
                let mut scratch = filter.scratch();
                let mut kept = 0;
                for tag in tags {
                    if let Some(value) = filter.apply(tag, &mut scratch) {
                        kept += 1;
                        f(tag, value);
                    }
                }
                kept
            }
        }
    }
}

/// A policy's kept tags, as [`best`] walks them.
struct Kept<'p, I> {
    policy: &'p Policy,
    tags: I,
}

impl<'t, I: Iterator<Item = &'t str>> EachValue<'t> for Kept<'_, I> {
    #[inline(always)]
    fn each(self, f: impl FnMut(&'t str, &str)) -> usize {
        self.policy.for_each_value(self.tags, f)
    }
}

#[cfg(test)]
mod tests;
