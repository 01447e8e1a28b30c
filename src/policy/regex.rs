//! Regular expressions as Go compiles them: `filterTags.pattern`, `exclusionList` entries and
//! `tags --exclude` are tenant input written for Go's RE2 syntax. Each pattern is read by
//! [`goregex`](super::goregex) exactly as Go reads it (what Go refuses is refused with Go's
//! error text) and compiled in Go's meaning; every compiled expression is bounded by the regex
//! crate's size limit, so matching stays linear in the tag (docs/security.md).

use super::goregex::{translate, Translated};
use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

/// The compiled-program bound of one expression (the regex crate's default, made explicit):
/// beyond it the pattern is refused with Go's `expression too large`.
pub const REGEX_SIZE_LIMIT: usize = 10 << 20;

/// The regex crate's nesting bound, above anything Go's own depth limit (1000) lets through.
const NEST_LIMIT: u32 = 8 * 1000;

/// Go's parse-tree height above which compiling takes a dedicated deep stack: the regex crate
/// compiles nested groups recursively, and Go accepts 1000 levels.
pub(super) const DEEP: u32 = 40;

/// The stack for compiling deep patterns (reserved, not committed: only what is used).
const DEEP_STACK: usize = 64 << 20;

/// A pattern compiled with Go's meaning.
#[derive(Clone, Debug)]
pub struct GoRegex {
    pub regex: Regex,
    /// The pattern in the regex crate's syntax, and Go's group names.
    pub translated: Translated,
}

/// Compiles `pattern` as Go would, or Go's error text for it.
pub fn compile_go(pattern: &str) -> Result<GoRegex, String> {
    let translated = translate(pattern).map_err(|e| e.to_string())?;
    let rust = translated.pattern.clone();
    let regex = with_stack(translated.height, move || {
        RegexBuilder::new(&rust)
            .size_limit(REGEX_SIZE_LIMIT)
            .nest_limit(NEST_LIMIT)
            .build()
    })?
    .map_err(|err| go_style_regex_error(&err, pattern))?;
    Ok(GoRegex { regex, translated })
}

/// Runs `compile` on a stack deep enough for a pattern of Go height `height`.
fn with_stack<T: Send>(height: u32, compile: impl FnOnce() -> T + Send) -> Result<T, String> {
    if height <= DEEP {
        return Ok(compile());
    }
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("regex-compile".into())
            .stack_size(DEEP_STACK)
            .spawn_scoped(scope, compile)
            .map_err(|e| format!("cannot start a thread to compile the expression: {e}"))?;
        handle
            .join()
            .map_err(|panic| std::panic::resume_unwind(panic))
    })
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

/// Compiles the exclusion list before any registry call (docs/compatibility.md). Each entry is parsed
/// alone first, so a bad one fails with Flux's scan-failure text naming it; then the list
/// compiles as one, within [`REGEX_SIZE_LIMIT`] for all of it.
pub fn compile_exclusions(patterns: &[String]) -> Result<Exclusions, String> {
    let mut translated = Vec::with_capacity(patterns.len());
    let mut height = 0;
    for p in patterns {
        let t = translate(p).map_err(|e| format!("failed to compile regex {p}: {e}"))?;
        height = height.max(t.height);
        translated.push(t.pattern);
    }
    let set = with_stack(height, move || {
        RegexSetBuilder::new(&translated)
            .size_limit(REGEX_SIZE_LIMIT)
            .nest_limit(NEST_LIMIT)
            .build()
    })?
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

/// The regex crate's refusal of a pattern Go accepted: only its own bound on the compiled
/// size can do that, which reads as Go's `expression too large`.
fn go_style_regex_error(err: &regex::Error, pattern: &str) -> String {
    match err {
        regex::Error::CompiledTooBig(_) => {
            format!("error parsing regexp: expression too large: `{pattern}`")
        }
        other => format!("error parsing regexp: {other}: `{pattern}`"),
    }
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
        let patterns: Vec<String> = (0..2000).map(|i| format!("\\pL{{20}}x{i}")).collect();
        let err = compile_exclusions(&patterns).unwrap_err();
        assert!(err.contains("2000 entries together exceed"), "{err}");
        assert!(compile_exclusions(&patterns[..10])
            .unwrap()
            .excludes("abcdefghijklmnopqrstx7"));
    }

    #[test]
    fn oversized_expressions_are_refused_as_go_refuses_them() {
        // Go counts nested repeats first...
        let err = compile_go("(\\w{1000}){1000}").unwrap_err();
        assert_eq!(err, "error parsing regexp: invalid repeat count: `{1000}`");
        // ...and what it lets through can still exceed the compiled-size bound.
        let err = compile_go(&"\\pL{1000}".repeat(4)).unwrap_err();
        assert!(err.contains("expression too large"), "{err}");
    }

    #[test]
    fn go_depth_compiles_on_any_stack() {
        // 999 nested groups are Go's deepest; a test thread's stack is 2 MiB.
        let deep = format!("{}a{}", "(".repeat(999), ")".repeat(999));
        assert!(compile_go(&deep).unwrap().regex.is_match("a"));
        let stars = format!("{}a{}", "(?:".repeat(999), ")*".repeat(999));
        assert!(compile_go(&stars).unwrap().regex.is_match("aaa"));
        let list = vec![deep.clone(), "^x$".to_string()];
        assert!(compile_exclusions(&list).unwrap().excludes("a"));
        let too_deep = format!("{}a{}", "(".repeat(1000), ")".repeat(1000));
        assert_eq!(
            compile_go(&too_deep).unwrap_err(),
            format!("error parsing regexp: expression nests too deeply: `{too_deep}`")
        );
    }
}
