//! The parser: Go's `regexp/syntax.Parse` with the `Perl` flags, step for step where it
//! decides whether a pattern is valid and what an error says; the regex crate's text out.

use super::class::{self, bracket, parse_escape, perl_class};
use super::node::{Node, Repeat};
use super::{Code, Flags, GoError, Translated};

/// The largest count in `x{n,m}`, and of nested counts multiplied together.
const MAX_REPEAT: u64 = 1000;
/// Go's limit on the height of the parse tree.
const MAX_HEIGHT: u32 = 1000;
/// Go's limit on the compiled program, in instructions (128 MiB of 40-byte instructions).
const MAX_SIZE: u64 = (128 << 20) / 40;
/// Go's limit on the code points held by all classes together (128 MiB of runes).
const MAX_RUNES: u64 = (128 << 20) / 4;
/// Our bound on the translated text, which the regex crate then parses: 4 MiB. Go's own
/// limits let a pattern of Unicode classes in brackets expand far beyond what could compile
/// within the crate's size limit (docs/security.md).
const MAX_TEXT: usize = 4 << 20;

/// Translates a Go pattern, or fails with Go's error.
pub fn translate(pattern: &str) -> Result<Translated, GoError> {
    let mut parser = Parser {
        whole: pattern,
        flags: Flags(0),
        frames: vec![Frame::new(Open::Top, Flags(0))],
        names: vec![None],
        runes: 0,
    };
    parser.run()?;
    if parser.frames.len() > 1 {
        return Err(GoError::new(Code::MissingParen, pattern));
    }
    let top = parser.frames.pop().expect("the top frame");
    let node = parser.finish(top)?;
    let height = node.height;
    Ok(Translated {
        pattern: node.render(),
        names: parser.names,
        height,
    })
}

#[derive(Debug, PartialEq, Eq)]
enum Open {
    Top,
    Group,
    Capture,
}

/// An open group: the finished alternatives and the items of the current one.
struct Frame {
    open: Open,
    /// The flags to restore at its `)`.
    saved: Flags,
    branches: Vec<Node>,
    items: Vec<Node>,
}

impl Frame {
    fn new(open: Open, saved: Flags) -> Frame {
        Frame {
            open,
            saved,
            branches: Vec::new(),
            items: Vec::new(),
        }
    }
}

struct Parser<'a> {
    whole: &'a str,
    flags: Flags,
    frames: Vec<Frame>,
    names: Vec<Option<String>>,
    runes: u64,
}

impl<'a> Parser<'a> {
    fn run(&mut self) -> Result<(), GoError> {
        let mut t = self.whole;
        // Where the previous step's repetition operator started, if it was one: Go refuses
        // a second operator right after it (`a**`), naming both.
        let mut last_repeat: &'a str = "";
        while let Some(first) = t.chars().next() {
            let mut repeat: &'a str = "";
            match first {
                '(' if t[1..].starts_with('?') => t = self.perl_flags(t)?,
                '(' => {
                    self.names.push(None);
                    self.open(Open::Capture);
                    t = &t[1..];
                }
                '|' => {
                    self.alternate()?;
                    t = &t[1..];
                }
                ')' => {
                    self.close()?;
                    t = &t[1..];
                }
                '^' | '$' | '.' => {
                    self.anchor_or_any(first)?;
                    t = &t[1..];
                }
                '[' => {
                    let (class, rest) = bracket(t, self.flags)?;
                    self.push(Node::class(&class))?;
                    t = rest;
                }
                '*' | '+' | '?' => {
                    let op = match first {
                        '*' => Repeat::Star,
                        '+' => Repeat::Plus,
                        _ => Repeat::Quest,
                    };
                    let before = t;
                    t = self.repeat(op, before, &before[1..], last_repeat)?;
                    repeat = before;
                }
                '{' => (t, repeat) = self.counted(t, last_repeat)?,
                '\\' => t = self.escape(t)?,
                _ => {
                    self.push(Node::literal(first as u32, self.flags.fold()))?;
                    t = &t[first.len_utf8()..];
                }
            }
            last_repeat = repeat;
        }
        Ok(())
    }

    /// `|`: the items so far are a branch of the frame's alternation.
    fn alternate(&mut self) -> Result<(), GoError> {
        let items = std::mem::take(&mut self.frame().items);
        let branch = self.checked(Node::concat(items))?;
        self.frame().branches.push(branch);
        Ok(())
    }

    /// `^`, `$` or `.`, as the flags in effect make them.
    fn anchor_or_any(&mut self, first: char) -> Result<(), GoError> {
        let multi_line = self.flags.has(Flags::MULTI_LINE);
        let text = match first {
            '^' if multi_line => "(?m:^)",
            '$' if multi_line => "(?m:$)",
            '.' if self.flags.has(Flags::DOT_NL) => "(?s:.)",
            '^' => "^",
            '$' => "$",
            _ => ".",
        };
        self.push(Node::leaf(text, first != '.'))
    }

    /// `{`: a count (`{n}`, `{n,}`, `{n,m}`) within Go's bounds, or a literal `{` when it is
    /// not a well-formed count. Returns the rest, and where a repetition began (empty: none).
    fn counted(&mut self, t: &'a str, last_repeat: &'a str) -> Result<(&'a str, &'a str), GoError> {
        let Some((min, max, after)) = parse_repeat(t) else {
            self.push(Node::literal('{' as u32, self.flags.fold()))?;
            return Ok((&t[1..], ""));
        };
        let limit = MAX_REPEAT as i64;
        if min < 0 || min > limit || max > limit || max >= 0 && min > max {
            let fragment = &t[..t.len() - after.len()];
            return Err(GoError::new(Code::InvalidRepeatSize, fragment));
        }
        let op = Repeat::Count(min as u64, u64::try_from(max).ok());
        Ok((self.repeat(op, t, after, last_repeat)?, t))
    }

    fn frame(&mut self) -> &mut Frame {
        self.frames
            .last_mut()
            .expect("the top frame is never closed")
    }

    fn open(&mut self, open: Open) {
        let frame = Frame::new(open, self.flags);
        self.frames.push(frame);
    }

    /// Go's limits, checked on every node it builds: the size of the compiled program, the
    /// code points in classes, and the height of the tree.
    fn checked(&mut self, node: Node) -> Result<Node, GoError> {
        if node.size > MAX_SIZE || self.runes > MAX_RUNES || node.len > MAX_TEXT {
            return Err(GoError::new(Code::Large, self.whole));
        }
        if node.height > MAX_HEIGHT {
            return Err(GoError::new(Code::NestingDepth, self.whole));
        }
        Ok(node)
    }

    fn push(&mut self, node: Node) -> Result<(), GoError> {
        self.runes += node.runes;
        let node = self.checked(node)?;
        self.frame().items.push(node);
        Ok(())
    }

    /// Applies a repetition operator (`before` starts at it, `after` follows it) to the last
    /// item, as Go's `parser.repeat`.
    fn repeat(
        &mut self,
        op: Repeat,
        before: &'a str,
        mut after: &'a str,
        last_repeat: &'a str,
    ) -> Result<&'a str, GoError> {
        let mut ungreedy = self.flags.has(Flags::UNGREEDY);
        if let Some(rest) = after.strip_prefix('?') {
            after = rest;
            ungreedy = !ungreedy;
        }
        if !last_repeat.is_empty() {
            let fragment = &last_repeat[..last_repeat.len() - after.len()];
            return Err(GoError::new(Code::InvalidRepeatOp, fragment));
        }
        let Some(sub) = self.frame().items.pop() else {
            let fragment = &before[..before.len() - after.len()];
            return Err(GoError::new(Code::MissingRepeatArgument, fragment));
        };
        let node = self.checked(Node::repeat(sub, op, ungreedy))?;
        if let Repeat::Count(min, max) = op {
            if (min >= 2 || max.is_some_and(|m| m >= 2)) && node.budget > MAX_REPEAT {
                let fragment = &before[..before.len() - after.len()];
                return Err(GoError::new(Code::InvalidRepeatSize, fragment));
            }
        }
        self.frame().items.push(node);
        Ok(after)
    }

    /// `)`: closes the innermost group.
    fn close(&mut self) -> Result<(), GoError> {
        if self.frames.len() == 1 {
            return Err(GoError::new(Code::UnexpectedParen, self.whole));
        }
        let frame = self.frames.pop().expect("an open group");
        self.flags = frame.saved;
        let capture = frame.open == Open::Capture;
        let mut node = self.finish(frame)?;
        if capture {
            node = Node::capture(node);
        }
        self.push(node)
    }

    /// The alternation of a group's branches.
    fn finish(&mut self, mut frame: Frame) -> Result<Node, GoError> {
        let last = self.checked(Node::concat(std::mem::take(&mut frame.items)))?;
        frame.branches.push(last);
        self.checked(Node::alternate(frame.branches))
    }

    /// `(?flags)`, `(?flags:`, `(?:`, `(?P<name>`, `(?<name>`: Go's `parsePerlFlags`.
    fn perl_flags(&mut self, s: &'a str) -> Result<&'a str, GoError> {
        let b = s.as_bytes();
        let with_p = b.len() > 4 && b[2] == b'P' && b[3] == b'<';
        let bare = b.len() > 3 && b[2] == b'<';
        if with_p || bare {
            let Some(end) = s.find('>') else {
                return Err(GoError::new(Code::InvalidNamedCapture, s));
            };
            let name = &s[if with_p { 4 } else { 3 }..end];
            let valid =
                !name.is_empty() && name.bytes().all(|c| c == b'_' || c.is_ascii_alphanumeric());
            if !valid {
                return Err(GoError::new(Code::InvalidNamedCapture, &s[..end + 1]));
            }
            self.names.push(Some(name.to_string()));
            self.open(Open::Capture);
            return Ok(&s[end + 1..]);
        }
        let mut flags = self.flags;
        let mut negated = false;
        let mut saw_flag = false;
        let mut t = &s[2..];
        while let Some(c) = t.chars().next() {
            t = &t[c.len_utf8()..];
            let flag = match c {
                'i' => Flags::FOLD,
                'm' => Flags::MULTI_LINE,
                's' => Flags::DOT_NL,
                'U' => Flags::UNGREEDY,
                '-' if !negated => {
                    negated = true;
                    saw_flag = false;
                    continue;
                }
                ':' | ')' if !negated || saw_flag => {
                    if c == ':' {
                        self.open(Open::Group);
                    }
                    self.flags = flags;
                    return Ok(t);
                }
                _ => break,
            };
            saw_flag = true;
            flags = match negated {
                false => Flags(flags.0 | flag),
                true => Flags(flags.0 & !flag),
            };
        }
        Err(GoError::new(Code::InvalidPerlOp, &s[..s.len() - t.len()]))
    }

    /// A backslash outside a class: assertions, `\Q...\E`, classes, or one character.
    fn escape(&mut self, t: &'a str) -> Result<&'a str, GoError> {
        let assertion = match t.as_bytes().get(1) {
            Some(b'A') => Some(r"\A"),
            Some(b'z') => Some(r"\z"),
            // Go's word boundaries are ASCII.
            Some(b'b') => Some(r"(?-u:\b)"),
            Some(b'B') => Some(r"(?-u:\B)"),
            Some(b'C') => return Err(GoError::new(Code::InvalidEscape, &t[..2])),
            Some(b'Q') => {
                let (quoted, rest) = t[2..].split_once(r"\E").unwrap_or((&t[2..], ""));
                for c in quoted.chars() {
                    self.push(Node::literal(c as u32, self.flags.fold()))?;
                }
                return Ok(rest);
            }
            _ => None,
        };
        if let Some(text) = assertion {
            self.push(Node::leaf(text, true))?;
            return Ok(&t[2..]);
        }
        if let Some(found) = class::unicode_class(t, self.flags) {
            let (class, rest) = found?;
            // Outside brackets the crate's own `\p{...}` says the same in a few bytes.
            let node = match class.text {
                Some(text) => Node::named_class(text, &class.set, self.flags.fold()),
                None => Node::class(&class.set),
            };
            self.push(node)?;
            return Ok(rest);
        }
        if let Some((class, rest)) = perl_class(t, self.flags) {
            self.push(Node::class(&class))?;
            return Ok(rest);
        }
        let (value, rest) = parse_escape(t)?;
        self.push(Node::literal(value, self.flags.fold()))?;
        Ok(rest)
    }
}

/// `{n}`, `{n,}` or `{n,m}` at the start of `s`, as Go's `parseRepeat`: `(min, max, rest)`
/// with `max` -1 for no maximum and `min` -1 when a number is too big; `None` when `s` is not
/// of that form (then `{` is a literal). Leading zeros are not a number.
fn parse_repeat(s: &str) -> Option<(i64, i64, &str)> {
    let s = s.strip_prefix('{')?;
    let (mut min, s) = parse_int(s)?;
    let (max, s) = match s.strip_prefix(',') {
        None => (min, s),
        Some(s) if s.starts_with('}') => (-1, s),
        Some(s) => {
            let (max, s) = parse_int(s)?;
            if max < 0 {
                min = -1;
            }
            (max, s)
        }
    };
    let rest = s.strip_prefix('}')?;
    Some((min, max, rest))
}

/// A decimal number without leading zeros; -1 when it is 10⁸ or more.
fn parse_int(s: &str) -> Option<(i64, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits >= 2 && s.starts_with('0') {
        return None;
    }
    let value = match s[..digits].parse::<i64>() {
        Ok(v) if v < 100_000_000 => v,
        _ => -1,
    };
    Some((value, &s[digits..]))
}
