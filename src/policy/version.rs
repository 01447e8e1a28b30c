//! Versions as Flux reads them from tags, and semver precedence (docs/policy.md).
//!
//! Parsing mirrors fluxcd/pkg `ParseVersion` + Masterminds `NewVersion` (coerce mode): the tag
//! must have at least two dots, an optional lower-case `v`, one to three numeric parts
//! (leading zeros allowed, uint64), an optional prerelease and optional build metadata.
//! Parsing borrows from the tag and does not allocate: elections parse every tag.

use std::cmp::Ordering;

/// A parsed version; the prerelease borrows from the parsed text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version<'a> {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    /// Dot-separated prerelease identifiers without the leading `-`; empty for a release.
    pub pre: &'a str,
}

impl<'a> Version<'a> {
    /// Parses a tag the way Flux does for the semver policy; `None` means "skip this tag".
    pub fn parse_tag(tag: &'a str) -> Option<Self> {
        // `SplitN(tag, ".", 3)` must give three parts: at least two dots anywhere.
        let mut dots = tag.bytes().filter(|&b| b == b'.');
        if dots.next().is_none() || dots.next().is_none() {
            return None;
        }
        Self::parse_loose(tag)
    }

    /// Masterminds' loose (coercing) parse: `v?N(.N)?(.N)?(-pre)?(+meta)?`, missing parts 0.
    pub fn parse_loose(text: &'a str) -> Option<Self> {
        let b = text.as_bytes();
        let mut i = usize::from(b.first() == Some(&b'v'));
        let major = parse_u64(b, &mut i)?;
        let mut minor = 0;
        let mut patch = 0;
        if b.get(i) == Some(&b'.') {
            i += 1;
            minor = parse_u64(b, &mut i)?;
            if b.get(i) == Some(&b'.') {
                i += 1;
                patch = parse_u64(b, &mut i)?;
            }
        }
        let mut pre = "";
        if b.get(i) == Some(&b'-') {
            let start = i + 1;
            i = scan_identifiers(b, start)?;
            pre = &text[start..i];
            if !valid_prerelease(pre) {
                return None;
            }
        }
        if b.get(i) == Some(&b'+') {
            i = scan_identifiers(b, i + 1)?;
        }
        (i == b.len()).then_some(Version {
            major,
            minor,
            patch,
            pre,
        })
    }

    /// Semver precedence; build metadata is ignored.
    pub fn precedence(&self, other: &Version<'_>) -> Ordering {
        self.major
            .cmp(&other.major)
            .then(self.minor.cmp(&other.minor))
            .then(self.patch.cmp(&other.patch))
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => compare_prerelease(self.pre, other.pre),
            })
    }
}

/// Compares dot-separated prerelease strings identifier by identifier (Masterminds
/// `comparePrerelease`): numbers numerically and below words, words by bytes, and a missing
/// identifier below a present one.
pub fn compare_prerelease(a: &str, b: &str) -> Ordering {
    let (mut xs, mut ys) = (a.split('.'), b.split('.'));
    loop {
        match (xs.next(), ys.next()) {
            (None, None) => return Ordering::Equal,
            (x, y) => {
                let ord = compare_identifier(x.unwrap_or(""), y.unwrap_or(""));
                if ord != Ordering::Equal {
                    return ord;
                }
            }
        }
    }
}

fn compare_identifier(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    match (a.is_empty(), b.is_empty()) {
        (true, _) => return Ordering::Less,
        (_, true) => return Ordering::Greater,
        _ => {}
    }
    match (
        a.parse::<u64>().ok().filter(|_| all_digits(a)),
        b.parse::<u64>().ok().filter(|_| all_digits(b)),
    ) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.as_bytes().cmp(b.as_bytes()),
    }
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Reads one or more digits as a u64; `None` on no digits or overflow.
fn parse_u64(b: &[u8], i: &mut usize) -> Option<u64> {
    let start = *i;
    let mut value: u64 = 0;
    while let Some(&d) = b.get(*i) {
        if !d.is_ascii_digit() {
            break;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        *i += 1;
    }
    (*i > start).then_some(value)
}

/// Scans `[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*` from `start`, returning its end.
pub(crate) fn scan_identifiers(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    loop {
        let ident_start = i;
        while b
            .get(i)
            .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'-')
        {
            i += 1;
        }
        if i == ident_start {
            return None;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
        } else {
            return Some(i);
        }
    }
}

/// Masterminds `validatePrerelease`: numeric identifiers must not have leading zeros.
fn valid_prerelease(pre: &str) -> bool {
    pre.split('.')
        .all(|id| !(all_digits(id) && id.len() > 1 && id.starts_with('0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version<'_> {
        Version::parse_tag(s).unwrap_or_else(|| panic!("{s} should parse"))
    }

    #[test]
    fn accepts_flux_tag_forms() {
        assert_eq!(
            v("1.2.3"),
            Version {
                major: 1,
                minor: 2,
                patch: 3,
                pre: ""
            }
        );
        assert_eq!(v("v1.2.3-rc.1+build.5").pre, "rc.1");
        assert_eq!(v("2022.04.01").minor, 4, "leading zeros are coerced");
        assert_eq!(
            v("1.2-rc.1.0"),
            Version {
                major: 1,
                minor: 2,
                patch: 0,
                pre: "rc.1.0"
            }
        );
        assert_eq!(v("18446744073709551615.0.0").major, u64::MAX);
    }

    #[test]
    fn rejects_what_flux_skips() {
        for tag in [
            "1.2",
            "v1",
            "latest",
            "V1.2.3",
            "1.2.3.4",
            "1.0.0-rc_1",
            "1.0.0-01",
            "1.2.3-a..b",
            "18446744073709551616.0.0",
            "1.2.3-",
            "1.2.3+",
            "v.1.2",
            "1..2",
            "1.2.3 ",
            "",
        ] {
            assert_eq!(Version::parse_tag(tag), None, "{tag} must be skipped");
        }
    }

    #[test]
    fn orders_by_semver_precedence() {
        let ordered = [
            "1.0.0-1",
            "1.0.0-2",
            "1.0.0-10",
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-beta",
            "1.0.0-rc.9",
            "1.0.0-rc.10",
            "1.0.0",
            "1.0.1",
            "1.10.0",
            "2.0.0",
        ];
        for pair in ordered.windows(2) {
            assert_eq!(
                v(pair[0]).precedence(&v(pair[1])),
                Ordering::Less,
                "{pair:?}"
            );
            assert_eq!(
                v(pair[1]).precedence(&v(pair[0])),
                Ordering::Greater,
                "{pair:?}"
            );
        }
        assert_eq!(v("1.0.0+a").precedence(&v("v1.0.0+b")), Ordering::Equal);
        assert_eq!(v("01.2.3").precedence(&v("1.2.3")), Ordering::Equal);
    }
}
