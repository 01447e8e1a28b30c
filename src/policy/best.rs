//! One pass over the tags per rule, keeping the best candidate and the class of candidates
//! ranked equal with it (the tie rule of [`super::select`] then picks one).

use super::numeric::Number;
use super::version::Version;
use super::Constraints;
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

/// The tags the filter keeps, each with the value it extracted: what a pass walks.
pub(super) trait EachValue<'t> {
    /// Calls `f(tag, value)` for every kept tag; returns how many were kept.
    fn each(self, f: impl FnMut(&'t str, &str)) -> usize;
}

/// The best semver tag in `range`, and how many tags passed the filter.
pub(super) fn semver<'t>(
    range: &Constraints,
    values: impl EachValue<'t>,
    tie: impl Fn(&str, &str) -> Ordering,
) -> (Option<&'t str>, usize) {
    let mut best: Option<OwnedVersion> = None;
    let mut class = BestClass::default();
    let passed = values.each(|tag, value| {
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
    (class.winner(tie), passed)
}

/// The best value by bytes in `order` (a filtered list: values are extracted).
pub(super) fn alphabetical<'t>(
    order: Order,
    values: impl EachValue<'t>,
    tie: impl Fn(&str, &str) -> Ordering,
) -> (Option<&'t str>, usize) {
    // Equal values are identical values here: the class holds one value and its
    // byte-smallest tag.
    let mut class = BestClass::default();
    let passed = values.each(|tag, value| match class.value() {
        None => class.reset(value, tag),
        Some(bv) => match directed(order, value.as_bytes().cmp(bv.as_bytes())) {
            Ordering::Greater => class.reset(value, tag),
            Ordering::Equal => class.offer(value, tag),
            Ordering::Less => {}
        },
    });
    (class.winner(tie), passed)
}

/// The best number in `order`.
pub(super) fn numerical<'t>(
    order: Order,
    values: impl EachValue<'t>,
    tie: impl Fn(&str, &str) -> Ordering,
) -> (Option<&'t str>, usize) {
    let mut scratch = Number::default();
    let mut best: Option<Number> = None;
    let mut class = BestClass::default();
    let passed = values.each(|tag, value| {
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
    (class.winner(tie), passed)
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
pub(super) fn alphabetical_unfiltered<'t>(
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

pub(super) fn directed(order: Order, ord: Ordering) -> Ordering {
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
