//! A matcher for the commonest shape of tag pattern: `^`, then literals and runs of an ASCII
//! class, some inside capture groups, optionally ending in `$`; e.g. `^main-[a-f0-9]+-(?P<ts>[0-9]+)$`.
//!
//! When every variable-length run is followed by something that cannot start inside it (the
//! `-` after `[a-f0-9]+`), there is exactly one way to match: take each run greedily. That
//! walk needs no automaton state and no backtracking, a table lookup per byte, and gives the
//! same match and the same groups as the regex crate's leftmost-first search. Patterns of any
//! other shape return `None` from [`Linear::new`] and use the general engines.

use regex_syntax::hir::{Class, Hir, HirKind, Look};

/// A compiled straight-line pattern.
#[derive(Clone, Debug)]
pub(super) struct Linear {
    steps: Vec<Step>,
    /// Ends in `$`: the walk must consume the whole tag.
    to_end: bool,
    /// Capture slots (2 per group, group 0 included).
    slots: usize,
    /// A class had non-ASCII members (`\d`, `\w` are Unicode-aware in Rust, ASCII in Go):
    /// the tables hold its ASCII part, exact for ASCII tags, which registry tags always are.
    /// Other tags take the general path.
    ascii_tags_only: bool,
}

#[derive(Clone, Debug)]
enum Step {
    Literal(Box<[u8]>),
    /// A greedy run of `min..=max` bytes of the set.
    Run {
        set: Box<[bool; 256]>,
        min: u32,
        max: u32,
    },
    Open(usize),
    Close(usize),
}

impl Linear {
    /// Compiles `pattern` if it has the straight-line shape, else `None`.
    pub(super) fn new(pattern: &str) -> Option<Self> {
        let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
        let mut items = Vec::new();
        let mut truncated = false;
        flatten(&hir, &mut items, &mut truncated)?;
        // `^` first, `$` (end of text, as Go's `$` without `(?m)`) only last, nothing else.
        let Some(Item::Start) = items.first() else {
            return None;
        };
        items.remove(0);
        let to_end = matches!(items.last(), Some(Item::End));
        if to_end {
            items.pop();
        }
        let steps = items
            .into_iter()
            .map(|item| match item {
                Item::Step(step) => Some(step),
                Item::Start | Item::End => None,
            })
            .collect::<Option<Vec<_>>>()?;
        if !deterministic(&steps) {
            return None;
        }
        let slots = 2 * (hir.properties().explicit_captures_len() + 1);
        Some(Linear {
            steps,
            to_end,
            slots,
            ascii_tags_only: truncated,
        })
    }

    /// Whether [`Linear::captures`] gives the exact answer for `tag`.
    #[inline(always)]
    pub(super) fn applies_to(&self, tag: &str) -> bool {
        !self.ascii_tags_only || tag.is_ascii()
    }

    /// How many slots [`Linear::captures`] fills.
    pub(super) fn slots(&self) -> usize {
        self.slots
    }

    /// Matches `tag` from its start; on success `slots[2i]..slots[2i + 1]` is group `i`
    /// (every group takes part in a match of this shape).
    #[inline(always)]
    pub(super) fn captures(&self, tag: &[u8], slots: &mut [usize]) -> bool {
        let mut pos = 0;
        for step in &self.steps {
            match step {
                Step::Literal(lit) => {
                    if !tag[pos..].starts_with(lit) {
                        return false;
                    }
                    pos += lit.len();
                }
                Step::Run { set, min, max } => {
                    let start = pos;
                    let limit = tag.len().min(start.saturating_add(*max as usize));
                    while pos < limit && set[usize::from(tag[pos])] {
                        pos += 1;
                    }
                    if pos - start < *min as usize {
                        return false;
                    }
                }
                Step::Open(group) => slots[2 * group] = pos,
                Step::Close(group) => slots[2 * group + 1] = pos,
            }
        }
        if self.to_end && pos != tag.len() {
            return false;
        }
        (slots[0], slots[1]) = (0, pos);
        true
    }
}

enum Item {
    Start,
    End,
    Step(Step),
}

/// Flattens concatenations and groups into steps; `None` for anything not straight-line.
fn flatten(hir: &Hir, out: &mut Vec<Item>, truncated: &mut bool) -> Option<()> {
    match hir.kind() {
        HirKind::Empty => {}
        HirKind::Literal(lit) => out.push(Item::Step(Step::Literal(lit.0.clone()))),
        HirKind::Class(class) => {
            out.push(Item::Step(run(ascii_set(class, truncated), 1, Some(1))?))
        }
        HirKind::Look(Look::Start) => out.push(Item::Start),
        HirKind::Look(Look::End) => out.push(Item::End),
        HirKind::Look(_) => return None,
        HirKind::Repetition(rep) => {
            // A lazy run could stop early; with a fixed count it cannot.
            if !rep.greedy && rep.max != Some(rep.min) {
                return None;
            }
            let set = match rep.sub.kind() {
                HirKind::Class(class) => ascii_set(class, truncated),
                HirKind::Literal(lit) if lit.0.len() == 1 && lit.0[0].is_ascii() => {
                    let mut set = Box::new([false; 256]);
                    set[usize::from(lit.0[0])] = true;
                    set
                }
                _ => return None,
            };
            out.push(Item::Step(run(set, rep.min, rep.max)?));
        }
        HirKind::Capture(cap) => {
            let index = usize::try_from(cap.index).ok()?;
            out.push(Item::Step(Step::Open(index)));
            flatten(&cap.sub, out, truncated)?;
            out.push(Item::Step(Step::Close(index)));
        }
        HirKind::Concat(subs) => {
            for sub in subs {
                flatten(sub, out, truncated)?;
            }
        }
        HirKind::Alternation(_) => return None,
    }
    Some(())
}

fn run(set: Box<[bool; 256]>, min: u32, max: Option<u32>) -> Option<Step> {
    Some(Step::Run {
        set,
        min,
        max: max.unwrap_or(u32::MAX),
    })
}

/// The ASCII part of the class as a byte table; `truncated` is set when it has more.
fn ascii_set(class: &Class, truncated: &mut bool) -> Box<[bool; 256]> {
    let mut set = Box::new([false; 256]);
    let mut mark = |lo: u32, hi: u32| {
        *truncated |= hi > 0x7f;
        for b in lo..=hi.min(0x7f) {
            set[b as usize] = true;
        }
    };
    match class {
        Class::Unicode(c) => c
            .iter()
            .for_each(|r| mark(u32::from(r.start()), u32::from(r.end()))),
        Class::Bytes(c) => c
            .iter()
            .for_each(|r| mark(u32::from(r.start()), u32::from(r.end()))),
    }
    set
}

/// Whether the greedy walk is the only possible match: every variable-length run must be
/// followed by the end, a literal or a non-empty run whose first byte it cannot take.
fn deterministic(steps: &[Step]) -> bool {
    for (i, step) in steps.iter().enumerate() {
        let Step::Run { set, min, max } = step else {
            continue;
        };
        if min == max {
            continue;
        }
        let next = steps[i + 1..]
            .iter()
            .find(|s| !matches!(s, Step::Open(_) | Step::Close(_)));
        let ok = match next {
            None => true,
            Some(Step::Literal(lit)) => !set[usize::from(lit[0])],
            Some(Step::Run {
                set: next_set,
                min: next_min,
                ..
            }) => *next_min > 0 && !(0..256).any(|b| set[b] && next_set[b]),
            Some(Step::Open(_) | Step::Close(_)) => unreachable!("skipped above"),
        };
        if !ok {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::Linear;
    use proptest::prelude::*;
    use regex::Regex;

    fn shapes() -> Vec<&'static str> {
        vec![
            r"^main-[a-f0-9]+-(?P<ts>[0-9]+)$",
            r"^main-[a-f0-9]+-(?P<ts>[0-9]+)",
            r"^v?(?P<v>[0-9]+)\.([0-9]+)$",
            r"^(a+)-(b{2,3})c?$",
            r"^[a-c]{2}(x+)$",
            r"^(?i)main-([0-9]{1,3})$",
            r"^a+?b$",
            r"^(a{2})b*$",
            r"^(\d+)-(\w+)$",
            r"^x(.+)$",
        ]
    }

    #[test]
    fn accepts_only_unambiguous_start_anchored_shapes() {
        for p in [
            r"^main-[a-f0-9]+-(?P<ts>[0-9]+)$",
            r"^(?P<ts>[0-9]+)",
            r"^release-(?P<n>[0-9]{1,4})\.x$",
            r"^[a-c]{2}(x+)$",
            r"^(a{2})b*$",
            r"^main-(\d+)$",
        ] {
            assert!(Linear::new(p).is_some(), "{p}");
        }
        for p in [
            r"main-[0-9]+",      // unanchored
            r"^(a+)(a*)$",       // a run followed by a run that may be empty
            r"^([a-z0-9]+)-?9$", // optional step after a run
            r"^[a-f0-9]+f$",     // the literal can start inside the run
            r"^(dev|prod)-\d+$", // alternation
            r"^[a-z]+\w$",       // `\w` takes what the run takes
            r"^a+?b$",           // lazy run
            r"(?m)^a$",          // line anchors
            r"^a\b",             // word boundary
            r"^(?:ab)+$",        // repeated group
        ] {
            assert!(Linear::new(p).is_none(), "{p}");
        }
    }

    proptest! {
        /// Same match and same groups as the regex crate, on tags drawn from the bytes the
        /// patterns care about.
        #[test]
        fn agrees_with_the_regex_crate(tag in "[-abcfx0-9.vAMIN main٣é_]{0,14}") {
            for pattern in shapes() {
                let Some(linear) = Linear::new(pattern) else { continue };
                if !linear.applies_to(&tag) { continue }
                let regex = Regex::new(pattern).unwrap();
                let mut slots = vec![usize::MAX; linear.slots()];
                let ours = linear.captures(tag.as_bytes(), &mut slots).then(|| {
                    slots.chunks(2).map(|s| Some((s[0], s[1]))).collect::<Vec<_>>()
                });
                let theirs = regex.captures(&tag).map(|c| {
                    c.iter().map(|m| m.map(|m| (m.start(), m.end()))).collect::<Vec<_>>()
                });
                prop_assert_eq!(ours, theirs, "pattern {}", pattern);
            }
        }
    }
}
