//! `filterTags`: keep tags a regular expression finds, and extract the value to compare
//! (docs/policy.md).
//!
//! The search is unanchored (the pattern may anchor itself); the pattern is Go's syntax
//! (`goregex`), the template Go's `Regexp.Expand` (`template.rs`).

use super::linear::Linear;
use super::regex::{compile_go, DEEP};
use super::template::{compile_template, expand, Piece};
use super::InvalidPolicy;
use regex::{CaptureLocations, Regex};
use regex_automata::dfa::onepass;
use regex_automata::{Anchored, Input};

/// A compiled tag filter.
#[derive(Clone, Debug)]
pub struct Filter {
    regex: Regex,
    /// Straight-line patterns (`^main-[a-f0-9]+-(?P<ts>[0-9]+)$`) match with a greedy walk,
    /// no automaton at all: the fastest path, taken first.
    linear: Option<Linear>,
    /// Literals every match starts with, when the pattern is anchored at the start: a tag
    /// without one is rejected without running the regex (most tags, in practice).
    prefixes: Option<Vec<Box<[u8]>>>,
    /// For start-anchored patterns that are one-pass (most tag patterns): captures in a single
    /// forward scan, several times cheaper than the general capture search.
    onepass: Option<onepass::DFA>,
    /// `None`: no extract template, the compared value is the whole tag.
    template: Option<Vec<Piece>>,
}

/// Scratch space reused across tags, so filtering allocates nothing per tag.
#[derive(Debug)]
pub struct Scratch {
    slots: Vec<usize>,
    locations: CaptureLocations,
    onepass: Option<(onepass::Cache, regex_automata::util::captures::Captures)>,
    value: String,
}

impl Filter {
    /// Compiles `pattern` and the `extract` template.
    pub fn new(pattern: &str, extract: &str) -> Result<Self, InvalidPolicy> {
        let compiled = compile_go(pattern).map_err(|reason| InvalidPolicy::Filter {
            pattern: pattern.to_string(),
            reason,
        })?;
        let names = &compiled.translated.names;
        let template = (!extract.is_empty()).then(|| compile_template(names, extract));
        // The fast paths read the pattern in the regex crate's syntax, with Go's meaning; a
        // deep pattern (rare) takes the general engine alone, which compiles on a deep stack.
        let rust = &compiled.translated.pattern;
        let shallow = compiled.translated.height <= DEEP;
        let linear = shallow.then(|| Linear::new(rust)).flatten();
        let prefixes = shallow.then(|| required_prefixes(rust)).flatten();
        // Anchored searches give the same matches only when the pattern is start-anchored.
        let onepass = (shallow && starts_anchored(rust))
            .then(|| onepass::DFA::new(rust).ok())
            .flatten();
        let regex = compiled.regex;
        Ok(Filter {
            regex,
            linear,
            prefixes,
            onepass,
            template,
        })
    }

    /// Whether an `extract` template makes the compared value (else it is the tag).
    pub fn extracts(&self) -> bool {
        self.template.is_some()
    }

    /// Scratch space for [`Filter::apply`].
    pub fn scratch(&self) -> Scratch {
        Scratch {
            slots: vec![0; self.linear.as_ref().map_or(0, Linear::slots)],
            locations: self.regex.capture_locations(),
            onepass: self
                .onepass
                .as_ref()
                .map(|dfa| (dfa.create_cache(), dfa.create_captures())),
            value: String::new(),
        }
    }

    /// The value to compare for `tag`, or `None` when the pattern does not match it.
    // Inlined into the election loop: it runs once per tag.
    #[inline(always)]
    pub fn apply<'s>(&self, tag: &'s str, scratch: &'s mut Scratch) -> Option<&'s str> {
        if let Some(linear) = self.linear.as_ref().filter(|l| l.applies_to(tag)) {
            let slots = &mut scratch.slots;
            if !linear.captures(tag.as_bytes(), slots) {
                return None;
            }
            let group = |i: usize| Some((slots[2 * i], slots[2 * i + 1]));
            return match self.template.as_deref() {
                None => Some(tag),
                Some([Piece::Group(i)]) => Some(&tag[slots[2 * i]..slots[2 * i + 1]]),
                Some(pieces) => {
                    scratch.value.clear();
                    expand(pieces, tag, group, &mut scratch.value);
                    Some(scratch.value.as_str())
                }
            };
        }
        if let Some(prefixes) = &self.prefixes {
            if !prefixes.iter().any(|p| tag.as_bytes().starts_with(p)) {
                return None;
            }
        }
        let Some(pieces) = &self.template else {
            return self.regex.is_match(tag).then_some(tag);
        };
        let value = &mut scratch.value;
        value.clear();
        if let (Some(dfa), Some((cache, caps))) = (&self.onepass, &mut scratch.onepass) {
            dfa.captures(cache, Input::new(tag).anchored(Anchored::Yes), caps);
            if !caps.is_match() {
                return None;
            }
            // `$ts`-style templates: the value is a slice of the tag, nothing to copy.
            if let [Piece::Group(index)] = pieces.as_slice() {
                return Some(caps.get_group(*index).map_or("", |s| &tag[s.start..s.end]));
            }
            expand(
                pieces,
                tag,
                |i| caps.get_group(i).map(|s| (s.start, s.end)),
                value,
            );
        } else {
            self.regex.captures_read(&mut scratch.locations, tag)?;
            let locations = &scratch.locations;
            expand(pieces, tag, |i| locations.get(i), value);
        }
        Some(value.as_str())
    }
}

/// Whether every match of the pattern starts at the start of the text.
fn starts_anchored(pattern: &str) -> bool {
    use regex_syntax::hir::Look;
    regex_syntax::Parser::new()
        .parse(pattern)
        .is_ok_and(|hir| hir.properties().look_set_prefix().contains(Look::Start))
}

/// The one tag a pattern admits, when it admits exactly one (`^latest$`): anchored at both
/// ends around a single literal. A policy filtering with it can only ever see that tag.
pub fn only_tag(pattern: &str) -> Option<String> {
    use regex_syntax::hir::literal::Extractor;
    use regex_syntax::hir::Look;
    let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
    let looks = hir.properties();
    let anchored = looks.look_set_prefix().contains(Look::Start)
        && looks.look_set_suffix().contains(Look::End);
    let literals = Extractor::new().extract(&hir);
    match literals.literals()? {
        [only] if anchored && literals.is_exact() => {
            String::from_utf8(only.as_bytes().to_vec()).ok()
        }
        _ => None,
    }
}

/// The literal prefixes of a pattern that can only match at the start of the text, if there
/// are a few (`^main-[a-f0-9]+-(\d+)$` gives `main-`). `None` when any start is possible.
fn required_prefixes(pattern: &str) -> Option<Vec<Box<[u8]>>> {
    use regex_syntax::hir::literal::Extractor;
    if !starts_anchored(pattern) {
        return None;
    }
    let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
    let literals = Extractor::new().extract(&hir);
    let literals = literals.literals()?;
    if literals.is_empty() || literals.len() > 8 || literals.iter().any(|l| l.as_bytes().is_empty())
    {
        return None;
    }
    Some(literals.iter().map(|l| l.as_bytes().into()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_anchored_around_one_literal_admits_only_that_tag() {
        assert_eq!(only_tag("^latest$").as_deref(), Some("latest"));
        assert_eq!(only_tag(r"^v1\.2$").as_deref(), Some("v1.2"));
        assert_eq!(only_tag(r"\Alatest\z").as_deref(), Some("latest"));
        for more in [
            "latest",
            "^latest",
            "latest$",
            "^(latest|stable)$",
            "^latest.*$",
            "(?i)^latest$",
            "^$x",
            "[",
            r"^\d+$",
        ] {
            assert_eq!(only_tag(more), None, "{more}");
        }
    }

    fn extract(pattern: &str, template: &str, tag: &str) -> Option<String> {
        let f = Filter::new(pattern, template).expect("pattern compiles");
        let mut scratch = f.scratch();
        f.apply(tag, &mut scratch).map(str::to_string)
    }

    #[test]
    fn expands_like_go() {
        let p = r"^v(?P<major>\d+)\.(\d+)";
        assert_eq!(
            extract(p, "$1x", "v12.3").as_deref(),
            Some(""),
            "$1x names group '1x'"
        );
        assert_eq!(extract(p, "${1}x", "v12.3").as_deref(), Some("12x"));
        assert_eq!(extract(p, "$$1", "v12.3").as_deref(), Some("$1"));
        assert_eq!(extract(p, "$major-$2", "v12.3").as_deref(), Some("12-3"));
        assert_eq!(
            extract(p, "${major}.${2}", "v12.3").as_deref(),
            Some("12.3")
        );
        assert_eq!(
            extract(p, "$9", "v12.3").as_deref(),
            Some(""),
            "missing group"
        );
        assert_eq!(
            extract(p, "$01", "v12.3").as_deref(),
            Some(""),
            "leading zero is a name"
        );
        assert_eq!(
            extract(p, "a$", "v12.3").as_deref(),
            Some("a$"),
            "malformed dollar"
        );
        assert_eq!(
            extract(p, "${1", "v12.3").as_deref(),
            Some("${1"),
            "unclosed brace"
        );
        assert_eq!(extract(p, "lit", "v12.3").as_deref(), Some("lit"));
        assert_eq!(
            extract("(a)|(b)", "[$2]", "a").as_deref(),
            Some("[]"),
            "non-participating"
        );
    }

    #[test]
    fn searches_unanchored_and_returns_the_tag_without_template() {
        assert_eq!(
            extract(r"v(\d+)\.(\d+)", "$2", "xv1.2").as_deref(),
            Some("2")
        );
        assert_eq!(extract(r"\d", "", "abc-1").as_deref(), Some("abc-1"));
        assert_eq!(extract(r"^\d", "", "abc-1"), None);
        assert_eq!(extract("", "", "anything").as_deref(), Some("anything"));
    }

    #[test]
    fn prefix_fast_path_only_for_start_anchored_patterns() {
        let prefixes = |p: &str| {
            required_prefixes(p).map(|v| {
                v.iter()
                    .map(|b| String::from_utf8(b.to_vec()).unwrap())
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(
            prefixes(r"^main-[a-f0-9]+-(?P<ts>[0-9]+)$"),
            Some(vec!["main-".to_string()])
        );
        assert_eq!(
            prefixes(r"^(?:dev|prod)-\d+"),
            Some(vec!["dev-".to_string(), "prod-".to_string()])
        );
        assert_eq!(prefixes(r"main-\d+"), None, "unanchored");
        assert_eq!(prefixes(r"(?m)^main-\d+"), None, "line anchor");
        assert_eq!(prefixes(r"^.*-\d+"), None, "no literal");
        assert_eq!(
            prefixes(r"^main|^dev"),
            Some(vec!["main".to_string(), "dev".to_string()])
        );
        assert_eq!(prefixes(r"^main|dev"), None, "one branch unanchored");
        // The fast paths never change the outcome.
        assert_eq!(
            extract(r"^(a+)(a*)$", "$1|$2", "aaa").as_deref(),
            Some("aaa|"),
            "one-pass is leftmost-first"
        );
        assert_eq!(
            extract(r"^(?:(a)|(b))c$", "[$1][$2]", "bc").as_deref(),
            Some("[][b]")
        );
        assert_eq!(
            extract(r"^(.*)-(\d+)$", "$1", "a-1-2").as_deref(),
            Some("a-1"),
            "not one-pass: general path"
        );
        assert_eq!(
            extract(r"^(?i)main-(\d+)$", "$1", "MAIN-7").as_deref(),
            Some("7")
        );
        assert_eq!(extract(r"^main-(\d+)$", "$1", "xmain-7"), None);
    }

    #[test]
    fn templates_use_gos_group_names() {
        // Go allows a name starting with a digit, and the same name twice: `$v` is then the
        // first group of that name that took part in the match.
        assert_eq!(extract(r"^(?P<1x>\d+)", "$1x", "42").as_deref(), Some("42"));
        let twice = r"^(?:a(?P<v>\d)|b(?P<v>\d))$";
        assert_eq!(extract(twice, "[$v]", "b7").as_deref(), Some("[7]"));
        assert_eq!(extract(twice, "[$v]", "a3").as_deref(), Some("[3]"));
        assert_eq!(extract(r"^(?P<01>\d)", "$01", "5").as_deref(), Some("5"));
        // A name is Go's letters (L), digits (Nd) and `_`: `²` is neither.
        assert_eq!(extract(r"^(\d)", "$1²", "5").as_deref(), Some("5²"));
        assert_eq!(extract(r"^(\d)", "$1é", "5").as_deref(), Some(""));
    }

    #[test]
    fn typical_patterns_keep_their_fast_paths_after_translation() {
        let f = Filter::new(r"^main-[a-f0-9]+-(?P<ts>[0-9]+)$", "$ts").unwrap();
        assert!(f.linear.is_some() && f.prefixes.is_some() && f.onepass.is_some());
        let f = Filter::new(r"^v?(?P<v>\d+\.\d+\.\d+)(-rc\.\d+)?$", "$v").unwrap();
        assert!(f.onepass.is_some(), "start-anchored and one-pass");
        // Go's ASCII `\d`: the linear walk needs no fallback for non-ASCII tags.
        let f = Filter::new(r"^(\d+)$", "$1").unwrap();
        let mut scratch = f.scratch();
        assert_eq!(f.apply("٣", &mut scratch), None);
        assert_eq!(f.apply("12", &mut scratch), Some("12"));
    }

    #[test]
    fn invalid_pattern_reads_like_go() {
        // Go's words on the first line (Flux's message), the field and the fix on the second.
        let fix = "spec.filterTags.pattern is a Go (RE2) regular expression: fix it, or remove filterTags";
        let err = Filter::new("(abc", "").expect_err("unclosed group");
        assert_eq!(
            err.to_string(),
            format!("failed to filter tags: invalid regular expression pattern '(abc': error parsing regexp: missing closing ): `(abc`\n{fix}")
        );
        let err = Filter::new("^v\\d++$", "").expect_err("nested repetition");
        assert_eq!(
            err.to_string(),
            format!("failed to filter tags: invalid regular expression pattern '^v\\d++$': error parsing regexp: invalid nested repetition operator: `++`\n{fix}")
        );
    }
}
