//! `filterTags`: keep tags a regular expression finds, and extract the value to compare
//! (flux-compat.md §4.5).
//!
//! The search is unanchored (the pattern may anchor itself). `extract` follows Go's
//! `Regexp.Expand`: `$name`/`$1` take the longest run of letters, digits and `_` (so `$1x`
//! names group `1x`), `${name}` is explicit, `$$` is a dollar, a malformed `$` is literal, and
//! a missing or non-participating group expands to nothing. The template is compiled once.

use super::InvalidPolicy;
use regex::{CaptureLocations, Regex};

/// A compiled tag filter.
#[derive(Clone, Debug)]
pub struct Filter {
    regex: Regex,
    /// `None`: no extract template, the compared value is the whole tag.
    template: Option<Vec<Piece>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Group(usize),
}

/// Scratch space reused across tags, so filtering allocates nothing per tag.
#[derive(Debug)]
pub struct Scratch {
    locations: CaptureLocations,
    value: String,
}

impl Filter {
    /// Compiles `pattern` and the `extract` template.
    pub fn new(pattern: &str, extract: &str) -> Result<Self, InvalidPolicy> {
        let regex = Regex::new(pattern).map_err(|err| InvalidPolicy::Filter {
            pattern: pattern.to_string(),
            reason: go_style_regex_error(&err, pattern),
        })?;
        let template = (!extract.is_empty()).then(|| compile_template(&regex, extract));
        Ok(Filter { regex, template })
    }

    /// Scratch space for [`Filter::apply`].
    pub fn scratch(&self) -> Scratch {
        Scratch {
            locations: self.regex.capture_locations(),
            value: String::new(),
        }
    }

    /// The value to compare for `tag`, or `None` when the pattern does not match it.
    pub fn apply<'s>(&self, tag: &'s str, scratch: &'s mut Scratch) -> Option<&'s str> {
        let Some(pieces) = &self.template else {
            return self.regex.is_match(tag).then_some(tag);
        };
        self.regex.captures_read(&mut scratch.locations, tag)?;
        let value = &mut scratch.value;
        value.clear();
        for piece in pieces {
            match piece {
                Piece::Literal(text) => value.push_str(text),
                Piece::Group(index) => {
                    if let Some((start, end)) = scratch.locations.get(*index) {
                        value.push_str(&tag[start..end]);
                    }
                }
            }
        }
        Some(value.as_str())
    }
}

/// Compiles an extract template against the regex's groups, following Go's rules.
fn compile_template(regex: &Regex, template: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut rest = template;
    while let Some(dollar) = rest.find('$') {
        literal.push_str(&rest[..dollar]);
        rest = &rest[dollar + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            literal.push('$');
            rest = after;
            continue;
        }
        let Some((name, after)) = reference_name(rest) else {
            literal.push('$'); // malformed: the dollar is literal text
            continue;
        };
        rest = after;
        if !literal.is_empty() {
            pieces.push(Piece::Literal(std::mem::take(&mut literal)));
        }
        if let Some(index) = group_index(regex, name) {
            pieces.push(Piece::Group(index));
        }
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        pieces.push(Piece::Literal(literal));
    }
    pieces
}

/// Reads `name` or `{name}` after a `$`; `None` when malformed (empty, or no closing brace).
fn reference_name(text: &str) -> Option<(&str, &str)> {
    let (braced, body) = match text.strip_prefix('{') {
        Some(body) => (true, body),
        None => (false, text),
    };
    let end = body
        .char_indices()
        .find(|&(_, c)| !(c.is_alphabetic() || c.is_numeric() || c == '_'))
        .map_or(body.len(), |(i, _)| i);
    if end == 0 {
        return None;
    }
    let name = &body[..end];
    if braced {
        let after = body[end..].strip_prefix('}')?;
        Some((name, after))
    } else {
        Some((name, &body[end..]))
    }
}

/// A number (without leading zeros, below 10⁸) is a group index; anything else a group name.
fn group_index(regex: &Regex, name: &str) -> Option<usize> {
    let numeric =
        name.bytes().all(|b| b.is_ascii_digit()) && !(name.len() > 1 && name.starts_with('0'));
    if numeric {
        let index: usize = name.parse().ok().filter(|&n| n < 100_000_000)?;
        return (index < regex.captures_len()).then_some(index);
    }
    regex.capture_names().position(|n| n == Some(name))
}

/// Go's regexp errors read `error parsing regexp: <what>: `<where>``; the Rust parser's say the
/// same things in other words. Map the common ones so condition messages read as Flux's do.
fn go_style_regex_error(err: &regex::Error, pattern: &str) -> String {
    let detail = match err {
        regex::Error::Syntax(text) => text
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("error: "))
            .unwrap_or(text)
            .to_string(),
        regex::Error::CompiledTooBig(_) => "expression too large".to_string(),
        other => other.to_string(),
    };
    let go = match detail.as_str() {
        "unclosed group" => "missing closing )",
        "unopened group" => "unexpected )",
        "unclosed character class" => "missing closing ]",
        "repetition operator missing expression" => "missing argument to repetition operator",
        "unrecognized escape sequence" => "invalid escape sequence",
        "invalid character class range, the start must be <= the end" => {
            "invalid character class range"
        }
        other => other,
    };
    format!("error parsing regexp: {go}: `{pattern}`")
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn invalid_pattern_reads_like_go() {
        let err = Filter::new("(abc", "").expect_err("unclosed group");
        assert_eq!(
            err.to_string(),
            "failed to filter tags: invalid regular expression pattern '(abc': error parsing regexp: missing closing ): `(abc`"
        );
    }
}
