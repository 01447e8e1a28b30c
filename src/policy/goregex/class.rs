//! Escapes and character classes, read as Go's `regexp/syntax` reads them, into sets of code
//! points that are then written out for the regex crate in a form it cannot misread: every
//! class is an explicit list of ranges. So Go's meanings hold where the crates differ: `\d`,
//! `\s`, `\w` are ASCII (`\s` without `\v`), `[[a]]` is a class and a `]`, `&&`, `--` and `~~`
//! are literal, a fold (`(?i)`) applies to each part before a negation.

use super::names;
use super::{Code, Flags, GoError};
use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, HirKind};
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

/// The largest code point.
const MAX_RUNE: u32 = 0x10FFFF;

/// Reads the escape at the start of `s` (which starts with `\`): its code point value (which
/// may be a surrogate, matching nothing) and the rest.
pub(super) fn parse_escape(s: &str) -> Result<(u32, &str), GoError> {
    let t = &s[1..];
    let mut chars = t.chars();
    let Some(c) = chars.next() else {
        return Err(GoError::new(Code::TrailingBackslash, ""));
    };
    let mut rest = chars.as_str();
    let invalid = |rest: &str| GoError::new(Code::InvalidEscape, &s[..s.len() - rest.len()]);
    match c {
        '1'..='7' if !rest.starts_with(|d: char| ('0'..='7').contains(&d)) => Err(invalid(rest)),
        '0'..='7' => {
            // Up to three octal digits in all; a lone non-zero digit (a backreference) is
            // refused above.
            let mut value = c as u32 - '0' as u32;
            for _ in 1..3 {
                match rest.as_bytes().first() {
                    Some(d @ b'0'..=b'7') => {
                        value = value * 8 + u32::from(d - b'0');
                        rest = &rest[1..];
                    }
                    _ => break,
                }
            }
            Ok((value, rest))
        }
        'x' => parse_hex(rest).ok_or_else(|| invalid(hex_stop(rest))),
        'a' => Ok((0x07, rest)),
        'f' => Ok((0x0C, rest)),
        'n' => Ok(('\n' as u32, rest)),
        'r' => Ok(('\r' as u32, rest)),
        't' => Ok(('\t' as u32, rest)),
        'v' => Ok((0x0B, rest)),
        // Punctuation escapes itself; letters, digits and non-ASCII do not.
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => Ok((c as u32, rest)),
        _ => Err(invalid(rest)),
    }
}

/// `\x41` or `\x{10FFFF}` (after the `x`).
fn parse_hex(t: &str) -> Option<(u32, &str)> {
    if let Some(body) = t.strip_prefix('{') {
        let end = body.find('}')?;
        let digits = &body[..end];
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let value = u32::from_str_radix(digits.trim_start_matches('0'), 16)
            .ok()
            .or_else(|| digits.bytes().all(|b| b == b'0').then_some(0))?;
        return (value <= MAX_RUNE).then(|| (value, &body[end + 1..]));
    }
    let b = t.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_hexdigit() && b[1].is_ascii_hexdigit() {
        return Some((u32::from_str_radix(&t[..2], 16).ok()?, &t[2..]));
    }
    None
}

/// Where Go stops reading a bad hex escape, for its error text (`\x{z`, `\x4g`, `\x{110000`).
fn hex_stop(t: &str) -> &str {
    let mut chars = t.chars();
    let Some(first) = chars.next() else { return t };
    if first != '{' {
        chars.next(); // Go reads two characters before judging them.
        return chars.as_str();
    }
    let mut value: u32 = 0;
    loop {
        let Some(c) = chars.next() else {
            return chars.as_str();
        };
        match c.to_digit(16) {
            Some(d) => {
                value = value.saturating_mul(16).saturating_add(d);
                if value > MAX_RUNE {
                    return chars.as_str();
                }
            }
            // `}` with no digit, or any other character.
            None => return chars.as_str(),
        }
    }
}

/// `\d`, `\s`, `\w` and their negations: Go's ASCII sets.
pub(super) fn perl_class(s: &str, flags: Flags) -> Option<(ClassUnicode, &str)> {
    let b = s.as_bytes();
    if b.len() < 2 || b[0] != b'\\' {
        return None;
    }
    let ranges: &[(char, char)] = match b[1].to_ascii_lowercase() {
        b'd' => &[('0', '9')],
        b's' => &[('\t', '\n'), ('\x0C', '\r'), (' ', ' ')],
        b'w' => &[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')],
        _ => return None,
    };
    Some((group(ranges, b[1].is_ascii_uppercase(), flags), &s[2..]))
}

/// `[:alpha:]` and the other POSIX classes inside brackets; `[:^alpha:]` negated. Go takes
/// the name up to the first `:]`, wherever it is, and refuses names it does not know.
fn posix_class(s: &str, flags: Flags) -> Option<Result<(ClassUnicode, &str), GoError>> {
    let end = s.get(2..)?.find(":]")? + 2;
    let (name, rest) = (&s[..end + 2], &s[end + 2..]);
    let (negated, bare) = match name[2..end].strip_prefix('^') {
        Some(bare) => (true, bare),
        None => (false, &name[2..end]),
    };
    let ranges: &[(char, char)] = match bare {
        "alnum" => &[('0', '9'), ('A', 'Z'), ('a', 'z')],
        "alpha" => &[('A', 'Z'), ('a', 'z')],
        "ascii" => &[('\0', '\x7F')],
        "blank" => &[('\t', '\t'), (' ', ' ')],
        "cntrl" => &[('\0', '\x1F'), ('\x7F', '\x7F')],
        "digit" => &[('0', '9')],
        "graph" => &[('!', '~')],
        "lower" => &[('a', 'z')],
        "print" => &[(' ', '~')],
        "punct" => &[('!', '/'), (':', '@'), ('[', '`'), ('{', '~')],
        "space" => &[('\t', '\r'), (' ', ' ')],
        "upper" => &[('A', 'Z')],
        "word" => &[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')],
        "xdigit" => &[('0', '9'), ('A', 'F'), ('a', 'f')],
        _ => return Some(Err(GoError::new(Code::InvalidCharRange, name))),
    };
    Some(Ok((group(ranges, negated, flags), rest)))
}

/// A named group: folded first under `(?i)`, then negated, as Go builds it.
fn group(ranges: &[(char, char)], negated: bool, flags: Flags) -> ClassUnicode {
    let mut class = ClassUnicode::new(ranges.iter().map(|&(a, b)| ClassUnicodeRange::new(a, b)));
    if flags.fold() {
        class.case_fold_simple();
    }
    if negated {
        class.negate();
    }
    class
}

/// A Unicode class: what it holds (folded and negated as Go builds it) and, when the regex
/// crate can say the same by name, that name (`\p{gc=Lu}`, `\P{sc=Greek}`).
pub(super) struct Named {
    pub(super) set: ClassUnicode,
    pub(super) text: Option<String>,
}

/// `\pL`, `\p{Greek}`, `\P{...}`, `\p{^...}`; `None` when `s` is not one.
pub(super) fn unicode_class(s: &str, flags: Flags) -> Option<Result<(Named, &str), GoError>> {
    let negated = match s.as_bytes() {
        [b'\\', b'p', ..] => false,
        [b'\\', b'P', ..] => true,
        _ => return None,
    };
    let t = &s[2..];
    let (seq, name, rest) = if let Some(body) = t.strip_prefix('{') {
        let Some(end) = body.find('}') else {
            return Some(Err(GoError::new(Code::InvalidCharRange, s)));
        };
        (&s[..3 + end + 1], &body[..end], &body[end + 1..])
    } else {
        let len = t.chars().next().map_or(0, char::len_utf8);
        (&s[..2 + len], &t[..len], &t[len..])
    };
    let (negated, name) = match name.strip_prefix('^') {
        Some(name) => (!negated, name),
        None => (negated, name),
    };
    let Some(expr) = names::lookup(name) else {
        return Some(Err(GoError::new(Code::InvalidCharRange, seq)));
    };
    let mut set = builtin(&expr);
    if flags.fold() {
        set.case_fold_simple();
    }
    if negated {
        set.negate();
    }
    // Under `(?i)` the crate folds a `\P{...}` before negating it, as Go does.
    let text = match (expr.strip_prefix(r"\p"), expr.strip_prefix(r"\P")) {
        (Some(name), _) => Some(format!(r"\{}{name}", if negated { 'P' } else { 'p' })),
        (_, Some(name)) => Some(format!(r"\{}{name}", if negated { 'p' } else { 'P' })),
        _ => None,
    };
    Some(Ok((Named { set, text }, rest)))
}

/// The set the regex crate's tables give for a class expression of ours. Built once per name
/// (there are a few hundred): a pattern may repeat `\pL` thousands of times.
fn builtin(expr: &str) -> ClassUnicode {
    static BUILT: LazyLock<Mutex<HashMap<String, ClassUnicode>>> = LazyLock::new(Default::default);
    let mut built = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let class = built.entry(expr.to_string()).or_insert_with(|| {
        match regex_syntax::Parser::new()
            .parse(expr)
            .map(|h| h.into_kind())
        {
            Ok(HirKind::Class(Class::Unicode(class))) => class,
            // `lookup` only returns expressions the tests compile; `[a&&b]` is empty.
            _ => ClassUnicode::empty(),
        }
    });
    class.clone()
}

/// Reads a bracketed class at the start of `s` (which starts with `[`).
pub(super) fn bracket(s: &str, flags: Flags) -> Result<(ClassUnicode, &str), GoError> {
    let mut t = &s[1..];
    let negated = t.starts_with('^');
    if negated {
        t = &t[1..];
    }
    let mut class = ClassUnicode::empty();
    let mut first = true; // `]` is a member when first
    while first || !t.starts_with(']') {
        first = false;
        if t.starts_with("[:") && t.len() > 2 {
            if let Some(found) = posix_class(t, flags) {
                let (part, rest) = found?;
                class.union(&part);
                t = rest;
                continue;
            }
        }
        if let Some(found) = unicode_class(t, flags) {
            let (part, rest) = found?;
            class.union(&part.set);
            t = rest;
            continue;
        }
        if let Some((part, rest)) = perl_class(t, flags) {
            class.union(&part);
            t = rest;
            continue;
        }
        let range_start = t;
        let (lo, rest) = class_char(t, s)?;
        t = rest;
        let mut hi = lo;
        // `a-]` means `a` and `-`.
        if t.len() >= 2 && t.starts_with('-') && !t[1..].starts_with(']') {
            let (end, rest) = class_char(&t[1..], s)?;
            t = rest;
            if end < lo {
                let text = &range_start[..range_start.len() - t.len()];
                return Err(GoError::new(Code::InvalidCharRange, text));
            }
            hi = end;
        }
        let mut part = ranges(lo, hi);
        if flags.fold() {
            part.case_fold_simple();
        }
        class.union(&part);
    }
    if negated {
        class.negate();
    }
    Ok((class, &t[1..]))
}

/// One member character of a class; `whole` is the class from its `[`, for Go's error text.
fn class_char<'a>(t: &'a str, whole: &str) -> Result<(u32, &'a str), GoError> {
    if t.is_empty() {
        return Err(GoError::new(Code::MissingBracket, whole));
    }
    if t.starts_with('\\') {
        return parse_escape(t);
    }
    let c = t.chars().next().unwrap_or_default();
    Ok((c as u32, &t[c.len_utf8()..]))
}

/// The code points `lo..=hi`, leaving out surrogates (text never holds them).
pub(super) fn ranges(lo: u32, hi: u32) -> ClassUnicode {
    let clip = |a: u32, b: u32| -> Option<ClassUnicodeRange> {
        Some(ClassUnicodeRange::new(
            char::from_u32(a)?,
            char::from_u32(b)?,
        ))
    };
    let parts = [
        clip(lo, hi.min(0xD7FF)).filter(|_| lo <= 0xD7FF),
        clip(lo.max(0xE000), hi).filter(|_| hi >= 0xE000),
    ];
    ClassUnicode::new(parts.into_iter().flatten())
}

/// The class in the regex crate's syntax: explicit ranges, never its own class operators.
pub(super) fn class_text(class: &ClassUnicode) -> String {
    if class.ranges().is_empty() {
        // Matches nothing, as Go's empty class (`[^\x00-\x{10FFFF}]`).
        return r"[a&&b]".to_string();
    }
    let mut out = String::from("[");
    for range in class.iter() {
        push_char(&mut out, range.start());
        if range.end() != range.start() {
            out.push('-');
            push_char(&mut out, range.end());
        }
    }
    out.push(']');
    out
}

fn push_char(out: &mut String, c: char) {
    if c.is_ascii_alphanumeric() {
        out.push(c);
    } else {
        out.push_str(&format!(r"\x{{{:X}}}", c as u32));
    }
}

/// A single character for the regex crate, outside a class.
pub(super) fn literal_text(c: char) -> String {
    if regex_syntax::is_meta_character(c) {
        format!("\\{c}")
    } else if c.is_ascii_graphic() {
        c.to_string()
    } else {
        let mut out = String::new();
        push_char(&mut out, c);
        out
    }
}
