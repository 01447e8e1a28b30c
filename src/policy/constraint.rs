//! Masterminds semver v3 constraints, grammar and semantics (docs/policy.md).
//!
//! Deliberately not the `semver` crate's `VersionReq`: Cargo's rules differ (bare versions
//! mean caret, no `||`, hyphen ranges or `x` wildcards, per-comparator prerelease matching).
//! This is a port of the behaviour, not the code: hyphen ranges are rewritten first, the string
//! is split on `||`, each group is split into comparators and each comparator keeps the
//! "dirty" flags that give wildcards their meaning.

use super::error::MAX_RANGE_BYTES;
use super::version::{compare_prerelease, scan_identifiers, Version};
use super::InvalidPolicy;
use regex::Regex;
use std::cmp::Ordering;
use std::sync::LazyLock;

/// A parsed constraint: OR-ed groups of AND-ed comparators.
#[derive(Clone, Debug)]
pub struct Constraints {
    groups: Vec<Group>,
}

#[derive(Clone, Debug)]
struct Group {
    comparators: Vec<Comparator>,
    /// A prerelease candidate only matches a group that itself mentions a prerelease.
    admits_prerelease: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    TildeOrEqual,
    NotEqual,
    Greater,
    Less,
    GreaterEqual,
    LessEqual,
    Tilde,
    Caret,
}

#[derive(Clone, Debug)]
struct Comparator {
    op: Op,
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    dirty: bool,
    minor_dirty: bool,
    patch_dirty: bool,
}

/// Operator spellings in the order Masterminds' regex alternation tries them: the first one
/// after which a valid version follows wins (so `=>` is tried as `=` + `>1` first, and fails).
const OPERATORS: [(&str, Op); 12] = [
    ("=", Op::TildeOrEqual),
    ("", Op::TildeOrEqual),
    ("!=", Op::NotEqual),
    (">", Op::Greater),
    ("<", Op::Less),
    (">=", Op::GreaterEqual),
    ("=>", Op::GreaterEqual),
    ("<=", Op::LessEqual),
    ("=<", Op::LessEqual),
    ("~", Op::Tilde),
    ("~>", Op::Tilde),
    ("^", Op::Caret),
];

/// `cvRegex` of Masterminds, with Go's ASCII `\s`.
const CV: &str = r"v?([0-9|xX*]+)(\.[0-9|xX*]+)?(\.[0-9|xX*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";

static HYPHEN_RANGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"[\t\n\x0C\r ]*({CV})[\t\n\x0C\r ]+-[\t\n\x0C\r ]+({CV})[\t\n\x0C\r ]*"
    ))
    .expect("the hyphen-range pattern compiles")
});

impl Constraints {
    /// Parses a constraint; errors carry Masterminds' exact texts.
    pub fn parse(text: &str) -> Result<Self, InvalidPolicy> {
        if text.len() > MAX_RANGE_BYTES {
            return Err(InvalidPolicy::RangeTooLong(text.len()));
        }
        let rewritten = rewrite_hyphen_ranges(text);
        let groups = rewritten
            .split("||")
            .map(|group| {
                let atoms = split_group(group)
                    .ok_or_else(|| InvalidPolicy::ImproperConstraint(group.to_string()))?;
                let comparators = atoms
                    .into_iter()
                    .map(parse_comparator)
                    .collect::<Result<Vec<_>, _>>()?;
                let admits_prerelease = comparators.iter().any(|c| !c.pre.is_empty());
                Ok(Group {
                    comparators,
                    admits_prerelease,
                })
            })
            .collect::<Result<Vec<_>, InvalidPolicy>>()?;
        Ok(Constraints { groups })
    }

    /// Whether `v` satisfies any group.
    pub fn matches(&self, v: &Version<'_>) -> bool {
        self.groups.iter().any(|g| {
            (v.pre.is_empty() || g.admits_prerelease) && g.comparators.iter().all(|c| c.admits(v))
        })
    }
}

/// `A - B` becomes `>= A, <= B ` (each matched text replaced at its first occurrence, as
/// upstream does).
fn rewrite_hyphen_ranges(text: &str) -> String {
    if !text.contains('-') {
        return text.to_string();
    }
    let mut out = text.to_string();
    for caps in HYPHEN_RANGE.captures_iter(text) {
        let replacement = format!(">= {}, <= {} ", &caps[1], &caps[11]);
        out = out.replacen(&caps[0], &replacement, 1);
    }
    out
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0C' | b'\r')
}

fn is_segment(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'x' | b'X' | b'*' | b'|')
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while b.get(i).copied().is_some_and(is_space) {
        i += 1;
    }
    i
}

/// Scans the version part of a comparator (`cvRegex`) from `start`; returns its end.
fn scan_version(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + usize::from(b.get(start) == Some(&b'v'));
    let segment = |i: &mut usize| -> bool {
        let s = *i;
        while b.get(*i).copied().is_some_and(is_segment) {
            *i += 1;
        }
        *i > s
    };
    if !segment(&mut i) {
        return None;
    }
    for _ in 0..2 {
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !segment(&mut i) {
                return None;
            }
        }
    }
    if b.get(i) == Some(&b'-') {
        i = scan_identifiers(b, i + 1)?;
    }
    if b.get(i) == Some(&b'+') {
        i = scan_identifiers(b, i + 1)?;
    }
    Some(i)
}

/// The end of the comparator starting at `start` (after optional space), trying operators in
/// alternation order.
fn comparator_end(b: &[u8], start: usize) -> Option<usize> {
    let i = skip_space(b, start);
    OPERATORS.iter().find_map(|(spelling, _)| {
        b[i..]
            .starts_with(spelling.as_bytes())
            .then(|| scan_version(b, skip_space(b, i + spelling.len())))
            .flatten()
    })
}

/// Splits an OR group into comparators separated by whitespace or one comma; `None` when the
/// group is not a valid sequence (Masterminds' `validConstraintRegex`).
fn split_group(group: &str) -> Option<Vec<&str>> {
    let b = group.as_bytes();
    let first = comparator_end(b, 0)?;
    let mut atoms = vec![&group[..first]];
    let mut rest = first;
    while rest < b.len() {
        let q = skip_space(b, rest);
        if q == b.len() {
            break;
        }
        let start = if b[q] == b',' {
            q + 1
        } else if q > rest {
            q
        } else {
            return None; // two comparators with nothing between them
        };
        let end = comparator_end(b, start)?;
        atoms.push(&group[start..end]);
        rest = end;
    }
    Some(atoms)
}

/// Why a comparator's version that fits the constraint grammar is still not a version: the
/// second line of Flux's vague `constraint parser error`.
fn why_not_a_version(body: &str) -> &'static str {
    let core_end = body.find(['-', '+']).unwrap_or(body.len());
    let numbers = || body[..core_end].split('.').filter(|p| !is_wild(p));
    if numbers().any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return "major, minor and patch are each a number, or x, X or * for any";
    }
    if numbers().any(|p| p.parse::<u64>().is_err()) {
        return "a version number is beyond 18446744073709551615";
    }
    let pre = body[core_end..].strip_prefix('-').unwrap_or("");
    let pre = pre.split('+').next().unwrap_or("");
    if pre
        .split('.')
        .any(|id| id.len() > 1 && id.starts_with('0') && id.bytes().all(|b| b.is_ascii_digit()))
    {
        return "a numeric pre-release identifier has no leading zero";
    }
    "not a semantic version"
}

fn is_wild(segment: &str) -> bool {
    matches!(segment, "x" | "X" | "*")
}

/// Parses one comparator, e.g. `>= 1.2.x`.
fn parse_comparator(atom: &str) -> Result<Comparator, InvalidPolicy> {
    let text = &atom[skip_space(atom.as_bytes(), 0)..];
    let (op, version) = OPERATORS
        .iter()
        .find_map(|&(spelling, op)| {
            let rest = text.strip_prefix(spelling)?;
            let rest = &rest[skip_space(rest.as_bytes(), 0)..];
            (scan_version(rest.as_bytes(), 0)? == rest.len()).then_some((op, rest))
        })
        .ok_or_else(|| InvalidPolicy::ImproperConstraint(atom.to_string()))?;

    // Split into the regex's groups: major, `.minor`, `.patch`, `-pre` (metadata dropped).
    let body = version.strip_prefix('v').unwrap_or(version);
    let core_end = body.find(['-', '+']).unwrap_or(body.len());
    let pre = body[core_end..]
        .strip_prefix('-')
        .map(|p| format!("-{}", p.split('+').next().unwrap_or("")))
        .unwrap_or_default();
    let mut parts = body[..core_end].splitn(3, '.');
    let major = parts.next().unwrap_or("");
    let minor = parts.next();
    let patch = parts.next();

    let (coerced, dirty, minor_dirty, patch_dirty) = if is_wild(major) {
        (format!("0.0.0{pre}"), true, false, false)
    } else if minor.is_none_or(is_wild) {
        (format!("{major}.0.0{pre}"), true, true, false)
    } else if patch.is_none_or(is_wild) {
        (
            format!("{major}.{}.0{pre}", minor.unwrap_or("")),
            true,
            false,
            true,
        )
    } else {
        (version.to_string(), false, false, false)
    };
    let con = Version::parse_loose(&coerced).ok_or_else(|| InvalidPolicy::ConstraintParser {
        comparator: text.to_string(),
        why: why_not_a_version(body),
    })?;
    Ok(Comparator {
        op,
        major: con.major,
        minor: con.minor,
        patch: con.patch,
        pre: con.pre.to_string(),
        dirty,
        minor_dirty,
        patch_dirty,
    })
}

impl Comparator {
    fn version(&self) -> Version<'_> {
        Version {
            major: self.major,
            minor: self.minor,
            patch: self.patch,
            pre: &self.pre,
        }
    }

    /// One comparator's test; the group already decided whether prereleases may pass.
    fn admits(&self, v: &Version<'_>) -> bool {
        let cmp = v.precedence(&self.version());
        match self.op {
            Op::TildeOrEqual if self.dirty => self.tilde(v, cmp),
            Op::TildeOrEqual => cmp == Ordering::Equal,
            Op::NotEqual => self.not_equal(v, cmp),
            Op::Greater => self.greater(v, cmp),
            Op::Less => cmp == Ordering::Less,
            Op::GreaterEqual => cmp != Ordering::Less,
            Op::LessEqual => self.less_equal(v, cmp),
            Op::Tilde => self.tilde(v, cmp),
            Op::Caret => self.caret(v, cmp),
        }
    }

    fn not_equal(&self, v: &Version<'_>, cmp: Ordering) -> bool {
        if self.dirty {
            if self.major != v.major {
                return true;
            }
            if self.minor != v.minor && !self.minor_dirty {
                return true;
            } else if self.minor_dirty {
                return false;
            } else if self.patch != v.patch && !self.patch_dirty {
                return true;
            } else if self.patch_dirty {
                return (!v.pre.is_empty() || !self.pre.is_empty())
                    && compare_prerelease(v.pre, &self.pre) != Ordering::Equal;
            }
        }
        cmp != Ordering::Equal
    }

    fn greater(&self, v: &Version<'_>, cmp: Ordering) -> bool {
        if !self.dirty {
            return cmp == Ordering::Greater;
        }
        match v.major.cmp(&self.major) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal if self.minor_dirty => false, // `>1` needs 2 or higher
            Ordering::Equal if self.patch_dirty => v.minor > self.minor, // `>1.2` needs 1.3
            Ordering::Equal => cmp == Ordering::Greater,
        }
    }

    fn less_equal(&self, v: &Version<'_>, cmp: Ordering) -> bool {
        if !self.dirty {
            return cmp != Ordering::Greater;
        }
        !(v.major > self.major
            || (v.major == self.major && v.minor > self.minor && !self.minor_dirty))
    }

    fn tilde(&self, v: &Version<'_>, cmp: Ordering) -> bool {
        if cmp == Ordering::Less {
            return false;
        }
        // `~0.0.0` admits everything.
        if self.major == 0
            && self.minor == 0
            && self.patch == 0
            && !self.minor_dirty
            && !self.patch_dirty
        {
            return true;
        }
        v.major == self.major && (v.minor == self.minor || self.minor_dirty)
    }

    fn caret(&self, v: &Version<'_>, cmp: Ordering) -> bool {
        if cmp == Ordering::Less {
            return false;
        }
        if self.major > 0 || self.minor_dirty {
            return v.major == self.major;
        }
        if v.major > 0 {
            return false;
        }
        if self.minor > 0 || self.patch_dirty {
            return v.minor == self.minor;
        }
        if v.minor > 0 {
            return false;
        }
        v.patch == self.patch
    }
}

#[cfg(test)]
mod tests;
