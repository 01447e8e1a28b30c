//! The two ways an election fails: the policy itself is invalid (the object is Stalled), or the
//! tags offer nothing to elect (not ready; retried). Displays are Flux's exact messages.

use thiserror::Error;

/// The longest semver range accepted: far beyond any real range (a few dozen bytes), small
/// enough that parsing one costs milliseconds.
pub const MAX_RANGE_BYTES: usize = 64 << 10;

/// A policy that can never elect anything: the ImagePolicy must be fixed (Stalled).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum InvalidPolicy {
    /// None of `semver`, `alphabetical`, `numerical` is set. Flux's words, then ours.
    #[error(
        "invalid policy: given ImagePolicyChoice object is invalid\n\
         spec.policy sets none of semver, alphabetical or numerical; set one"
    )]
    NoPolicy,
    /// The semver range does not follow the constraint grammar. Flux's words, then the field
    /// and the fix.
    #[error(
        "invalid policy: improper constraint: {}\n{}",
        go_quote(.0),
        range_fix(.0)
    )]
    ImproperConstraint(String),
    /// Beyond Flux (docs/security.md): a range longer than [`MAX_RANGE_BYTES`]. Upstream's
    /// hyphen-range rewrite is quadratic in the range's length.
    #[error(
        "invalid policy: improper constraint: the range is {0} bytes long; the limit is {max} bytes\n\
         spec.policy.semver.range: shorten it",
        max = MAX_RANGE_BYTES
    )]
    RangeTooLong(usize),
    /// A comparator's version is not a version (e.g. `1x`). Flux's words, then which
    /// comparator, why, and the field.
    #[error(
        "invalid policy: constraint parser error\n{}: {why} (spec.policy.semver.range)",
        go_quote(.comparator)
    )]
    ConstraintParser {
        comparator: String,
        why: &'static str,
    },
    /// `filterTags.pattern` does not compile. Flux's words, then the field and the fix.
    #[error(
        "failed to filter tags: invalid regular expression pattern '{pattern}': {reason}\n\
         spec.filterTags.pattern is a Go (RE2) regular expression: fix it, or remove filterTags"
    )]
    Filter { pattern: String, reason: String },
}

impl InvalidPolicy {
    /// The constraint library's own text (Flux's first line), without `invalid policy: `.
    pub fn constraint_text(&self) -> String {
        let full = self.to_string();
        let first = full.lines().next().unwrap_or_default();
        first
            .strip_prefix("invalid policy: ")
            .unwrap_or(first)
            .to_string()
    }
}

/// Nothing could be elected from the tags given (retry when the tags change).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum NotElected {
    /// No tags at all, or none left after `filterTags`.
    #[error("version list argument cannot be empty")]
    EmptyList,
    /// Tags exist but none parses and satisfies the policy.
    #[error("unable to determine latest version from provided list")]
    NoMatch,
}

/// What to write in `spec.policy.semver.range` instead of `range`: a tag name (`latest`) is
/// followed by another policy, anything else is a range to rewrite.
fn range_fix(range: &str) -> String {
    let field = "spec.policy.semver.range";
    let named = !range.is_empty() && range.chars().all(|c| c.is_ascii_alphabetic());
    match named {
        true => format!(
            "{field} is a semver range, not a tag: to follow the tag '{range}', use \
             spec.policy.alphabetical with spec.filterTags.pattern '^{range}$' and \
             spec.digestReflectionPolicy: Always"
        ),
        false => format!(
            "{field} is not a semver range: write comparators such as '>=1.0.0 <2.0.0', \
             '~1.2' or '1.x'"
        ),
    }
}

/// Go's `%q`: a double-quoted string with Go escapes.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0C' => out.push_str("\\f"),
            '\x0B' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_flux_texts() {
        assert_eq!(
            InvalidPolicy::NoPolicy.to_string(),
            "invalid policy: given ImagePolicyChoice object is invalid\n\
             spec.policy sets none of semver, alphabetical or numerical; set one"
        );
        // Flux's line, then the field and what to write instead.
        assert_eq!(
            InvalidPolicy::ImproperConstraint("a\"b\t".into()).to_string(),
            "invalid policy: improper constraint: \"a\\\"b\\t\"\n\
             spec.policy.semver.range is not a semver range: write comparators such as \
             '>=1.0.0 <2.0.0', '~1.2' or '1.x'"
        );
        assert_eq!(
            InvalidPolicy::ImproperConstraint("latest".into()).to_string(),
            "invalid policy: improper constraint: \"latest\"\n\
             spec.policy.semver.range is a semver range, not a tag: to follow the tag 'latest', \
             use spec.policy.alphabetical with spec.filterTags.pattern '^latest$' and \
             spec.digestReflectionPolicy: Always"
        );
        let first = InvalidPolicy::ImproperConstraint("latest".into()).constraint_text();
        assert_eq!(first, r#"improper constraint: "latest""#);
        assert_eq!(
            NotElected::EmptyList.to_string(),
            "version list argument cannot be empty"
        );
        assert_eq!(
            NotElected::NoMatch.to_string(),
            "unable to determine latest version from provided list"
        );
    }
}
