//! A parsed condition: CEL's expressions with its macros (`has`, `all`, `exists`,
//! `exists_one`, `map`, `filter`) as nodes of their own and each function resolved to the one
//! it names, so that evaluation looks nothing up by name.

use super::value::Value;
use std::sync::Arc;

#[derive(Clone, Debug)]
pub enum Expr {
    Literal(Value),
    Var(Arc<str>),
    List(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
    Select(Box<Expr>, Arc<str>),
    /// `has(e.f)`.
    Has(Box<Expr>, Arc<str>),
    Index(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Binary(Op, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
    Loop(Box<Loop>),
}

/// A binary operator other than `&&` and `||`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
}

/// A function, its receiver (for a method) first among the arguments.
#[derive(Clone, Debug)]
pub enum Func {
    Size,
    Contains,
    StartsWith,
    EndsWith,
    /// `matches` with its literal pattern, compiled once.
    Matches(Arc<super::regex::Pattern>),
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Timestamp,
    Duration,
    Dyn,
    /// A timestamp or duration accessor (`getHours`...), by cel-go's name.
    Accessor(&'static str),
}

impl Func {
    /// Its name, as cel-go names it.
    pub fn name(&self) -> &'static str {
        match self {
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
}

/// A macro over a list's elements or a map's keys.
#[derive(Clone, Debug)]
pub struct Loop {
    pub kind: LoopKind,
    pub range: Expr,
    pub var: Arc<str>,
    /// `map(x, p, t)`'s and `filter`'s predicate.
    pub filter: Option<Expr>,
    /// The predicate of all, exists and exists_one; the transform of map.
    pub body: Expr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopKind {
    All,
    Exists,
    ExistsOne,
    Map,
    Filter,
}

/// The accessors cel-go defines on timestamps (the first four on durations too).
pub const ACCESSORS: [&str; 10] = [
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
    "getFullYear",
    "getMonth",
    "getDayOfYear",
    "getDayOfMonth",
    "getDate",
    "getDayOfWeek",
];
