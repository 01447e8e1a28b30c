//! The type check cel-go runs before it accepts an expression, for this subset: every name
//! declared, every operator and function applied to types it has an overload for, list and
//! map literals homogeneous (the API server's option), macros nested at most
//! [`MAX_COMPREHENSION_DEPTH`] deep, and the whole a `bool` (or `dyn`). A static type is
//! `Dyn` where cel-go's would be (statement data); where both sides are known, an operator
//! with no overload is refused as cel-go refuses it, so `'a' == 1` never evaluates to false
//! here where cel-go would not compile it. Where this check is stricter than cel-go's (it joins
//! types less), the expression is refused: a documented difference that only ever holds.

use super::ast::{Expr, LoopKind};
use super::overloads::{binary, call};
use super::types::{compatible, join, open, same, Ty, Ty as T};
use super::value::Value;
use super::VARIABLES;

/// Macros nested in each other at most this deep.
pub const MAX_COMPREHENSION_DEPTH: usize = 3;

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
