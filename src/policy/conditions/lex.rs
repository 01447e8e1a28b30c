//! CEL's tokens (cel-spec's `langdef.md`, "Syntax"): numbers (decimal and hex ints, `u`
//! uints, doubles), strings and bytes in every quoting with CEL's escapes, identifiers,
//! operators; `//` comments and whitespace between. What CEL does not define is an error here.

/// A syntax error: what is wrong, and the byte offset where (`None`: no one place, as a bound
/// or a call that does not exist); `pointed.rs` shows it with a caret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Syntax {
    pub what: String,
    pub at: Option<usize>,
}

impl Syntax {
    pub fn at(what: impl Into<String>, offset: usize) -> Syntax {
        let (what, at) = (what.into(), Some(offset));
        Syntax { what, at }
    }
}

/// What a call's checks refuse (calls.rs) is no one place's.
impl From<String> for Syntax {
    fn from(what: String) -> Syntax {
        Syntax { what, at: None }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// An int literal's digits as written (decimal or `0x` hex), its sign applied by the parser.
    Int(String),
    Uint(u64),
    Double(String),
    Str(String),
    Bytes(Vec<u8>),
    Ident(String),
    /// Punctuation and operators, as written.
    Op(&'static str),
}

const OPS: [&str; 24] = [
    "==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "-", "+", "*", "/", "%", "?", ":", ".", ",",
    "(", ")", "[", "]", "{", "}",
];

/// The tokens of `src`, each with its byte offset.
pub fn tokens(src: &str) -> Result<Vec<(Tok, usize)>, Syntax> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c') {
            i += 1;
            continue;
        }
        if src[i..].starts_with("//") {
            i += src[i..].find('\n').unwrap_or(src.len() - i);
            continue;
        }
        let start = i;
        let tok =
            if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
                number(src, &mut i)?
            } else if let Some((prefix, quote)) = string_start(&src[i..]) {
                i += prefix;
                string(src, &mut i, quote, start)?
            } else if c == b'_' || c.is_ascii_alphabetic() {
                let len = src[i..]
                    .bytes()
                    .take_while(|c| *c == b'_' || c.is_ascii_alphanumeric())
                    .count();
                i += len;
                Tok::Ident(src[start..i].to_string())
            } else if let Some(op) = OPS.iter().find(|op| src[i..].starts_with(**op)) {
                i += op.len();
                Tok::Op(op)
            } else {
                let ch = src[i..].chars().next().unwrap_or('?');
                return Err(Syntax::at(format!("unexpected character {ch:?}"), i));
            };
        out.push((tok, start));
    }
    Ok(out)
}

fn number(src: &str, i: &mut usize) -> Result<Tok, Syntax> {
    let b = src.as_bytes();
    let start = *i;
    let rest = &src[start..];
    let bad = || Syntax::at("invalid number", start);
    if let Some(hex) = rest.strip_prefix("0x") {
        let len = hex.bytes().take_while(u8::is_ascii_hexdigit).count();
        if len == 0 {
            return Err(bad());
        }
        *i += 2 + len;
        return suffixed(src, i, &src[start..*i]);
    }
    let digits = |from: usize| src[from..].bytes().take_while(u8::is_ascii_digit).count();
    *i += digits(*i);
    let mut double = false;
    if b.get(*i) == Some(&b'.') && b.get(*i + 1).is_some_and(u8::is_ascii_digit) {
        *i += 1 + digits(*i + 1);
        double = true;
    }
    if matches!(b.get(*i), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(*i + 1), Some(b'+' | b'-')));
        let exp = digits(*i + 1 + sign);
        if exp == 0 {
            return Err(bad());
        }
        *i += 1 + sign + exp;
        double = true;
    }
    let text = &src[start..*i];
    if double {
        return Ok(Tok::Double(text.to_string()));
    }
    suffixed(src, i, text)
}

/// An int literal, or a uint with its `u` suffix.
fn suffixed(src: &str, i: &mut usize, text: &str) -> Result<Tok, Syntax> {
    if matches!(src.as_bytes().get(*i), Some(b'u' | b'U')) {
        *i += 1;
        let value = match text.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => text.parse(),
        };
        return value
            .map(Tok::Uint)
            .map_err(|_| Syntax::from(format!("uint literal {text}u out of range")));
    }
    Ok(Tok::Int(text.to_string()))
}

/// `(prefix length, quote)` when a string or bytes literal starts here.
fn string_start(rest: &str) -> Option<(usize, Quote)> {
    let prefix = rest
        .bytes()
        .take(2)
        .take_while(|c| matches!(c, b'r' | b'R' | b'b' | b'B'))
        .count();
    let flags = &rest[..prefix].to_ascii_lowercase();
    if prefix == 2 && flags != "rb" && flags != "br" {
        return None;
    }
    let after = &rest[prefix..];
    let delimiter = ["\"\"\"", "'''", "\"", "'"]
        .into_iter()
        .find(|d| after.starts_with(d))?;
    Some((
        prefix + delimiter.len(),
        Quote {
            delimiter,
            raw: flags.contains('r'),
            bytes: flags.contains('b'),
        },
    ))
}

#[derive(Clone, Copy)]
struct Quote {
    delimiter: &'static str,
    raw: bool,
    bytes: bool,
}

fn string(src: &str, i: &mut usize, q: Quote, start: usize) -> Result<Tok, Syntax> {
    let mut out: Vec<u8> = Vec::new();
    let unterminated = || Syntax::at("unterminated string", start);
    loop {
        let rest = &src[*i..];
        if rest.starts_with(q.delimiter) {
            *i += q.delimiter.len();
            break;
        }
        let c = rest.chars().next().ok_or_else(unterminated)?;
        if q.delimiter.len() == 1 && (c == '\n' || c == '\r') {
            return Err(unterminated());
        }
        if c == '\\' && !q.raw {
            *i += 1;
            super::escape::escape(src, i, q.bytes, &mut out).map_err(|e| Syntax::at(e, *i))?;
            continue;
        }
        let mut buf = [0; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        *i += c.len_utf8();
    }
    match q.bytes {
        true => Ok(Tok::Bytes(out)),
        false => String::from_utf8(out)
            .map(Tok::Str)
            .map_err(|_| Syntax::at("invalid UTF-8 in the string", start)),
    }
}
