//! Which operators and functions cel-go has for which argument types, and what they return:
//! the overloads the check applies where both sides' types are known.

use super::ast::{Func, Op};
use super::types::{compatible, join, Ty, Ty as T};

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
pub fn binary(op: Op, a: &Ty, b: &Ty) -> Result<Ty, String> {
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
pub fn call(func: &Func, types: &[Ty]) -> Result<Ty, String> {
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
            func.name(),
            types
                .iter()
                .map(Ty::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}
