//! CEL's grammar (cel-spec's `langdef.md`), by recursive descent, as cel-go's parser reads it:
//! `?:` below `||` below `&&` below the relations (`in` among them) below `+ -` below
//! `* / %` below the unary operators (an even run of `!` or `-` is dropped, an odd one is one)
//! below members; a `-` before a number is part of it; chains of `&&` and `||` balanced as
//! cel-go balances them. Macros and functions resolve here; what the subset lacks is refused.

use super::ast::{Expr, Op};
use super::calls::{global, method};
use super::lex::{tokens, Syntax, Tok};
use super::value::Value;

/// Brackets, calls and ternaries nested at most this deep.
pub const MAX_NESTING: usize = 32;

/// CEL's reserved words, refused as identifiers.
const RESERVED: [&str; 18] = [
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
    "in",
];

pub fn parse(src: &str) -> Result<Expr, Syntax> {
    let mut p = Parser {
        toks: tokens(src)?,
        pos: 0,
        depth: 0,
        end: src.len(),
    };
    let e = p.expr()?;
    match p.toks.get(p.pos) {
        None => Ok(e),
        Some((t, at)) => Err(Syntax::at(format!("unexpected {}", shown(t)), *at)),
    }
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    depth: usize,
    /// The expression's length: where "expected ... at the end" points.
    end: usize,
}

fn shown(t: &Tok) -> String {
    match t {
        Tok::Op(op) => format!("'{op}'"),
        Tok::Ident(name) => format!("'{name}'"),
        _ => "a literal".into(),
    }
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(t, _)| t)
    }

    fn peek_op(&self, op: &str) -> bool {
        matches!(self.peek(), Some(Tok::Op(o)) if *o == op)
    }

    fn eat(&mut self, op: &str) -> bool {
        let found = self.peek_op(op) || matches!(self.peek(), Some(Tok::Ident(i)) if i == op);
        self.pos += usize::from(found);
        found
    }

    fn expect(&mut self, op: &str) -> Result<(), Syntax> {
        match self.eat(op) {
            true => Ok(()),
            false => Err(self.unexpected(&format!("'{op}'"))),
        }
    }

    fn unexpected(&self, wanted: &str) -> Syntax {
        match self.toks.get(self.pos) {
            Some((t, at)) => Syntax::at(format!("expected {wanted}, found {}", shown(t)), *at),
            None => Syntax::at(format!("expected {wanted}"), self.end),
        }
    }

    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, Syntax>) -> Result<T, Syntax> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            let what = format!("the expression is nested over {MAX_NESTING} deep");
            return Err(Syntax::from(what));
        }
        let out = f(self);
        self.depth -= 1;
        out
    }

    fn expr(&mut self) -> Result<Expr, Syntax> {
        self.nested(|p| {
            let cond = p.chain("||")?;
            if !p.eat("?") {
                return Ok(cond);
            }
            let yes = p.chain("||")?;
            p.expect(":")?;
            let no = p.expr()?;
            Ok(Expr::Cond(Box::new(cond), Box::new(yes), Box::new(no)))
        })
    }

    /// A chain of `||` (of `&&` within), balanced.
    fn chain(&mut self, op: &str) -> Result<Expr, Syntax> {
        let mut terms = vec![self.term(op)?];
        while self.eat(op) {
            terms.push(self.term(op)?);
        }
        Ok(balance(op, terms))
    }

    fn term(&mut self, op: &str) -> Result<Expr, Syntax> {
        match op {
            "||" => self.chain("&&"),
            _ => self.relation(),
        }
    }

    fn relation(&mut self) -> Result<Expr, Syntax> {
        let mut e = self.sum()?;
        let ops = [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)];
        let ops = ops
            .into_iter()
            .chain([("==", Op::Eq), ("!=", Op::Ne), ("in", Op::In)]);
        let ops: Vec<_> = ops.collect();
        while let Some((_, op)) = ops.iter().find(|(text, _)| self.eat(text)) {
            e = Expr::Binary(*op, Box::new(e), Box::new(self.sum()?));
        }
        Ok(e)
    }

    fn sum(&mut self) -> Result<Expr, Syntax> {
        let mut e = self.product()?;
        while let Some(op) = [("+", Op::Add), ("-", Op::Sub)]
            .into_iter()
            .find(|(t, _)| self.eat(t))
        {
            e = Expr::Binary(op.1, Box::new(e), Box::new(self.product()?));
        }
        Ok(e)
    }

    fn product(&mut self) -> Result<Expr, Syntax> {
        let mut e = self.unary()?;
        let ops = [("*", Op::Mul), ("/", Op::Div), ("%", Op::Rem)];
        while let Some(op) = ops.into_iter().find(|(t, _)| self.eat(t)) {
            e = Expr::Binary(op.1, Box::new(e), Box::new(self.unary()?));
        }
        Ok(e)
    }

    fn unary(&mut self) -> Result<Expr, Syntax> {
        for op in ["!", "-"] {
            let mut count = 0;
            while self.eat(op) {
                count += 1;
            }
            if count == 0 {
                continue;
            }
            if op == "-" && self.number_alone() {
                count -= 1;
            }
            let e = self.member()?;
            return Ok(match (count % 2, op) {
                (0, _) => e,
                (_, "!") => Expr::Not(Box::new(e)),
                _ => Expr::Neg(Box::new(e)),
            });
        }
        self.member()
    }

    /// Whether a number follows with no member after it: then a `-` before it is its sign.
    fn number_alone(&mut self) -> bool {
        let number = match self.peek() {
            Some(Tok::Int(text)) => Tok::Int(format!("-{text}")),
            Some(Tok::Double(text)) => Tok::Double(format!("-{text}")),
            _ => return false,
        };
        let after = self.toks.get(self.pos + 1).map(|(t, _)| t);
        if matches!(after, Some(Tok::Op("." | "["))) {
            return false;
        }
        self.toks[self.pos].0 = number;
        true
    }

    fn member(&mut self) -> Result<Expr, Syntax> {
        let mut e = self.primary()?;
        loop {
            if self.eat(".") {
                let name = self.ident()?;
                e = match self.peek_op("(") {
                    true => {
                        let args = self.args(")")?;
                        method(e, &name, args).map_err(Syntax::from)?
                    }
                    false => Expr::Select(Box::new(e), name.into()),
                };
            } else if self.eat("[") {
                let index = self.nested(|p| p.expr())?;
                self.expect("]")?;
                e = Expr::Index(Box::new(e), Box::new(index));
            } else {
                return Ok(e);
            }
        }
    }

    fn ident(&mut self) -> Result<String, Syntax> {
        match self.peek() {
            Some(Tok::Ident(name)) if !RESERVED.contains(&name.as_str()) => {
                let name = name.clone();
                self.pos += 1;
                Ok(name)
            }
            _ => Err(self.unexpected("a name")),
        }
    }

    /// `(a, b, ...)` or `[a, b, ...]` after its opening bracket is peeked; a trailing comma
    /// is allowed in lists, as CEL's grammar allows it.
    fn args(&mut self, close: &str) -> Result<Vec<Expr>, Syntax> {
        self.pos += 1;
        self.nested(|p| {
            let mut args = Vec::new();
            while !p.eat(close) {
                if !args.is_empty() {
                    p.expect(",")?;
                    if close == "]" && p.eat(close) {
                        break;
                    }
                }
                args.push(p.expr()?);
            }
            Ok(args)
        })
    }

    fn primary(&mut self) -> Result<Expr, Syntax> {
        let Some((tok, at)) = self.toks.get(self.pos).cloned() else {
            return Err(self.unexpected("an expression"));
        };
        let literal = |v: Value| Ok(Expr::Literal(v));
        match tok {
            Tok::Int(text) => {
                self.pos += 1;
                let out_of_range = || Syntax::at(format!("int literal {text} out of range"), at);
                literal(Value::Int(int_literal(&text).ok_or_else(out_of_range)?))
            }
            Tok::Uint(u) => {
                self.pos += 1;
                literal(Value::Uint(u))
            }
            Tok::Double(text) => {
                self.pos += 1;
                let d: f64 = text
                    .parse()
                    .map_err(|_| Syntax::at("invalid double literal", at))?;
                if !d.is_finite() {
                    return Err(Syntax::at(format!("invalid double literal {text}"), at));
                }
                literal(Value::Double(d))
            }
            Tok::Str(s) => {
                self.pos += 1;
                literal(Value::string(&s))
            }
            Tok::Bytes(b) => {
                self.pos += 1;
                literal(Value::Bytes(b.into()))
            }
            Tok::Op("(") => {
                self.pos += 1;
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Op("[") => Ok(Expr::List(self.args("]")?)),
            Tok::Op("{") => self.map(),
            Tok::Ident(_) => self.name(),
            _ => Err(self.unexpected("an expression")),
        }
    }

    fn name(&mut self) -> Result<Expr, Syntax> {
        let name = self.ident()?;
        if self.peek_op("(") {
            let args = self.args(")")?;
            return global(&name, args).map_err(Syntax::from);
        }
        if self.peek_op("{") {
            let what = format!("'{name}{{...}}': message literals are not supported");
            return Err(Syntax::from(what));
        }
        Ok(match name.as_str() {
            "true" => Expr::Literal(Value::Bool(true)),
            "false" => Expr::Literal(Value::Bool(false)),
            "null" => Expr::Literal(Value::Null),
            _ => Expr::Var(name.into()),
        })
    }

    fn map(&mut self) -> Result<Expr, Syntax> {
        self.pos += 1;
        self.nested(|p| {
            let mut entries = Vec::new();
            while !p.eat("}") {
                if !entries.is_empty() {
                    p.expect(",")?;
                    if p.eat("}") {
                        break;
                    }
                }
                let key = p.expr()?;
                p.expect(":")?;
                entries.push((key, p.expr()?));
            }
            Ok(Expr::Map(entries))
        })
    }
}

fn balance(op: &str, mut terms: Vec<Expr>) -> Expr {
    if terms.len() == 1 {
        return terms.pop().unwrap_or(Expr::Literal(Value::Null));
    }
    let right = terms.split_off(terms.len() / 2);
    let (l, r) = (Box::new(balance(op, terms)), Box::new(balance(op, right)));
    match op {
        "||" => Expr::Or(l, r),
        _ => Expr::And(l, r),
    }
}

/// An int literal with its sign, decimal or hex, within int64.
fn int_literal(text: &str) -> Option<i64> {
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text),
    };
    match digits.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(&format!("{sign}{hex}"), 16).ok(),
        None => format!("{sign}{digits}").parse().ok(),
    }
}
