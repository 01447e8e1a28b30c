//! CEL's values as cel-go holds them, and its equality and ordering: heterogeneous equality
//! (values of different kinds are unequal, numbers compare by value across int, uint and
//! double), ordering only within a kind or across numbers, NaN unordered.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A value of a condition: JSON data, literals, and what functions make of them.
#[derive(Clone, Debug)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    String(Arc<str>),
    Bytes(Arc<[u8]>),
    List(Arc<[Value]>),
    Map(Arc<BTreeMap<Key, Value>>),
    Timestamp(super::time::Timestamp),
    /// Nanoseconds, as Go's `time.Duration`.
    Duration(i64),
}

/// A map key: CEL's map keys are bool, int, uint or string.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Key {
    Bool(bool),
    Int(i64),
    Uint(u64),
    String(Arc<str>),
}

impl Value {
    /// The kind's name, as cel-go names types in its errors.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null_type",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Uint(_) => "uint",
            Value::Double(_) => "double",
            Value::String(_) => "string",
            Value::Bytes(_) => "bytes",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Timestamp(_) => "google.protobuf.Timestamp",
            Value::Duration(_) => "google.protobuf.Duration",
        }
    }

    pub fn string(s: &str) -> Value {
        Value::String(Arc::from(s))
    }

    /// This value as a map key; `None` when its kind cannot be one.
    pub fn key(&self) -> Option<Key> {
        Some(match self {
            Value::Bool(b) => Key::Bool(*b),
            Value::Int(i) => Key::Int(*i),
            Value::Uint(u) => Key::Uint(*u),
            Value::String(s) => Key::String(s.clone()),
            _ => return None,
        })
    }

    /// How many values a walk of this value may visit (its size, for costs).
    pub fn weight(&self) -> u64 {
        match self {
            Value::String(s) => 1 + s.len() as u64 / 16,
            Value::Bytes(b) => 1 + b.len() as u64 / 16,
            Value::List(l) => 1 + l.len() as u64,
            Value::Map(m) => 1 + m.len() as u64,
            _ => 1,
        }
    }
}

impl Key {
    pub fn value(&self) -> Value {
        match self {
            Key::Bool(b) => Value::Bool(*b),
            Key::Int(i) => Value::Int(*i),
            Key::Uint(u) => Value::Uint(*u),
            Key::String(s) => Value::String(s.clone()),
        }
    }
}

/// The entry of `map` at `key`, numbers found across int, uint and double as cel-go finds
/// them (`{1: x}[1u]` and `{1: x}[1.0]` are `x`).
pub fn lookup<'m>(map: &'m BTreeMap<Key, Value>, key: &Value) -> Option<&'m Value> {
    let candidates: [Option<Key>; 2] = match key {
        Value::Int(i) => [Some(Key::Int(*i)), u64::try_from(*i).ok().map(Key::Uint)],
        Value::Uint(u) => [Some(Key::Uint(*u)), i64::try_from(*u).ok().map(Key::Int)],
        Value::Double(d) if d.fract() == 0.0 && d.is_finite() => {
            let as_int = (*d >= -9.223_372_036_854_776e18 && *d < 9.223_372_036_854_776e18)
                .then_some(Key::Int(*d as i64));
            let as_uint =
                (*d >= 0.0 && *d < 1.844_674_407_370_955_2e19).then_some(Key::Uint(*d as u64));
            [as_int, as_uint]
        }
        other => [other.key(), None],
    };
    candidates.iter().flatten().find_map(|k| map.get(k))
}

/// CEL's `==`: false across kinds (numbers aside), never an error; each value compared
/// takes one of `left`, and `None` says they ran out before the answer.
pub fn equal(a: &Value, b: &Value, left: &mut u64) -> Option<bool> {
    use Value as V;
    *left = left.checked_sub(1)?;
    Some(match (a, b) {
        (V::Null, V::Null) => true,
        (V::Bool(x), V::Bool(y)) => x == y,
        (V::String(x), V::String(y)) => {
            *left = left.checked_sub(x.len().min(y.len()) as u64 / 64)?;
            x == y
        }
        (V::Bytes(x), V::Bytes(y)) => {
            *left = left.checked_sub(x.len().min(y.len()) as u64 / 64)?;
            x == y
        }
        (V::Timestamp(x), V::Timestamp(y)) => x == y,
        (V::Duration(x), V::Duration(y)) => x == y,
        (V::List(x), V::List(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            for (p, q) in x.iter().zip(y.iter()) {
                if !equal(p, q, left)? {
                    return Some(false);
                }
            }
            true
        }
        (V::Map(x), V::Map(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            for (k, v) in x.iter() {
                let Some(w) = lookup(y, &k.value()) else {
                    return Some(false);
                };
                if !equal(v, w, left)? {
                    return Some(false);
                }
            }
            true
        }
        (V::Double(d), _) | (_, V::Double(d)) if d.is_nan() => false,
        _ => numeric(a, b) == Some(Ordering::Equal),
    })
}

/// CEL's ordering: `None` when the two cannot be ordered (an error in cel-go: kinds without
/// an overload, NaN).
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    use Value as V;
    match (a, b) {
        (V::Bool(x), V::Bool(y)) => Some(x.cmp(y)),
        (V::String(x), V::String(y)) => Some(x.cmp(y)),
        (V::Bytes(x), V::Bytes(y)) => Some(x.cmp(y)),
        (V::Timestamp(x), V::Timestamp(y)) => Some(x.cmp(y)),
        (V::Duration(x), V::Duration(y)) => Some(x.cmp(y)),
        (V::Double(d), _) | (_, V::Double(d)) if d.is_nan() => None,
        _ => numeric(a, b),
    }
}

/// Two numbers compared as cel-go compares them (a double against an int or uint as a
/// double, after the range checks: `compareDoubleInt`).
fn numeric(a: &Value, b: &Value) -> Option<Ordering> {
    use Value as V;
    Some(match (a, b) {
        (V::Int(x), V::Int(y)) => x.cmp(y),
        (V::Uint(x), V::Uint(y)) => x.cmp(y),
        (V::Double(x), V::Double(y)) => double_cmp(*x, *y),
        (V::Int(i), V::Uint(u)) => int_uint(*i, *u),
        (V::Uint(u), V::Int(i)) => int_uint(*i, *u).reverse(),
        (V::Double(d), V::Int(i)) => double_int(*d, *i),
        (V::Int(i), V::Double(d)) => double_int(*d, *i).reverse(),
        (V::Double(d), V::Uint(u)) => double_uint(*d, *u),
        (V::Uint(u), V::Double(d)) => double_uint(*d, *u).reverse(),
        _ => return None,
    })
}

fn double_cmp(x: f64, y: f64) -> Ordering {
    x.partial_cmp(&y).unwrap_or(Ordering::Equal)
}

fn int_uint(i: i64, u: u64) -> Ordering {
    match u64::try_from(i) {
        Ok(i) => i.cmp(&u),
        Err(_) => Ordering::Less,
    }
}

fn double_int(d: f64, i: i64) -> Ordering {
    if d < -9.223_372_036_854_776e18 {
        return Ordering::Less;
    }
    if d > 9.223_372_036_854_776e18 {
        return Ordering::Greater;
    }
    double_cmp(d, i as f64)
}

fn double_uint(d: f64, u: u64) -> Ordering {
    if d < 0.0 {
        return Ordering::Less;
    }
    if d > 1.844_674_407_370_955_2e19 {
        return Ordering::Greater;
    }
    double_cmp(d, u as f64)
}
