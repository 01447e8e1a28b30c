//! Regular expressions as Go compiles them: `filterTags.pattern`, `exclusionList` entries and
//! `tags --exclude` are tenant input written for Go's RE2 syntax. Errors read as Go's
//! (`error parsing regexp: <what>: `<where>``), and every compiled expression is bounded by
//! the regex crate's size limit, so matching stays linear in the tag (docs/security.md).

use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

/// The compiled-program bound of one expression (the regex crate's default, made explicit):
/// beyond it the pattern is refused with Go's `expression too large`.
pub const REGEX_SIZE_LIMIT: usize = 10 << 20;

/// Compiles `pattern`, or Go's error text for it.
pub fn compile_go(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|err| go_style_regex_error(&err, pattern))
}

/// A compiled exclusion list (`spec.exclusionList`, `tags --exclude`): one automaton for
/// all entries, so a tag costs one pass however long the list, and the whole list shares one
/// size bound, however many entries it has.
#[derive(Clone, Debug)]
pub struct Exclusions {
    set: RegexSet,
}

impl Exclusions {
    /// Whether an entry finds `tag` (an unanchored search, as Go's `MatchString`).
    pub fn excludes(&self, tag: &str) -> bool {
        self.set.is_match(tag)
    }

    /// How many entries the list has.
    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

/// Compiles the exclusion list before any registry call (decisions.md). Each entry is parsed
/// alone first, so a bad one fails with Flux's scan-failure text naming it; then the list
/// compiles as one, within [`REGEX_SIZE_LIMIT`] for all of it.
pub fn compile_exclusions(patterns: &[String]) -> Result<Exclusions, String> {
    for p in patterns {
        regex_syntax::Parser::new().parse(p).map_err(|e| {
            format!(
                "failed to compile regex {p}: {}",
                go_style_error(&e.to_string(), p)
            )
        })?;
    }
    let set = RegexSetBuilder::new(patterns)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(limit) => format!(
                "failed to compile the exclusion list: its {} entries together exceed the \
                 {limit}-byte compiled size limit (error parsing regexp: expression too large)",
                patterns.len()
            ),
            other => format!("failed to compile the exclusion list: {other}"),
        })?;
    Ok(Exclusions { set })
}

/// Go's regexp errors read `error parsing regexp: <what>: `<where>``; the Rust parser's say the
/// same things in other words. Map the common ones so condition messages read as Flux's do.
pub fn go_style_regex_error(err: &regex::Error, pattern: &str) -> String {
    match err {
        regex::Error::Syntax(text) => go_style_error(text, pattern),
        regex::Error::CompiledTooBig(_) => {
            format!("error parsing regexp: expression too large: `{pattern}`")
        }
        other => format!("error parsing regexp: {other}: `{pattern}`"),
    }
}

/// Go's words for the regex crate's syntax error `text` (its last `error: ` line).
fn go_style_error(text: &str, pattern: &str) -> String {
    let detail = text
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("error: "))
        .unwrap_or(text);
    let go = match detail {
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

    #[test]
    fn exclusions_fail_with_fluxs_text_for_the_first_bad_entry() {
        let patterns = ["^.*\\.sig$".to_string(), "(x".to_string(), "[".to_string()];
        let err = compile_exclusions(&patterns).unwrap_err();
        assert_eq!(
            err,
            "failed to compile regex (x: error parsing regexp: missing closing ): `(x`"
        );
        let one = compile_exclusions(&patterns[..1]).unwrap();
        assert!(one.excludes("x.sig") && !one.excludes("1.0"));
        assert!(!compile_exclusions(&[]).unwrap().excludes("anything"));
    }

    #[test]
    fn a_long_list_shares_one_bound() {
        // Each entry alone is small; together they are refused, in milliseconds.
        let patterns: Vec<String> = (0..2000).map(|i| format!("\\w{{20}}x{i}")).collect();
        let err = compile_exclusions(&patterns).unwrap_err();
        assert!(err.contains("2000 entries together exceed"), "{err}");
        assert!(compile_exclusions(&patterns[..10])
            .unwrap()
            .excludes("abcdefghijklmnopqrstx7"));
    }

    #[test]
    fn oversized_expressions_are_refused_as_go_refuses_them() {
        let err = compile_go("(\\w{1000}){1000}").unwrap_err();
        assert!(err.contains("expression too large"), "{err}");
    }
}
