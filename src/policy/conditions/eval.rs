//! Evaluation as cel-go's interpreter evaluates: `&&`, `||` and the macros `all` and `exists`
//! absorb an error where the other side decides (`false && error` is false), every other error
//! propagates, and a value of the wrong kind is an error, never a guess. Every step is charged
//! to a [`Budget`] as it runs; a budget spent stops the evaluation whatever it is doing, and is
//! never absorbed.

use super::ast::{Expr, Loop, LoopKind, Op};
use super::fault::{error, Budget, Eval, Fault};
use super::functions;
use super::value::{compare, equal, Key, Value};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The variables of one evaluation and the budget it spends.
pub struct Scope<'a> {
    pub globals: [(&'static str, &'a Value); 4],
    pub locals: Vec<(Arc<str>, Value)>,
    pub budget: &'a mut Budget,
}

impl Scope<'_> {
    pub fn eval(&mut self, e: &Expr) -> Eval {
        self.budget.charge(1)?;
        match e {
            Expr::Literal(v) => Ok(v.clone()),
            Expr::Var(name) => self.var(name),
            Expr::List(items) => {
                self.budget.charge(4 * items.len() as u64)?;
                let values = items
                    .iter()
                    .map(|i| self.eval(i))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Value::List(values.into()))
            }
            Expr::Map(entries) => self.map(entries),
            Expr::Select(operand, field) => match self.eval(operand)? {
                Value::Map(m) => match m.get(&Key::String(field.clone())) {
                    Some(v) => Ok(v.clone()),
                    None => missing(e, Some(field)),
                },
                other => error(format!("no such key: {field} (in a {})", other.kind())),
            },
            // cel-go: a map has its keys, a list is an error, anything else has no field.
            Expr::Has(operand, field) => match self.eval(operand)? {
                Value::Map(m) => Ok(Value::Bool(m.contains_key(&Key::String(field.clone())))),
                Value::List(_) => error("unsupported index type 'string' in list"),
                _ => Ok(Value::Bool(false)),
            },
            Expr::Index(operand, index) => {
                let (v, i) = (self.eval(operand)?, self.eval(index)?);
                match functions::index(&v, &i) {
                    Err(Fault::Error(why)) if why == functions::NO_SUCH_KEY => missing(e, None),
                    read => read,
                }
            }
            Expr::Not(x) => match self.eval(x)? {
                Value::Bool(b) => Ok(Value::Bool(!b)),
                other => error(format!("no such overload: !{}", other.kind())),
            },
            Expr::Neg(x) => functions::negate(self.eval(x)?),
            Expr::And(a, b) => self.logic(a, b, false),
            Expr::Or(a, b) => self.logic(a, b, true),
            Expr::Cond(c, yes, no) => match self.eval(c)? {
                Value::Bool(true) => self.eval(yes),
                Value::Bool(false) => self.eval(no),
                other => error(format!(
                    "no such overload: a {} as a condition",
                    other.kind()
                )),
            },
            Expr::Binary(op, a, b) => {
                let (a, b) = (self.eval(a)?, self.eval(b)?);
                self.binary(*op, &a, &b)
            }
            Expr::Call(func, args) => {
                let args = args
                    .iter()
                    .map(|a| self.eval(a))
                    .collect::<Result<Vec<_>, _>>()?;
                functions::call(func, args, self.budget)
            }
            Expr::Loop(l) => self.comprehension(l),
        }
    }

    fn var(&self, name: &str) -> Eval {
        if let Some((_, v)) = self.locals.iter().rev().find(|(n, _)| &**n == name) {
            return Ok(v.clone());
        }
        match self.globals.iter().find(|(n, _)| *n == name) {
            Some((_, v)) => Ok((*v).clone()),
            None => error(format!("undeclared reference to '{name}'")),
        }
    }

    fn map(&mut self, entries: &[(Expr, Expr)]) -> Eval {
        self.budget.charge(4 * entries.len() as u64)?;
        let mut map = BTreeMap::new();
        for (k, v) in entries {
            let key = self.eval(k)?;
            let value = self.eval(v)?;
            let Some(k) = key.key() else {
                return error(format!("unsupported key type: {}", key.kind()));
            };
            // A key written twice keeps its last value, as in cel-go; the same number as
            // two kinds (`1` and `1u`) is refused rather than guessed.
            let twin = map.keys().any(|known: &Key| {
                let mut left = 1;
                *known != k && equal(&known.value(), &key, &mut left) == Some(true)
            });
            if twin {
                return error("a map literal with one number as two keys");
            }
            map.insert(k, value);
        }
        Ok(Value::Map(Arc::new(map)))
    }

    /// `a && b` (`any` false) or `a || b` (`any` true): the side that equals `any` decides,
    /// whatever the other is; else both must be booleans.
    fn logic(&mut self, a: &Expr, b: &Expr, any: bool) -> Eval {
        let left = absorbable(self.eval(a))?;
        if matches!(left, Ok(Value::Bool(b)) if b == any) {
            return Ok(Value::Bool(any));
        }
        let right = absorbable(self.eval(b))?;
        match (left, right) {
            (_, Ok(Value::Bool(b))) if b == any => Ok(Value::Bool(any)),
            (Ok(Value::Bool(_)), Ok(Value::Bool(_))) => Ok(Value::Bool(!any)),
            (Err(e), _) => Err(e),
            (Ok(Value::Bool(_)), Err(e)) => Err(e),
            _ => error("no such overload: '&&' or '||' of a value that is not a bool"),
        }
    }

    fn binary(&mut self, op: Op, a: &Value, b: &Value) -> Eval {
        let mut left = self.budget.left;
        let equal = |a: &Value, b: &Value, left: &mut u64| equal(a, b, left).ok_or(Fault::Budget);
        let out = match op {
            Op::Eq => Ok(Value::Bool(equal(a, b, &mut left)?)),
            Op::Ne => Ok(Value::Bool(!equal(a, b, &mut left)?)),
            Op::Lt | Op::Le | Op::Gt | Op::Ge => {
                left = left
                    .checked_sub(a.weight().min(b.weight()) / 4)
                    .ok_or(Fault::Budget)?;
                let Some(order) = compare(a, b) else {
                    return error(format!(
                        "no such overload: {} {op:?} {}",
                        a.kind(),
                        b.kind()
                    ));
                };
                Ok(Value::Bool(match op {
                    Op::Lt => order == Ordering::Less,
                    Op::Le => order != Ordering::Greater,
                    Op::Gt => order == Ordering::Greater,
                    _ => order != Ordering::Less,
                }))
            }
            Op::In => self.contains(b, a, &mut left),
            _ => return functions::arithmetic(op, a, b, self.budget),
        };
        self.budget.left = left;
        out
    }

    /// `item in container`.
    fn contains(&self, container: &Value, item: &Value, left: &mut u64) -> Eval {
        match container {
            Value::List(items) => {
                for x in items.iter() {
                    if equal(item, x, left).ok_or(Fault::Budget)? {
                        return Ok(Value::Bool(true));
                    }
                }
                Ok(Value::Bool(false))
            }
            Value::Map(m) => Ok(Value::Bool(functions::find(m, item)?.is_some())),
            other => error(format!("no such overload: in a {}", other.kind())),
        }
    }

    fn comprehension(&mut self, l: &Loop) -> Eval {
        let elements: Vec<Value> = match self.eval(&l.range)? {
            Value::List(items) => items.to_vec(),
            Value::Map(_) if matches!(l.kind, LoopKind::Map | LoopKind::Filter) => {
                // cel-go's order over a map's keys is Go's map order, which changes from one
                // evaluation to the next: a list made of it has no answer to match.
                return error("map() and filter() over a map's keys are not supported");
            }
            Value::Map(m) => m.keys().map(Key::value).collect(),
            other => {
                return error(format!(
                    "a macro over a {}: expected a list or a map",
                    other.kind()
                ))
            }
        };
        self.locals.push((l.var.clone(), Value::Null));
        let out = self.iterate(l, elements);
        self.locals.pop();
        out
    }

    fn iterate(&mut self, l: &Loop, elements: Vec<Value>) -> Eval {
        let decides = matches!(l.kind, LoopKind::Exists);
        let (mut absorbed, mut count, mut built) = (None, 0u64, Vec::new());
        for element in elements {
            self.budget.charge(1)?;
            if let Some(last) = self.locals.last_mut() {
                last.1 = element.clone();
            }
            if let Some(filter) = &l.filter {
                match self.eval(filter)? {
                    Value::Bool(true) => {}
                    Value::Bool(false) => continue,
                    other => return error(format!("a macro's predicate is a {}", other.kind())),
                }
            }
            match l.kind {
                LoopKind::All | LoopKind::Exists => match absorbable(self.eval(&l.body))? {
                    Ok(Value::Bool(b)) if b == decides => return Ok(Value::Bool(decides)),
                    Ok(Value::Bool(_)) => {}
                    Ok(other) => {
                        absorbed = Some(format!("a macro's predicate is a {}", other.kind()))
                    }
                    Err(Fault::Error(e)) => absorbed = Some(e),
                    Err(fault) => return Err(fault),
                },
                LoopKind::ExistsOne => match self.eval(&l.body)? {
                    Value::Bool(b) => count += u64::from(b),
                    other => return error(format!("a macro's predicate is a {}", other.kind())),
                },
                LoopKind::Map | LoopKind::Filter => {
                    self.budget.charge(4)?;
                    built.push(self.eval(&l.body)?);
                }
            }
        }
        match (l.kind, absorbed) {
            (LoopKind::All | LoopKind::Exists, Some(e)) => error(e),
            (LoopKind::All | LoopKind::Exists, None) => Ok(Value::Bool(!decides)),
            (LoopKind::ExistsOne, _) => Ok(Value::Bool(count == 1)),
            _ => Ok(Value::List(built.into())),
        }
    }
}

/// An evaluation's answer with a CEL error kept as a value to absorb; a spent budget or a
/// stop is not.
fn absorbable(e: Eval) -> Result<Eval, Fault> {
    match e {
        Err(fault @ (Fault::Budget | Fault::Stopped)) => Err(fault),
        other => Ok(other),
    }
}

/// How the refusal of a condition that reads a field its attestation lacks goes on.
pub const MISSING_FIELD: &str = "which this attestation does not have";

/// What reads a field the attestation lacks says: the path read, in words, when `e` reads the
/// statement by names alone (a field typo names itself), else cel-go's `no such key`.
fn missing(e: &Expr, field: Option<&str>) -> Eval {
    let no_such_key = functions::NO_SUCH_KEY;
    match (path(e), field) {
        (Some(path), _) => error(format!("reads {path}, {MISSING_FIELD} ({no_such_key})")),
        (None, Some(field)) => error(format!("{no_such_key}: {field}")),
        (None, None) => error(no_such_key),
    }
}

/// The field `e` reads, as written (`predicate.a['b'][0].c`), when it reads `statement` or
/// `predicate` by names and literal keys alone.
fn path(e: &Expr) -> Option<String> {
    match e {
        Expr::Var(name) if ["statement", "predicate"].contains(&&**name) => Some(name.to_string()),
        Expr::Select(operand, field) => Some(format!("{}.{field}", path(operand)?)),
        Expr::Index(operand, index) => match &**index {
            Expr::Literal(Value::String(key)) => Some(format!("{}[{key:?}]", path(operand)?)),
            Expr::Literal(Value::Int(i)) => Some(format!("{}[{i}]", path(operand)?)),
            _ => None,
        },
        _ => None,
    }
}
