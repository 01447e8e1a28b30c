//! Calls resolved when parsed, as cel-go's parser expands them: the macros (`has`, `all`,
//! `exists`, `exists_one`, `map`, `filter`) into nodes of their own, each function to the one
//! it names with its arity, a `matches()` pattern compiled once; the rest refused.

use super::ast::{Expr, Func, Loop, LoopKind, ACCESSORS};
use super::regex::Pattern;
use super::value::Value;
use std::sync::Arc;

/// `target.name(args)`.
pub fn method(target: Expr, name: &str, mut args: Vec<Expr>) -> Result<Expr, String> {
    let kind = match name {
        "all" => Some(LoopKind::All),
        "exists" => Some(LoopKind::Exists),
        "exists_one" => Some(LoopKind::ExistsOne),
        "map" => Some(LoopKind::Map),
        "filter" => Some(LoopKind::Filter),
        _ => None,
    };
    if let Some(kind) = kind {
        return macro_loop(kind, target, args);
    }
    let func = match (name, args.len()) {
        ("size", 0) => Func::Size,
        ("contains", 1) => Func::Contains,
        ("startsWith", 1) => Func::StartsWith,
        ("endsWith", 1) => Func::EndsWith,
        ("matches", 1) => Func::Matches(pattern(&args[0])?),
        (name, 0) if ACCESSORS.contains(&name) => Func::Accessor(
            ACCESSORS
                .iter()
                .find(|a| **a == name)
                .copied()
                .unwrap_or_default(),
        ),
        (name, 1) if ACCESSORS.contains(&name) => {
            return Err(format!(
                "{name}() with a time zone is not supported (the accessors read UTC)"
            ))
        }
        _ => return Err(unknown(name, args.len(), true)),
    };
    if matches!(func, Func::Matches(_)) {
        args.clear();
    }
    args.insert(0, target);
    Ok(Expr::Call(func, args))
}

fn pattern(e: &Expr) -> Result<Arc<Pattern>, String> {
    match e {
        Expr::Literal(Value::String(s)) => Pattern::new(s).map(Arc::new),
        _ => Err("matches() takes a literal regular expression".into()),
    }
}

fn macro_loop(kind: LoopKind, range: Expr, mut args: Vec<Expr>) -> Result<Expr, String> {
    let arity_ok = match kind {
        LoopKind::Map => args.len() == 2 || args.len() == 3,
        _ => args.len() == 2,
    };
    let Some(Expr::Var(var)) = args.first().filter(|_| arity_ok) else {
        return Err(
            "a macro takes a variable name, then its expressions (e.g. all(x, x > 0))".into(),
        );
    };
    let var = var.clone();
    let body = args.pop().unwrap_or(Expr::Literal(Value::Null));
    let filter = (args.len() == 2).then(|| args.pop()).flatten();
    let (filter, body) = match kind {
        LoopKind::Filter => (Some(body), Expr::Var(var.clone())),
        _ => (filter, body),
    };
    Ok(Expr::Loop(Box::new(Loop {
        kind,
        range,
        var,
        filter,
        body,
    })))
}

pub fn global(name: &str, mut args: Vec<Expr>) -> Result<Expr, String> {
    if name == "has" {
        return match args.pop() {
            Some(Expr::Select(operand, field)) if args.is_empty() => Ok(Expr::Has(operand, field)),
            _ => Err("has() takes a field selection, as has(predicate.field)".into()),
        };
    }
    let func = match (name, args.len()) {
        ("size", 1) => Func::Size,
        ("matches", 2) => Func::Matches(pattern(&args[1])?),
        ("int", 1) => Func::Int,
        ("uint", 1) => Func::Uint,
        ("double", 1) => Func::Double,
        ("string", 1) => Func::String,
        ("bytes", 1) => Func::Bytes,
        ("timestamp", 1) => Func::Timestamp,
        ("duration", 1) => Func::Duration,
        ("dyn", 1) => Func::Dyn,
        _ => return Err(unknown(name, args.len(), false)),
    };
    args.truncate(1);
    Ok(Expr::Call(func, args))
}

fn unknown(name: &str, arity: usize, method: bool) -> String {
    let form = if method {
        format!(".{name}()")
    } else {
        format!("{name}()")
    };
    format!(
        "the function '{form}' with {arity} argument(s) is not supported (the standard functions \
         are size, contains, startsWith, endsWith, matches, string, bytes, int, uint, double, \
         timestamp, duration, dyn and the timestamp accessors, with has, all, exists, exists_one, \
         map and filter)"
    )
}
