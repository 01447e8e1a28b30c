//! The election: one pass over the tags, keeping the best candidate.
//!
//! Tie rule (docs/compatibility.md): ties go to the tag Flux's unfiltered election picks on the store's
//! descending byte order. For semver that is the first equal tag (the byte-greatest); for
//! numerical Flux keeps the last equal one (the byte-smallest); alphabetical values can only tie
//! after extraction, and then the byte-greatest tag wins. Because the rule looks at the tags
//! and not at their positions, any input order gives the same answer.

use super::numeric::Number;
use super::version::Version;
use super::{Constraints, Filter, InvalidPolicy, NotElected};
use serde::Serialize;
use std::cmp::Ordering;

/// Which way the alphabetical and numerical policies elect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Order {
    /// Elect the greatest.
    #[default]
    Asc,
    /// Elect the smallest.
    Desc,
}

/// The policy as written in `spec.policy`: the first one set of semver, alphabetical,
/// numerical is used.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyChoice {
    pub semver: Option<String>,
    pub alphabetical: Option<Order>,
    pub numerical: Option<Order>,
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
}

impl Policy {
    /// Builds the policy; errors say why the ImagePolicy can never elect (Stalled).
    pub fn new(choice: &PolicyChoice, filter: Option<&FilterSpec>) -> Result<Self, InvalidPolicy> {
        let rule = if let Some(range) = &choice.semver {
            Rule::SemVer(Constraints::parse(range)?)
        } else if let Some(order) = choice.alphabetical {
            Rule::Alphabetical(order)
        } else if let Some(order) = choice.numerical {
            Rule::Numerical(order)
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
        }
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
        let (best, passed) = match &self.rule {
            Rule::SemVer(range) => self.best_semver(range, tags),
            Rule::Alphabetical(order) if self.filter.is_none() => {
                best_alphabetical_unfiltered(*order, tags)
            }
            Rule::Alphabetical(order) => self.best_alphabetical(*order, tags),
            Rule::Numerical(order) => self.best_numerical(*order, tags),
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
        };
        let mut ranked: Vec<Candidate> = Vec::new();
        let passed = self.for_each_value(tags.iter().copied(), |tag, value| {
            let usable = match &self.rule {
                Rule::SemVer(range) => match Version::parse_tag(value) {
                    None => Err(&mut x.unparsable),
                    Some(v) if !range.matches(&v) => Err(&mut x.out_of_range),
                    Some(_) => Ok(()),
                },
                Rule::Numerical(_) if Number::parse(value).is_none() => Err(&mut x.unparsable),
                _ => Ok(()),
            };
            match usable {
                Ok(()) => ranked.push(Candidate {
                    tag: tag.to_string(),
                    value: value.to_string(),
                }),
                Err(counter) => *counter += 1,
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
        };
        by_value.then_with(|| self.tie(&a.tag, &b.tag))
    }

    /// Between two equally ranked tags, `Greater` means `a` wins.
    fn tie(&self, a: &str, b: &str) -> Ordering {
        let bytes = a.as_bytes().cmp(b.as_bytes());
        match self.rule {
            Rule::Numerical(_) => bytes.reverse(),
            Rule::SemVer(_) | Rule::Alphabetical(_) => bytes,
        }
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

    fn best_semver<'t>(
        &self,
        range: &Constraints,
        tags: impl Iterator<Item = &'t str>,
    ) -> (Option<&'t str>, usize) {
        let mut best: Option<OwnedVersion> = None;
        let mut class = BestClass::default();
        let passed = self.for_each_value(tags, |tag, value| {
            let Some(v) = Version::parse_tag(value) else {
                return;
            };
            if !range.matches(&v) {
                return;
            }
            match &mut best {
                None => {
                    best = Some(OwnedVersion::from(&v));
                    class.reset(value, tag);
                }
                Some(bv) => match v.precedence(&bv.as_version()) {
                    Ordering::Greater => {
                        bv.set(&v);
                        class.reset(value, tag);
                    }
                    Ordering::Equal => class.offer(value, tag),
                    Ordering::Less => {}
                },
            }
        });
        (class.winner(|a, b| self.tie(a, b)), passed)
    }

    fn best_alphabetical<'t>(
        &self,
        order: Order,
        tags: impl Iterator<Item = &'t str>,
    ) -> (Option<&'t str>, usize) {
        // Equal values are identical values here: the class holds one value and its
        // byte-smallest tag.
        let mut class = BestClass::default();
        let passed = self.for_each_value(tags, |tag, value| match class.value() {
            None => class.reset(value, tag),
            Some(bv) => match directed(order, value.as_bytes().cmp(bv.as_bytes())) {
                Ordering::Greater => class.reset(value, tag),
                Ordering::Equal => class.offer(value, tag),
                Ordering::Less => {}
            },
        });
        (class.winner(|a, b| self.tie(a, b)), passed)
    }

    fn best_numerical<'t>(
        &self,
        order: Order,
        tags: impl Iterator<Item = &'t str>,
    ) -> (Option<&'t str>, usize) {
        let mut scratch = Number::default();
        let mut best: Option<Number> = None;
        let mut class = BestClass::default();
        let passed = self.for_each_value(tags, |tag, value| {
            if !scratch.parse_into(value) {
                return;
            }
            let ord = best
                .as_ref()
                .map_or(Ordering::Greater, |bn| directed(order, scratch.cmp(bn)));
            match ord {
                Ordering::Greater => {
                    match &mut best {
                        Some(bn) => std::mem::swap(bn, &mut scratch),
                        None => best = Some(std::mem::take(&mut scratch)),
                    }
                    class.reset(value, tag);
                }
                Ordering::Equal => class.offer(value, tag),
                Ordering::Less => {}
            }
        });
        (class.winner(|a, b| self.tie(a, b)), passed)
    }
}

/// The candidates the policy ranks best so far.
///
/// Several tags extracting the *identical* value are one candidate, represented by the last
/// one Flux processes in the store's descending byte order: the byte-smallest (Flux's map
/// assignment; docs/compatibility.md). Only between *different* values ranked equal does the tie rule
/// decide. Members are only appended while electing (a class may be large: a million
/// `1.0.0+build.N` tags rank equal) and grouped once, at the end.
#[derive(Default)]
struct BestClass<'t> {
    /// (value, tag), ranked equal. Strings are reused across resets.
    members: Vec<(String, &'t str)>,
    len: usize,
}

impl<'t> BestClass<'t> {
    /// The first value of the class (all rank equal).
    fn value(&self) -> Option<&str> {
        (self.len > 0).then(|| self.members[0].0.as_str())
    }

    /// A strictly better candidate: the class starts again with it.
    fn reset(&mut self, value: &str, tag: &'t str) {
        self.len = 0;
        self.offer(value, tag);
    }

    /// A candidate ranked equal to the class.
    fn offer(&mut self, value: &str, tag: &'t str) {
        if let Some((v, t)) = self.members.get_mut(self.len) {
            v.clear();
            v.push_str(value);
            *t = tag;
        } else {
            self.members.push((value.to_string(), tag));
        }
        self.len += 1;
    }

    /// The byte-smallest tag of each value, then the one that wins the tie rule (`Greater`:
    /// the first argument wins).
    fn winner(mut self, tie: impl Fn(&str, &str) -> Ordering) -> Option<&'t str> {
        let members = &mut self.members[..self.len];
        if members.len() > 1 {
            members.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        }
        members
            .chunk_by(|a, b| a.0 == b.0)
            .map(|group| group[0].1)
            .reduce(|a, b| if tie(b, a) == Ordering::Greater { b } else { a })
    }
}

/// Without a filter the value is the tag and tags are distinct, so there are no ties.
/// Comparing an 8-byte big-endian prefix first settles almost every comparison without a
/// `memcmp` call; this loop is the whole cost of the alphabetical policy.
fn best_alphabetical_unfiltered<'t>(
    order: Order,
    mut tags: impl Iterator<Item = &'t str>,
) -> (Option<&'t str>, usize) {
    let Some(mut best) = tags.next() else {
        return (None, 0);
    };
    let mut best_prefix = prefix_key(best);
    let mut count = 1;
    // One loop per direction keeps the hot comparison a single predictable branch.
    match order {
        Order::Asc => {
            for tag in tags {
                count += 1;
                let prefix = prefix_key(tag);
                if prefix > best_prefix
                    || (prefix == best_prefix && tag.as_bytes() > best.as_bytes())
                {
                    (best, best_prefix) = (tag, prefix);
                }
            }
        }
        Order::Desc => {
            for tag in tags {
                count += 1;
                let prefix = prefix_key(tag);
                if prefix < best_prefix
                    || (prefix == best_prefix && tag.as_bytes() < best.as_bytes())
                {
                    (best, best_prefix) = (tag, prefix);
                }
            }
        }
    }
    (Some(best), count)
}

/// The first eight bytes as a big-endian number, zero-padded: orders like the bytes themselves
/// (tags contain no NUL bytes).
#[inline(always)]
pub(super) fn prefix_key(tag: &str) -> u64 {
    let b = tag.as_bytes();
    let n = b.len();
    if let Some(first8) = b.first_chunk::<8>() {
        return u64::from_be_bytes(*first8);
    }
    if n >= 4 {
        // Two overlapping 4-byte loads: bytes 0..4, and n-4..n shifted into place; the
        // overlapping bytes are equal, so OR-ing them is harmless.
        let hi = u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        let lo = u64::from(u32::from_be_bytes([b[n - 4], b[n - 3], b[n - 2], b[n - 1]]));
        return hi << 32 | lo << (8 * (8 - n));
    }
    b.iter()
        .enumerate()
        .fold(0, |key, (i, &byte)| key | u64::from(byte) << (56 - 8 * i))
}

fn directed(order: Order, ord: Ordering) -> Ordering {
    match order {
        Order::Asc => ord,
        Order::Desc => ord.reverse(),
    }
}

/// The best version so far, owning its prerelease so the scratch buffer can be reused.
struct OwnedVersion {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
}

impl OwnedVersion {
    fn from(v: &Version<'_>) -> Self {
        OwnedVersion {
            major: v.major,
            minor: v.minor,
            patch: v.patch,
            pre: v.pre.to_string(),
        }
    }

    fn set(&mut self, v: &Version<'_>) {
        (self.major, self.minor, self.patch) = (v.major, v.minor, v.patch);
        self.pre.clear();
        self.pre.push_str(v.pre);
    }

    fn as_version(&self) -> Version<'_> {
        Version {
            major: self.major,
            minor: self.minor,
            patch: self.patch,
            pre: &self.pre,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{prefix_key, FilterSpec, Policy, PolicyChoice};

    #[test]
    fn prefix_key_orders_like_bytes_for_every_length() {
        let tags = [
            "",
            "a",
            "ab",
            "abc",
            "abcd",
            "abcde",
            "abcdef",
            "abcdefg",
            "abcdefgh",
            "abcdefghi",
            "b",
            "ba",
            "z9",
            "1.2.3",
            "v1.2.30",
            "v1.2.4",
        ];
        for a in tags {
            for b in tags {
                let (ka, kb) = (prefix_key(a), prefix_key(b));
                if ka != kb {
                    assert_eq!(ka.cmp(&kb), a.cmp(b), "{a:?} vs {b:?}");
                }
                if a.len().max(b.len()) <= 8 {
                    assert_eq!(ka == kb, a == b, "{a:?} vs {b:?}");
                }
            }
        }
    }

    #[test]
    fn a_large_class_of_equal_rank_is_grouped_once() {
        // Build metadata does not count in semver precedence: every tag ranks equal. Searching
        // the class per tag was quadratic; grouping at the end is one sort.
        let tags: Vec<String> = (0..200_000).map(|i| format!("1.0.0+b{i:06}")).collect();
        let mut sorted = tags.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let semver = PolicyChoice {
            semver: Some(">=1.0.0".into()),
            ..Default::default()
        };
        let policy = Policy::new(&semver, None).unwrap();
        assert_eq!(
            policy.select_sorted(sorted.iter().map(String::as_str)),
            Ok("1.0.0+b199999")
        );
        // With an extract that groups them by tens: each group is represented by its
        // byte-smallest tag, and the tie between groups goes to the byte-greatest of those.
        let filter = FilterSpec {
            pattern: r"^(1\.0\.0\+b\d{5})\d$".into(),
            extract: "$1".into(),
        };
        let policy = Policy::new(&semver, Some(&filter)).unwrap();
        assert_eq!(
            policy.select(tags.iter().map(String::as_str)),
            Ok("1.0.0+b199990")
        );
    }
}
