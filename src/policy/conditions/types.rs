//! The static types of the check (cel-go's, for this subset), and how two of them meet:
//! `compatible` where a value of one may stand for the other (`dyn` for anything), `same` where
//! a homogeneous literal wants them equal, `join` for the type of two together.

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
pub fn compatible(a: &Ty, b: &Ty) -> bool {
    match (a, b) {
        (T::Dyn | T::Free, _) | (_, T::Dyn | T::Free) => true,
        (T::List(x), T::List(y)) => compatible(x, y),
        (T::Map(k, v), T::Map(l, w)) => compatible(k, l) && compatible(v, w),
        _ => a == b,
    }
}

/// The type of two compatible types together: the known one where one side is dyn.
pub fn join(a: &Ty, b: &Ty) -> Ty {
    match (a, b) {
        (T::Dyn | T::Free, t) | (t, T::Dyn | T::Free) => t.clone(),
        (T::List(x), T::List(y)) => T::List(Box::new(join(x, y))),
        (T::Map(k, v), T::Map(l, w)) => T::Map(Box::new(join(k, l)), Box::new(join(v, w))),
        _ => a.clone(),
    }
}

/// Whether two types are the same, as a homogeneous literal wants its items: `dyn` is
/// only the same as `dyn`; an empty literal's element is the same as anything.
pub fn same(a: &Ty, b: &Ty) -> bool {
    match (a, b) {
        (T::Free, _) | (_, T::Free) => true,
        (T::List(x), T::List(y)) => same(x, y),
        (T::Map(k, v), T::Map(l, w)) => same(k, l) && same(v, w),
        _ => a == b,
    }
}

/// A type as an expression has it: an empty literal's element read is `dyn`.
pub fn open(t: Ty) -> Ty {
    match t {
        T::Free => T::Dyn,
        t => t,
    }
}
