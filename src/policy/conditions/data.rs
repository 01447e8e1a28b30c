//! A verified statement as CEL values, bounded: what a condition may walk is what its cost
//! estimate assumed ([`MAX_ITEMS`] entries a list or map, [`MAX_VALUES`] values in all, strings
//! of [`MAX_STRING_BYTES`]). A statement over a bound is refused, never cut: a condition on
//! part of it could pass where the whole would not.

use super::value::{Key, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The most entries of one list or map (a scan of four thousand findings).
pub const MAX_ITEMS: usize = 4096;
/// The most values of one statement, every list, map, string and number counted.
pub const MAX_VALUES: usize = 65_536;
/// The longest string.
pub const MAX_STRING_BYTES: usize = 16 << 10;

/// The bounds a statement is read within.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub items: usize,
    pub values: usize,
    pub string_bytes: usize,
}

impl Bounds {
    pub const DEFAULT: Bounds = Bounds {
        items: MAX_ITEMS,
        values: MAX_VALUES,
        string_bytes: MAX_STRING_BYTES,
    };
}

/// `json` as CEL reads JSON (numbers are doubles, as cel-go's JSON values), within `bounds`.
pub fn to_value(json: &serde_json::Value, bounds: &Bounds) -> Result<Value, String> {
    let mut left = bounds.values;
    convert(json, bounds, &mut left)
}

fn convert(json: &serde_json::Value, bounds: &Bounds, left: &mut usize) -> Result<Value, String> {
    use serde_json::Value as J;
    *left = left
        .checked_sub(1)
        .ok_or_else(|| format!("the statement holds over {} values", bounds.values))?;
    let too_many = |n: usize| {
        format!(
            "the statement has a list or object of {n} entries; at most {} are read",
            bounds.items
        )
    };
    Ok(match json {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(*b),
        J::Number(n) => Value::Double(n.as_f64().unwrap_or(f64::NAN)),
        J::String(s) if s.len() > bounds.string_bytes => {
            return Err(format!(
                "the statement has a string of {} bytes; at most {} are read",
                s.len(),
                bounds.string_bytes
            ))
        }
        J::String(s) => Value::string(s),
        J::Array(items) if items.len() > bounds.items => return Err(too_many(items.len())),
        J::Array(items) => Value::List(
            items
                .iter()
                .map(|x| convert(x, bounds, left))
                .collect::<Result<Vec<_>, _>>()?
                .into(),
        ),
        J::Object(fields) if fields.len() > bounds.items => return Err(too_many(fields.len())),
        J::Object(fields) => {
            let mut map = BTreeMap::new();
            for (k, v) in fields {
                if k.len() > bounds.string_bytes {
                    return Err(format!("the statement has a key of {} bytes", k.len()));
                }
                map.insert(Key::String(k.as_str().into()), convert(v, bounds, left)?);
            }
            Value::Map(Arc::new(map))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SMALL: Bounds = Bounds {
        items: 4,
        values: 6,
        string_bytes: 3,
    };

    /// Each bound at its value is read, one more refused, never cut.
    #[test]
    fn each_bound_is_exact() {
        let read = |v: serde_json::Value| to_value(&v, &SMALL);
        assert!(read(json!([1, 2, 3, 4])).is_ok());
        assert!(read(json!([1, 2, 3, 4, 5]))
            .unwrap_err()
            .contains("list or object of 5"));
        assert!(read(json!({"a": 1, "b": 2, "c": 3, "d": 4})).is_ok());
        let five = json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5});
        assert!(read(five).unwrap_err().contains("of 5 entries"));
        // Six values: the map, the list, three numbers, a string.
        assert!(read(json!({"a": [1, 2, 3], "b": "x"})).is_ok());
        assert!(read(json!({"a": [1, 2, 3], "b": "x", "c": null}))
            .unwrap_err()
            .contains("over 6 values"));
        assert!(read(json!("abc")).is_ok());
        assert!(read(json!("abcd"))
            .unwrap_err()
            .contains("string of 4 bytes"));
        assert!(read(json!({"abc": 1})).is_ok());
        assert!(read(json!({"abcd": 1}))
            .unwrap_err()
            .contains("key of 4 bytes"));
    }

    /// JSON numbers are doubles, as cel-go reads JSON; the rest as they are.
    #[test]
    fn json_reads_as_cel_go_reads_it() {
        let value = to_value(&json!([1, true, null, "s"]), &Bounds::DEFAULT).unwrap();
        let Value::List(items) = value else {
            panic!("a list")
        };
        assert!(matches!(items[0], Value::Double(d) if d == 1.0));
        assert!(matches!(items[1], Value::Bool(true)));
        assert!(matches!(items[2], Value::Null));
        assert!(matches!(&items[3], Value::String(s) if &**s == "s"));
        assert_eq!(
            (MAX_ITEMS, MAX_VALUES, MAX_STRING_BYTES),
            (4096, 65_536, 16_384)
        );
    }
}
