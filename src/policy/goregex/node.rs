//! The translated pieces: each knows its text for the regex crate (as a tree, written out once
//! at the end, so nesting costs no copying) and what Go's limits count for it.

use super::class::{class_text, literal_text};
use regex_syntax::hir::ClassUnicode;

/// Text built from parts without copying them.
#[derive(Clone, Debug)]
pub(super) enum Text {
    Str(String),
    Static(&'static str),
    Cat(Vec<Text>),
}

impl Text {
    fn write(&self, out: &mut String) {
        match self {
            Text::Str(s) => out.push_str(s),
            Text::Static(s) => out.push_str(s),
            Text::Cat(parts) => parts.iter().for_each(|p| p.write(out)),
        }
    }
}

/// One parsed piece, in the regex crate's syntax.
#[derive(Clone, Debug)]
pub(super) struct Node {
    text: Text,
    /// The length of the text.
    pub(super) len: usize,
    /// A single literal character, folded or not: runs of them are written together.
    literal: Option<bool>,
    /// Whether a repetition operator needs `(?:...)` around the text to apply to all of it.
    compound: bool,
    /// Go's compiled-size estimate.
    pub(super) size: u64,
    pub(super) height: u32,
    /// The smallest repeat budget Go's `repeatIsValid` needs for this subtree.
    pub(super) budget: u64,
    /// Code points Go counts for it (1 a literal, 2 per range of a class).
    pub(super) runes: u64,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Repeat {
    Star,
    Plus,
    Quest,
    Count(u64, Option<u64>),
}

impl Node {
    pub(super) fn leaf(text: &'static str, compound: bool) -> Node {
        Node::string(text.to_string(), compound)
    }

    fn string(text: String, compound: bool) -> Node {
        Node {
            len: text.len(),
            text: Text::Str(text),
            literal: None,
            compound,
            size: 1,
            height: 1,
            budget: 0,
            runes: 0,
        }
    }

    /// A node built from others: no literal of its own, no class code points.
    fn composite(
        text: Text,
        len: usize,
        compound: bool,
        size: u64,
        height: u32,
        budget: u64,
    ) -> Node {
        Node {
            text,
            len,
            literal: None,
            compound,
            size,
            height,
            budget,
            runes: 0,
        }
    }

    pub(super) fn literal(value: u32, fold: bool) -> Node {
        match char::from_u32(value) {
            Some(c) => Node {
                literal: Some(fold),
                runes: 1,
                ..Node::string(literal_text(c), false)
            },
            // A surrogate: valid UTF-8 text never holds one.
            None => Node::class(&ClassUnicode::empty()),
        }
    }

    pub(super) fn class(class: &ClassUnicode) -> Node {
        Node {
            runes: 2 * class.ranges().len() as u64,
            ..Node::string(class_text(class), false)
        }
    }

    /// A Unicode class written by name (`\p{gc=Lu}`); `set` is what it holds, for Go's count.
    pub(super) fn named_class(text: String, set: &ClassUnicode, fold: bool) -> Node {
        let text = if fold { format!("(?i:{text})") } else { text };
        Node {
            runes: 2 * set.ranges().len() as u64,
            ..Node::string(text, false)
        }
    }

    /// The text on its own, with its flag.
    fn standalone(self) -> Text {
        match self.literal {
            Some(true) => Text::Cat(vec![Text::Static("(?i:"), self.text, Text::Static(")")]),
            _ => self.text,
        }
    }

    fn standalone_len(&self) -> usize {
        self.len + if self.literal == Some(true) { 5 } else { 0 }
    }

    /// The whole translated pattern.
    pub(super) fn render(self) -> String {
        let mut out = String::with_capacity(self.standalone_len());
        self.standalone().write(&mut out);
        out
    }

    pub(super) fn concat(items: Vec<Node>) -> Node {
        if items.len() <= 1 {
            return items
                .into_iter()
                .next()
                .unwrap_or_else(|| Node::leaf("(?:)", false));
        }
        let size = items.iter().map(|n| n.size).sum::<u64>().max(1);
        let height = 1 + items.iter().map(|n| n.height).max().unwrap_or(0);
        let budget = items.iter().map(|n| n.budget).max().unwrap_or(0);
        let mut parts = Vec::with_capacity(items.len());
        let mut len = 0;
        let mut run: Option<bool> = None; // the fold of the open literal run
        for item in items {
            if run.is_some() && item.literal != run {
                if run == Some(true) {
                    parts.push(Text::Static(")"));
                    len += 1;
                }
                run = None;
            }
            if let Some(fold) = item.literal {
                if run.is_none() && fold {
                    parts.push(Text::Static("(?i:"));
                    len += 4;
                }
                run = Some(fold);
            }
            len += item.len;
            parts.push(item.text);
        }
        if run == Some(true) {
            parts.push(Text::Static(")"));
            len += 1;
        }
        Node::composite(Text::Cat(parts), len, true, size, height, budget)
    }

    pub(super) fn alternate(branches: Vec<Node>) -> Node {
        if branches.len() == 1 {
            return branches.into_iter().next().expect("one branch");
        }
        let size = branches.iter().map(|n| n.size).sum::<u64>() + branches.len() as u64 - 1;
        let height = 1 + branches.iter().map(|n| n.height).max().unwrap_or(0);
        let budget = branches.iter().map(|n| n.budget).max().unwrap_or(0);
        let mut len = 4 + branches.len() - 1;
        let mut parts = vec![Text::Static("(?:")];
        for (i, branch) in branches.into_iter().enumerate() {
            if i > 0 {
                parts.push(Text::Static("|"));
            }
            len += branch.standalone_len();
            parts.push(branch.standalone());
        }
        parts.push(Text::Static(")"));
        Node::composite(Text::Cat(parts), len, false, size, height, budget)
    }

    pub(super) fn capture(inner: Node) -> Node {
        let (size, height, budget) = (2 + inner.size, 1 + inner.height, inner.budget);
        let len = inner.standalone_len() + 2;
        let text = Text::Cat(vec![
            Text::Static("("),
            inner.standalone(),
            Text::Static(")"),
        ]);
        Node::composite(text, len, false, size, height, budget)
    }

    pub(super) fn repeat(sub: Node, rep: Repeat, ungreedy: bool) -> Node {
        let (op, size, budget) = match rep {
            Repeat::Star => ("*".to_string(), 2 + sub.size, sub.budget),
            Repeat::Plus => ("+".to_string(), 1 + sub.size, sub.budget),
            Repeat::Quest => ("?".to_string(), 1 + sub.size, sub.budget),
            Repeat::Count(min, max) => {
                let op = match max {
                    None => format!("{{{min},}}"),
                    Some(max) if max == min => format!("{{{min}}}"),
                    Some(max) => format!("{{{min},{max}}}"),
                };
                let size = match max {
                    None if min == 0 => 2 + sub.size,
                    None => 1 + min.saturating_mul(sub.size),
                    Some(max) => max.saturating_mul(sub.size) + (max - min),
                };
                // Go's repeatIsValid: `{0}` ends the walk, `{n,}` counts n, `{0,}` nothing.
                let budget = match max.unwrap_or(min) {
                    _ if max == Some(0) => 0,
                    0 => sub.budget,
                    m => m.saturating_mul(sub.budget.max(1)),
                };
                (op, size, budget)
            }
        };
        let height = 1 + sub.height;
        let op = if ungreedy { op + "?" } else { op };
        let mut len = sub.standalone_len() + op.len();
        let base = match sub.compound {
            true => {
                len += 4;
                Text::Cat(vec![
                    Text::Static("(?:"),
                    sub.standalone(),
                    Text::Static(")"),
                ])
            }
            false => sub.standalone(),
        };
        let text = Text::Cat(vec![base, Text::Str(op)]);
        Node::composite(text, len, true, size.max(1), height, budget)
    }
}
