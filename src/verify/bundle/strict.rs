//! A signed in-toto statement read as strictly as sigstore-go reads it (protojson into
//! in-toto's `Statement`): a key given twice anywhere, a field the statement or a subject does
//! not have, a field given under both its JSON and its proto name, or over 1,024 subjects, and
//! the statement is refused. serde_json alone keeps the last of two keys and ignores unknown
//! ones, so a condition could read a value sigstore-go would never have read.

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// The most subjects a statement may name (sigstore-go's bound).
pub const MAX_SUBJECTS: usize = 1024;

/// A statement's fields, each by its JSON name and its proto name.
const STATEMENT_FIELDS: [(&str, &str); 4] = [
    ("_type", "_type"),
    ("subject", "subject"),
    ("predicateType", "predicate_type"),
    ("predicate", "predicate"),
];
/// A subject's (in-toto's `ResourceDescriptor`).
const SUBJECT_FIELDS: [(&str, &str); 7] = [
    ("name", "name"),
    ("uri", "uri"),
    ("digest", "digest"),
    ("content", "content"),
    ("downloadLocation", "download_location"),
    ("mediaType", "media_type"),
    ("annotations", "annotations"),
];

/// `payload` as JSON with no key given twice, its statement and subject fields in-toto's,
/// the proto names read as the JSON ones; or why not.
pub fn statement(payload: &[u8]) -> Result<Value, String> {
    let mut reader = serde_json::Deserializer::from_slice(payload);
    let Unique(value) = serde::Deserialize::deserialize(&mut reader).map_err(|e| e.to_string())?;
    reader.end().map_err(|e| e.to_string())?;
    let Value::Object(mut fields) = value else {
        return Err("not a JSON object".into());
    };
    fields = known(fields, &STATEMENT_FIELDS, "the statement")?;
    typed(
        &fields,
        &[("_type", "a string"), ("predicateType", "a string")],
        "the statement",
    )?;
    typed(
        &fields,
        &[("subject", "a list"), ("predicate", "an object")],
        "the statement",
    )?;
    if let Some(Value::Array(subjects)) = fields.get_mut("subject") {
        if subjects.len() > MAX_SUBJECTS {
            return Err(format!(
                "{} subjects; at most {MAX_SUBJECTS} are read",
                subjects.len()
            ));
        }
        for subject in subjects.iter_mut() {
            let Value::Object(f) = subject else {
                return Err("a subject is not an object".into());
            };
            *f = known(std::mem::take(f), &SUBJECT_FIELDS, "a subject")?;
            let strings = ["name", "uri", "content", "downloadLocation", "mediaType"];
            let strings: Vec<_> = strings.iter().map(|n| (*n, "a string")).collect();
            typed(f, &strings, "a subject")?;
            typed(
                f,
                &[("digest", "an object"), ("annotations", "an object")],
                "a subject",
            )?;
            let digests = f.get("digest").and_then(Value::as_object);
            if digests.is_some_and(|d| d.values().any(|h| !h.is_string())) {
                return Err("a subject's digest is not a map of strings".into());
            }
        }
    }
    Ok(Value::Object(fields))
}

/// `fields` with each of `allowed` under its JSON name; another field, or one given under
/// both names, refused.
fn known(
    fields: Map<String, Value>,
    allowed: &[(&str, &str)],
    what: &str,
) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for (key, value) in fields {
        let Some((json, _)) = allowed.iter().find(|(j, p)| *j == key || *p == key) else {
            let shown: String = key.chars().take(64).collect();
            return Err(format!(
                "{what} has the field '{shown}', which in-toto's has not"
            ));
        };
        if out.insert(json.to_string(), value).is_some() {
            return Err(format!("{what} gives '{json}' twice"));
        }
    }
    Ok(out)
}

/// Each of `fields` named in `kinds` is of its kind, as protojson wants it (`null` is unset).
fn typed(fields: &Map<String, Value>, kinds: &[(&str, &str)], what: &str) -> Result<(), String> {
    for (name, kind) in kinds {
        let fits = match fields.get(*name) {
            None | Some(Value::Null) => true,
            Some(v) => match *kind {
                "a string" => v.is_string(),
                "a list" => v.is_array(),
                _ => v.is_object(),
            },
        };
        if !fits {
            return Err(format!("{what}'s '{name}' is not {kind}"));
        }
    }
    Ok(())
}

/// A JSON value whose objects never give a key twice.
struct Unique(Value);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = Map::new();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                let shown: String = key.chars().take(64).collect();
                return Err(de::Error::custom(format!(
                    "the key '{shown}' is given twice"
                )));
            }
            let Unique(value) = map.next_value()?;
            fields.insert(key, value);
        }
        Ok(Value::Object(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What protojson refuses, refused; what it reads (either field name), read the same.
    #[test]
    fn a_statement_is_read_as_sigstore_go_reads_it() {
        let ok = br#"{"_type": "https://in-toto.io/Statement/v1", "predicate_type": "t",
            "subject": [{"name": "a", "digest": {"sha256": "ab"}, "media_type": "m"}],
            "predicate": {"x": [1, {"y": 2}]}}"#;
        let read = statement(ok).unwrap();
        assert_eq!(read["predicateType"], "t");
        assert_eq!(read["subject"][0]["mediaType"], "m");
        assert_eq!(read["predicate"]["x"][1]["y"], 2);
        let refused = |json: &str| statement(json.as_bytes()).unwrap_err();
        assert!(refused(r#"{"_type": "a", "_type": "b"}"#).contains("'_type' is given twice"));
        let deep = r#"{"predicate": {"a": {"b": 1, "b": 2}}}"#;
        assert!(refused(deep).contains("'b' is given twice"));
        assert!(refused(r#"{"extra": 1}"#).contains("the field 'extra'"));
        assert!(refused(r#"{"subject": [{"sha256": "ab"}]}"#).contains("a subject has the field"));
        let both = r#"{"predicateType": "a", "predicate_type": "b"}"#;
        assert!(refused(both).contains("gives 'predicateType' twice"));
        assert!(refused("[1]").contains("not a JSON object"));
        assert!(refused(r#"{"_type": 1}"#).contains("'_type' is not a string"));
        assert!(refused(r#"{"subject": {}}"#).contains("'subject' is not a list"));
        assert!(refused(r#"{"subject": [1]}"#).contains("a subject is not an object"));
        assert!(refused(r#"{"subject": [{"name": 1}]}"#).contains("'name' is not a string"));
        let digest = r#"{"subject": [{"digest": {"sha256": 1}}]}"#;
        assert!(refused(digest).contains("not a map of strings"));
        assert!(statement(b"{} x").is_err());
        let subjects = |n: usize| {
            let s = vec![serde_json::json!({"digest": {"sha256": "ab"}}); n];
            serde_json::to_vec(&serde_json::json!({"subject": s})).unwrap()
        };
        assert!(statement(&subjects(MAX_SUBJECTS)).is_ok());
        assert!(statement(&subjects(MAX_SUBJECTS + 1))
            .unwrap_err()
            .contains("1025 subjects"));
    }
}
