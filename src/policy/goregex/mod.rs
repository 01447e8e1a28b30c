//! Go's regular expression syntax (`regexp/syntax` with Go's `Perl` flags), read as Go reads
//! it and written out for the regex crate.
//!
//! The two syntaxes look alike and differ in many places: Go refuses `a**`, `[[:foo:]]`,
//! `\p{Garay}` or `a{1001}` (the crate accepts them); Go accepts `\Q...\E`, octal `\12`,
//! `a{,2}` as text, `(?P<1x>...)` or a repeated group name (the crate does not); and some
//! patterns mean other things (`\d` and `\b` are ASCII in Go; `[[a]]` is a class then `]`;
//! `\<` is `<`). So the pattern is parsed here following Go's parser step by step — the same
//! errors, in the same order, with the same text — and written out in a form the regex crate
//! reads in exactly Go's meaning: classes as explicit ranges, each flag on the item it
//! governs, every group unnamed (Go's names are kept aside for `extract`).

mod class;
mod names;
mod node;
mod parse;

pub use parse::translate;

use std::fmt;

/// A pattern translated for the regex crate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Translated {
    /// The same language in the regex crate's syntax, with the same groups in the same order.
    pub pattern: String,
    /// Go's group names by group index (index 0, the whole match, has none).
    pub names: Vec<Option<String>>,
    /// Go's parse-tree height: deep patterns need a deep stack to compile.
    pub height: u32,
}

/// Go's parse error: `error parsing regexp: <code>: `<expr>``.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoError {
    code: Code,
    expr: String,
}

impl GoError {
    fn new(code: Code, expr: &str) -> Self {
        GoError {
            code,
            expr: expr.to_string(),
        }
    }
}

impl fmt::Display for GoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "error parsing regexp: {}: `{}`",
            self.code.text(),
            self.expr
        )
    }
}

impl std::error::Error for GoError {}

/// Go's error codes that a pattern from a Kubernetes object can produce (`invalid UTF-8`
/// cannot: the API server only stores valid UTF-8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Code {
    InvalidCharRange,
    InvalidEscape,
    InvalidNamedCapture,
    InvalidPerlOp,
    InvalidRepeatOp,
    InvalidRepeatSize,
    MissingBracket,
    MissingParen,
    MissingRepeatArgument,
    TrailingBackslash,
    UnexpectedParen,
    NestingDepth,
    Large,
}

impl Code {
    fn text(self) -> &'static str {
        match self {
            Code::InvalidCharRange => "invalid character class range",
            Code::InvalidEscape => "invalid escape sequence",
            Code::InvalidNamedCapture => "invalid named capture",
            Code::InvalidPerlOp => "invalid or unsupported Perl syntax",
            Code::InvalidRepeatOp => "invalid nested repetition operator",
            Code::InvalidRepeatSize => "invalid repeat count",
            Code::MissingBracket => "missing closing ]",
            Code::MissingParen => "missing closing )",
            Code::MissingRepeatArgument => "missing argument to repetition operator",
            Code::TrailingBackslash => "trailing backslash at end of expression",
            Code::UnexpectedParen => "unexpected )",
            Code::NestingDepth => "expression nests too deeply",
            Code::Large => "expression too large",
        }
    }
}

/// The flags `(?imsU)` set; Go's `Perl` mode starts with `^`/`$` matching at the text's ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Flags(u8);

impl Flags {
    const FOLD: u8 = 1; // i
    const MULTI_LINE: u8 = 2; // m
    const DOT_NL: u8 = 4; // s
    const UNGREEDY: u8 = 8; // U

    fn fold(self) -> bool {
        self.0 & Self::FOLD != 0
    }
    fn has(self, flag: u8) -> bool {
        self.0 & flag != 0
    }
}

#[cfg(test)]
mod tests;
