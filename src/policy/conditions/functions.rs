//! cel-go's standard functions and operators on values, for this subset: indexing, arithmetic
//! with Go's overflow errors, the string functions, `matches`, and the conversions with Go's
//! grammars (`strconv.ParseInt`, `ParseUint`, `ParseFloat`, RFC 3339, `time.ParseDuration`).
//! Each charges what it walks or makes before it does so.

use super::ast::{Func, Op};
use super::fault::{error, Budget, Eval, Fault};
use super::time;
use super::value::{lookup, Key, Value};
use std::collections::BTreeMap;

/// cel-go's words for a map read at a key it lacks.
pub const NO_SUCH_KEY: &str = "no such key";

/// What walking `len` bytes of text costs.
fn text_cost(len: usize) -> u64 {
    1 + len as u64 / 16
}

/// The entry of `map` at `key`: a key of a kind the map's keys are not of is an error, as is
/// a key no map may have (cel-go's answer on such keys depends on how the map was made).
pub fn find<'m>(map: &'m BTreeMap<Key, Value>, key: &Value) -> Result<Option<&'m Value>, Fault> {
    let family = |k: &Key| match k {
        Key::Bool(_) => 0,
        Key::Int(_) | Key::Uint(_) => 1,
        Key::String(_) => 2,
    };
    let wanted = match key {
        Value::Bool(_) => 0,
        Value::Int(_) | Value::Uint(_) => 1,
        Value::Double(d) if d.fract() == 0.0 => 1,
        Value::String(_) => 2,
        other => return error(format!("unsupported key type: {}", other.kind())),
    };
    if map.keys().next().is_some_and(|k| family(k) != wanted) {
        return error(format!("a {} key in a map of other keys", key.kind()));
    }
    Ok(lookup(map, key))
}

pub fn index(container: &Value, index: &Value) -> Eval {
    match container {
        Value::List(items) => {
            let at = match index {
                Value::Int(i) => Some(*i),
                Value::Uint(u) => i64::try_from(*u).ok(),
                Value::Double(d) if d.fract() == 0.0 && d.abs() < 9e15 => Some(*d as i64),
                _ => None,
            };
            let Some(at) = at else {
                return error(format!("unsupported index type '{}' in list", index.kind()));
            };
            match usize::try_from(at).ok().and_then(|at| items.get(at)) {
                Some(v) => Ok(v.clone()),
                None => error(format!(
                    "index '{at}' out of range in list size '{}'",
                    items.len()
                )),
            }
        }
        Value::Map(m) => match find(m, index)? {
            Some(v) => Ok(v.clone()),
            None => error(NO_SUCH_KEY),
        },
        other => error(format!("no such overload: index of a {}", other.kind())),
    }
}

pub fn negate(v: Value) -> Eval {
    match v {
        Value::Int(i) => i.checked_neg().map(Value::Int).ok_or_else(overflow),
        Value::Double(d) => Ok(Value::Double(-d)),
        other => error(format!("no such overload: -{}", other.kind())),
    }
}

fn overflow() -> Fault {
    Fault::Error("integer overflow".into())
}

pub fn arithmetic(op: Op, a: &Value, b: &Value, budget: &mut Budget) -> Eval {
    use Value as V;
    let int = |r: Option<i64>| r.map(V::Int).ok_or_else(overflow);
    let uint = |r: Option<u64>| r.map(V::Uint).ok_or_else(overflow);
    match (op, a, b) {
        (Op::Div | Op::Rem, V::Int(_), V::Int(0)) | (Op::Div | Op::Rem, V::Uint(_), V::Uint(0)) => {
            error(if op == Op::Div {
                "division by zero"
            } else {
                "modulus by zero"
            })
        }
        (Op::Add, V::Int(x), V::Int(y)) => int(x.checked_add(*y)),
        (Op::Sub, V::Int(x), V::Int(y)) => int(x.checked_sub(*y)),
        (Op::Mul, V::Int(x), V::Int(y)) => int(x.checked_mul(*y)),
        (Op::Div, V::Int(x), V::Int(y)) => int(x.checked_div(*y)),
        (Op::Rem, V::Int(x), V::Int(y)) => int(x.checked_rem(*y)),
        (Op::Add, V::Uint(x), V::Uint(y)) => uint(x.checked_add(*y)),
        (Op::Sub, V::Uint(x), V::Uint(y)) => uint(x.checked_sub(*y)),
        (Op::Mul, V::Uint(x), V::Uint(y)) => uint(x.checked_mul(*y)),
        (Op::Div, V::Uint(x), V::Uint(y)) => uint(x.checked_div(*y)),
        (Op::Rem, V::Uint(x), V::Uint(y)) => uint(x.checked_rem(*y)),
        (Op::Add, V::Double(x), V::Double(y)) => Ok(V::Double(x + y)),
        (Op::Sub, V::Double(x), V::Double(y)) => Ok(V::Double(x - y)),
        (Op::Mul, V::Double(x), V::Double(y)) => Ok(V::Double(x * y)),
        (Op::Div, V::Double(x), V::Double(y)) => Ok(V::Double(x / y)),
        (Op::Add, V::String(x), V::String(y)) => {
            budget.charge(text_cost(x.len() + y.len()) * 4)?;
            Ok(V::String(format!("{x}{y}").into()))
        }
        (Op::Add, V::Bytes(x), V::Bytes(y)) => {
            budget.charge(text_cost(x.len() + y.len()) * 4)?;
            Ok(V::Bytes([&x[..], &y[..]].concat().into()))
        }
        (Op::Add, V::List(x), V::List(y)) => {
            budget.charge(4 * (1 + x.len() + y.len()) as u64)?;
            Ok(V::List(x.iter().chain(y.iter()).cloned().collect()))
        }
        _ => times(op, a, b),
    }
}

/// Arithmetic on timestamps and durations, within their ranges.
fn times(op: Op, a: &Value, b: &Value) -> Eval {
    use Value as V;
    let out = match (op, a, b) {
        (Op::Add, V::Timestamp(t), V::Duration(d)) | (Op::Add, V::Duration(d), V::Timestamp(t)) => {
            t.add(*d).map(V::Timestamp)
        }
        (Op::Sub, V::Timestamp(t), V::Duration(d)) => match d.checked_neg() {
            Some(d) => t.add(d).map(V::Timestamp),
            None => Err("timestamp out of range".into()),
        },
        (Op::Sub, V::Timestamp(x), V::Timestamp(y)) => x.since(*y).map(V::Duration),
        (Op::Add, V::Duration(x), V::Duration(y)) => x
            .checked_add(*y)
            .map(V::Duration)
            .ok_or_else(|| "duration overflow".into()),
        (Op::Sub, V::Duration(x), V::Duration(y)) => x
            .checked_sub(*y)
            .map(V::Duration)
            .ok_or_else(|| "duration overflow".into()),
        _ => Err(format!(
            "no such overload: {} {op:?} {}",
            a.kind(),
            b.kind()
        )),
    };
    out.map_err(Fault::Error)
}

pub fn call(func: &Func, mut args: Vec<Value>, budget: &mut Budget) -> Eval {
    let this = args.swap_remove(0);
    let arg = args.pop();
    let text = |v: &Option<Value>| match v {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => error(format!("no such overload: a {} argument", other.kind())),
        None => error("a missing argument"),
    };
    match (func, &this) {
        (Func::Size, _) => size(&this, budget),
        (Func::Contains | Func::StartsWith | Func::EndsWith, Value::String(s)) => {
            let needle = text(&arg)?;
            budget.charge(text_cost(s.len()))?;
            Ok(Value::Bool(match func {
                Func::Contains => s.contains(&*needle),
                Func::StartsWith => s.starts_with(&*needle),
                _ => s.ends_with(&*needle),
            }))
        }
        (Func::Matches(pattern), Value::String(s)) => {
            budget.charge(pattern.cost(s.len()))?;
            Ok(Value::Bool(pattern.is_match(s)))
        }
        (Func::Dyn, _) => Ok(this),
        (Func::Accessor(name), Value::Timestamp(t)) => accessor(time::accessor(name, *t)),
        (Func::Accessor(name), Value::Duration(d)) => accessor(time::duration_accessor(name, *d)),
        (Func::Int | Func::Uint | Func::Double | Func::String | Func::Bytes, _)
        | (Func::Timestamp | Func::Duration, _) => {
            budget.charge(text_cost(this.weight() as usize * 16))?;
            super::convert::convert(func, this).map_err(Fault::Error)
        }
        _ => error(format!(
            "no such overload: {}() of a {}",
            func.name(),
            this.kind()
        )),
    }
}

fn accessor(value: Option<i64>) -> Eval {
    value
        .map(Value::Int)
        .ok_or_else(|| Fault::Error("no such overload".into()))
}

fn size(v: &Value, budget: &mut Budget) -> Eval {
    let n = match v {
        Value::String(s) => {
            budget.charge(text_cost(s.len()))?;
            s.chars().count()
        }
        Value::Bytes(b) => b.len(),
        Value::List(l) => l.len(),
        Value::Map(m) => m.len(),
        other => return error(format!("no such overload: size() of a {}", other.kind())),
    };
    Ok(Value::Int(n as i64))
}
