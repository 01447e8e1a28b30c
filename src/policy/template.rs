//! `filterTags.extract`: Go's `Regexp.Expand`, compiled once per policy. `$name`/`$1` take the
//! longest run of letters, digits and `_` (so `$1x` names group `1x`), `${name}` is explicit,
//! `$$` is a dollar, a malformed `$` is literal, and a missing or non-participating group
//! expands to nothing. Names are Go's (`goregex` keeps them; the compiled regex has none).

use regex::Regex;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Piece {
    Literal(String),
    Group(usize),
    FirstOf(Box<[usize]>),
}

/// Appends the template's expansion for one match to `value`.
pub(super) fn expand(
    pieces: &[Piece],
    tag: &str,
    group: impl Fn(usize) -> Option<(usize, usize)>,
    value: &mut String,
) {
    for piece in pieces {
        match piece {
            Piece::Literal(text) => value.push_str(text),
            Piece::Group(index) => {
                if let Some((start, end)) = group(*index) {
                    value.push_str(&tag[start..end]);
                }
            }
            Piece::FirstOf(indexes) => {
                if let Some((start, end)) = indexes.iter().find_map(|&i| group(i)) {
                    value.push_str(&tag[start..end]);
                }
            }
        }
    }
}

/// Compiles an extract template against the pattern's groups (Go's names by index),
/// following Go's rules.
pub(super) fn compile_template(names: &[Option<String>], template: &str) -> Vec<Piece> {
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
        match group_index(names, name) {
            Reference::None => {}
            Reference::One(index) => pieces.push(Piece::Group(index)),
            Reference::FirstOf(indexes) => pieces.push(Piece::FirstOf(indexes)),
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
    // Go's `unicode.IsLetter` (category L), `IsDigit` (Nd) and `_`.
    static NAME: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r"\A[\p{L}\p{Nd}_]*").expect("a valid expression"));
    let end = NAME.find(body).map_or(0, |m| m.end());
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

/// What a `$name` in a template refers to.
enum Reference {
    None,
    One(usize),
    /// Several groups share the name (Go allows it): the first that took part in the match.
    FirstOf(Box<[usize]>),
}

/// A number (without leading zeros, below 10⁸) is a group index; anything else a group name.
fn group_index(names: &[Option<String>], name: &str) -> Reference {
    let numeric =
        name.bytes().all(|b| b.is_ascii_digit()) && !(name.len() > 1 && name.starts_with('0'));
    // Go reads a number as an index; one with a leading zero or of 10⁸ or more as a name
    // (a group may be called `01`).
    match name.parse::<usize>() {
        Ok(index) if numeric && index < 100_000_000 => {
            return match index < names.len() {
                true => Reference::One(index),
                false => Reference::None,
            };
        }
        _ => {}
    }
    let found: Vec<usize> = (0..names.len())
        .filter(|&i| names[i].as_deref() == Some(name))
        .collect();
    match found.as_slice() {
        [] => Reference::None,
        [one] => Reference::One(*one),
        _ => Reference::FirstOf(found.into()),
    }
}
