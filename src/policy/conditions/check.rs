//! The type check cel-go runs before it accepts an expression, for this subset: every name
//! declared, every operator and function applied to types it has an overload for, list and
//! map literals homogeneous (the API server's option), macros nested at most
//! [`MAX_COMPREHENSION_DEPTH`] deep, and the whole a `bool` (or `dyn`). A static type is
//! `Dyn` where cel-go's would be (statement data); where both sides are known, an operator
//! with no overload is refused as cel-go refuses it, so `'a' == 1` never evaluates to false
//! here where cel-go would not compile it. Where this check is stricter than cel-go's (it joins
//! types less), the expression is refused: a documented difference that only ever holds.

use super::ast::{Expr, Func, LoopKind, Op};
use super::value::Value;
use super::VARIABLES;

/// Macros nested in each other at most this deep.
pub const MAX_COMPREHENSION_DEPTH: usize = 3;

#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    Dyn,
    /// The element of an empty literal: any type, and the same as any (cel-go's free type
    /// variable), unlike `dyn`, which a homogeneous literal does not mix with other types.
    Free,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Timestamp,
    Duration,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
}

use Ty as T;

impl std::fmt::Display for Ty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            T::List(e) => write!(f, "list({e})"),
            T::Map(k, v) => write!(f, "map({k}, {v})"),
            T::Null => f.write_str("null_type"),
            T::Timestamp => f.write_str("google.protobuf.Timestamp"),
            T::Duration => f.write_str("google.protobuf.Duration"),
            other => f.write_str(&format!("{other:?}").to_lowercase()),
        }
    }
}

/// Whether a value of one type may be where the other is expected (cel-go's unification,
/// without joining two different known types).
fn compatible(a: &Ty, b: &Ty) -> bool {
    match (a, b) {
        (T::Dyn | T::Free, _) | (_, T::Dyn | T::Free) => true,
        (T::List(x), T::List(y)) => compatible(x, y),
        (T::Map(k, v), T::Map(l, w)) => compatible(k, l) && compatible(v, w),
        _ => a == b,
    }
}

/// The type of two compatible types together: the known one where one side is dyn.
fn join(a: &Ty, b: &Ty) -> Ty {
    match (a, b) {
        (T::Dyn | T::Free, t) | (t, T::Dyn | T::Free) => t.clone(),
        (T::List(x), T::List(y)) => T::List(Box::new(join(x, y))),
        (T::Map(k, v), T::Map(l, w)) => T::Map(Box::new(join(k, l)), Box::new(join(v, w))),
        _ => a.clone(),
    }
}

/// Whether two types are the same, as a homogeneous literal wants its items: `dyn` is
/// only the same as `dyn`; an empty literal's element is the same as anything.
fn same(a: &Ty, b: &Ty) -> bool {
    match (a, b) {
        (T::Free, _) | (_, T::Free) => true,
        (T::List(x), T::List(y)) => same(x, y),
        (T::Map(k, v), T::Map(l, w)) => same(k, l) && same(v, w),
        _ => a == b,
    }
}

/// A type as an expression has it: an empty literal's element read is `dyn`.
fn open(t: Ty) -> Ty {
    match t {
        T::Free => T::Dyn,
        t => t,
    }
}

/// Checks `e`: its type, or why cel-go would not compile it.
pub fn type_of(e: &Expr) -> Result<Ty, String> {
    Checker {
        scope: Vec::new(),
        loops: 0,
    }
    .ty(e)
}

/// Checks `e` as a condition: [`type_of`], which must be `bool` (or `dyn`).
pub fn check(e: &Expr) -> Result<Ty, String> {
    let ty = type_of(e)?;
    match ty {
        T::Bool | T::Dyn => Ok(ty),
        other => Err(format!(
            "its type is {other}, not bool: a condition is true or false"
        )),
    }
}

struct Checker {
    scope: Vec<(std::sync::Arc<str>, Ty)>,
    loops: usize,
}

fn bool_like(t: &Ty, what: &str) -> Result<(), String> {
    match t {
        T::Bool | T::Dyn => Ok(()),
        other => Err(format!("{what} takes a bool, not {other}")),
    }
}

fn literal(v: &Value) -> Ty {
    match v {
        Value::Null => T::Null,
        Value::Bool(_) => T::Bool,
        Value::Int(_) => T::Int,
        Value::Uint(_) => T::Uint,
        Value::Double(_) => T::Double,
        Value::String(_) => T::String,
        Value::Bytes(_) => T::Bytes,
        Value::Timestamp(_) => T::Timestamp,
        Value::Duration(_) => T::Duration,
        Value::List(_) | Value::Map(_) => T::Dyn,
    }
}

impl Checker {
    fn ty(&mut self, e: &Expr) -> Result<Ty, String> {
        Ok(match e {
            Expr::Literal(v) => literal(v),
            Expr::Var(name) => self.var(name)?,
            Expr::List(items) => T::List(Box::new(self.homogeneous(items.iter(), "list")?)),
            Expr::Map(entries) => {
                let k = self.homogeneous(entries.iter().map(|(k, _)| k), "map key")?;
                if !matches!(k, T::Dyn | T::Free | T::Bool | T::Int | T::Uint | T::String) {
                    return Err(format!("a map key of type {k} is not supported"));
                }
                let v = self.homogeneous(entries.iter().map(|(_, v)| v), "map value")?;
                T::Map(Box::new(k), Box::new(v))
            }
            Expr::Select(operand, field) => self.field(operand, field)?,
            Expr::Has(operand, field) => {
                self.field(operand, field)?;
                T::Bool
            }
            Expr::Index(operand, index) => self.index(operand, index)?,
            Expr::Not(x) => {
                bool_like(&self.ty(x)?, "'!'")?;
                T::Bool
            }
            Expr::Neg(x) => match self.ty(x)? {
                t @ (T::Int | T::Double | T::Dyn) => t,
                other => return Err(format!("'-' does not apply to {other}")),
            },
            Expr::And(a, b) | Expr::Or(a, b) => {
                bool_like(&self.ty(a)?, "'&&' and '||'")?;
                bool_like(&self.ty(b)?, "'&&' and '||'")?;
                T::Bool
            }
            Expr::Cond(c, a, b) => {
                bool_like(&self.ty(c)?, "'?:'")?;
                let (a, b) = (self.ty(a)?, self.ty(b)?);
                if !compatible(&a, &b) {
                    return Err(format!("the branches of '?:' are {a} and {b}"));
                }
                join(&a, &b)
            }
            Expr::Binary(op, a, b) => {
                let (a, b) = (self.ty(a)?, self.ty(b)?);
                binary(*op, &a, &b)?
            }
            Expr::Call(func, args) => {
                let types = args
                    .iter()
                    .map(|a| self.ty(a))
                    .collect::<Result<Vec<_>, _>>()?;
                call(func, &types)?
            }
            Expr::Loop(l) => self.comprehension(l)?,
        })
    }

    fn var(&self, name: &str) -> Result<Ty, String> {
        if let Some((_, t)) = self.scope.iter().rev().find(|(n, _)| &**n == name) {
            return Ok(t.clone());
        }
        match name {
            "statement" | "predicate" => Ok(T::Dyn),
            "digest" => Ok(T::String),
            "now" => Ok(T::Timestamp),
            _ => Err(format!(
                "undeclared reference to '{name}' (the variables are {})",
                VARIABLES.join(", ")
            )),
        }
    }

    /// The element type of a literal's items: all the same (the API server's homogeneous
    /// aggregate literals: `[1, dyn(x)]` is refused as cel-go refuses it).
    fn homogeneous<'e>(
        &mut self,
        items: impl Iterator<Item = &'e Expr>,
        what: &str,
    ) -> Result<Ty, String> {
        let mut joined = T::Free;
        for item in items {
            let t = self.ty(item)?;
            if !same(&joined, &t) {
                return Err(format!(
                    "a {what} of types {joined} and {t}: literals are homogeneous"
                ));
            }
            joined = join(&joined, &t);
        }
        Ok(joined)
    }

    fn field(&mut self, operand: &Expr, field: &str) -> Result<Ty, String> {
        match self.ty(operand)? {
            T::Dyn => Ok(T::Dyn),
            T::Map(k, v) if matches!(*k, T::String | T::Dyn | T::Free) => Ok(open(*v)),
            other => Err(format!(
                "'.{field}' selects a field of {other}, which has none"
            )),
        }
    }

    fn index(&mut self, operand: &Expr, index: &Expr) -> Result<Ty, String> {
        let (t, i) = (self.ty(operand)?, self.ty(index)?);
        match (t, &i) {
            (T::Dyn, _) => Ok(T::Dyn),
            (T::List(e), T::Int | T::Dyn) => Ok(open(*e)),
            (T::Map(k, v), i) if compatible(&k, i) => Ok(open(*v)),
            (t, i) => Err(format!("'[]' does not index {t} with {i}")),
        }
    }

    fn comprehension(&mut self, l: &super::ast::Loop) -> Result<Ty, String> {
        self.loops += 1;
        if self.loops > MAX_COMPREHENSION_DEPTH {
            return Err(format!(
                "macros are nested over {MAX_COMPREHENSION_DEPTH} deep"
            ));
        }
        let element = match self.ty(&l.range)? {
            T::List(e) => open(*e),
            T::Map(k, _) => open(*k),
            T::Dyn => T::Dyn,
            other => return Err(format!("a macro ranges over a list or a map, not {other}")),
        };
        self.scope.push((l.var.clone(), element));
        let checked = self.loop_body(l);
        self.scope.pop();
        self.loops -= 1;
        checked
    }

    fn loop_body(&mut self, l: &super::ast::Loop) -> Result<Ty, String> {
        if let Some(filter) = &l.filter {
            bool_like(&self.ty(filter)?, "a macro's predicate")?;
        }
        let body = self.ty(&l.body)?;
        Ok(match l.kind {
            LoopKind::All | LoopKind::Exists | LoopKind::ExistsOne => {
                bool_like(&body, "a macro's predicate")?;
                T::Bool
            }
            LoopKind::Map | LoopKind::Filter => T::List(Box::new(body)),
        })
    }
}

fn numeric(t: &Ty) -> bool {
    matches!(t, T::Int | T::Uint | T::Double)
}

fn ordered(t: &Ty) -> bool {
    numeric(t)
        || matches!(
            t,
            T::Bool | T::String | T::Bytes | T::Timestamp | T::Duration | T::Dyn
        )
}

/// The type of `a op b`, from the overloads whose parameters the known types fit.
fn binary(op: Op, a: &Ty, b: &Ty) -> Result<Ty, String> {
    let refuse = || Err(format!("no overload of {op:?} for ({a}, {b})"));
    match op {
        Op::Eq | Op::Ne => {
            return if compatible(a, b) {
                Ok(T::Bool)
            } else {
                refuse()
            }
        }
        Op::Lt | Op::Le | Op::Gt | Op::Ge => {
            let fits = ordered(a)
                && ordered(b)
                && (matches!(a, T::Dyn)
                    || matches!(b, T::Dyn)
                    || a == b
                    || (numeric(a) && numeric(b)));
            return if fits { Ok(T::Bool) } else { refuse() };
        }
        Op::In => {
            let fits = match b {
                T::List(e) => compatible(a, e),
                T::Map(k, _) => compatible(a, k),
                T::Dyn => true,
                _ => false,
            };
            return if fits { Ok(T::Bool) } else { refuse() };
        }
        _ => {}
    }
    let mut results: Vec<Ty> = Vec::new();
    for (l, r, out) in overloads(op) {
        if compatible(a, &l) && compatible(b, &r) {
            let out = match (&out, a, b) {
                (T::List(_), T::List(x), T::List(y)) if compatible(x, y) => {
                    T::List(Box::new(join(x, y)))
                }
                (T::List(_), T::List(x), _) | (T::List(_), _, T::List(x)) => T::List(x.clone()),
                _ => out,
            };
            if !results.contains(&out) {
                results.push(out);
            }
        }
    }
    match results.len() {
        0 => refuse(),
        1 => Ok(results.remove(0)),
        _ => Ok(T::Dyn),
    }
}

/// cel-go's arithmetic overloads: (left, right, result).
fn overloads(op: Op) -> Vec<(Ty, Ty, Ty)> {
    let same = |ts: &[Ty]| {
        ts.iter()
            .map(|t| (t.clone(), t.clone(), t.clone()))
            .collect::<Vec<_>>()
    };
    let list = T::List(Box::new(T::Dyn));
    match op {
        Op::Add => {
            let mut v = same(&[T::Int, T::Uint, T::Double, T::String, T::Bytes, T::Duration]);
            v.push((list.clone(), list.clone(), list));
            v.push((T::Timestamp, T::Duration, T::Timestamp));
            v.push((T::Duration, T::Timestamp, T::Timestamp));
            v
        }
        Op::Sub => {
            let mut v = same(&[T::Int, T::Uint, T::Double, T::Duration]);
            v.push((T::Timestamp, T::Timestamp, T::Duration));
            v.push((T::Timestamp, T::Duration, T::Timestamp));
            v
        }
        Op::Mul | Op::Div => same(&[T::Int, T::Uint, T::Double]),
        Op::Rem => same(&[T::Int, T::Uint]),
        _ => Vec::new(),
    }
}

/// The type of a function's call on arguments of `types` (a method's receiver first).
fn call(func: &Func, types: &[Ty]) -> Result<Ty, String> {
    let arg = types.first().cloned().unwrap_or(T::Dyn);
    let fits = |allowed: &[Ty]| matches!(arg, T::Dyn) || allowed.contains(&arg);
    let (ok, out) = match func {
        Func::Size => (
            matches!(arg, T::Dyn | T::String | T::Bytes | T::List(_) | T::Map(..)),
            T::Int,
        ),
        Func::Contains | Func::StartsWith | Func::EndsWith => (
            types.iter().all(|t| matches!(t, T::String | T::Dyn)),
            T::Bool,
        ),
        Func::Matches(_) => (fits(&[T::String]), T::Bool),
        Func::Int => (
            fits(&[T::Int, T::Uint, T::Double, T::String, T::Timestamp]),
            T::Int,
        ),
        Func::Uint => (fits(&[T::Int, T::Uint, T::Double, T::String]), T::Uint),
        Func::Double => (fits(&[T::Int, T::Uint, T::Double, T::String]), T::Double),
        Func::String => {
            let from = [
                T::Int,
                T::Uint,
                T::Double,
                T::String,
                T::Bytes,
                T::Bool,
                T::Timestamp,
                T::Duration,
            ];
            (fits(&from), T::String)
        }
        Func::Bytes => (fits(&[T::String, T::Bytes]), T::Bytes),
        Func::Timestamp => (fits(&[T::String, T::Timestamp]), T::Timestamp),
        Func::Duration => (fits(&[T::String, T::Duration]), T::Duration),
        Func::Dyn => (true, T::Dyn),
        Func::Accessor(name) => {
            let on_duration = matches!(
                *name,
                "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds"
            );
            (
                fits(&[T::Timestamp]) || (on_duration && arg == T::Duration),
                T::Int,
            )
        }
    };
    match ok {
        true => Ok(out),
        false => Err(format!(
            "no overload of {} for ({})",
            name(func),
            types
                .iter()
                .map(Ty::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

pub fn name(func: &Func) -> &'static str {
    match func {
        Func::Size => "size",
        Func::Contains => "contains",
        Func::StartsWith => "startsWith",
        Func::EndsWith => "endsWith",
        Func::Matches(_) => "matches",
        Func::Int => "int",
        Func::Uint => "uint",
        Func::Double => "double",
        Func::String => "string",
        Func::Bytes => "bytes",
        Func::Timestamp => "timestamp",
        Func::Duration => "duration",
        Func::Dyn => "dyn",
        Func::Accessor(name) => name,
    }
}
