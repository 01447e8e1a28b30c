//! CEL's conformance suite (google/cel-spec's `tests/simple/testdata`, copied into
//! `tests/data/cel-spec/` with its SOURCE.md) run through the attestation conditions' evaluator
//! (`policy::conditions::evaluate`). A test is outside the subset when it needs what conditions
//! do not have (messages, declared variables, containers, unknowns, type values); the rest run.
//! None may be true here where the suite expects false or an error; each file's passed, failed
//! (held: an error or a refusal where the suite has a value) and outside counts are printed and
//! written in docs/imagepolicy.md.

use super::textproto::{self, Field};
use image_reflector::policy::conditions::{evaluate, Value};
use std::collections::BTreeMap;

/// The files copied, all within the subset in part: the rest of the suite (proto2, proto3,
/// enums, wrappers, optionals, type deduction, unknowns and the extension libraries) is about
/// what conditions do not have, and is not copied.
const FILES: [&str; 16] = [
    "basic",
    "comparisons",
    "conversions",
    "dynamic",
    "fields",
    "fp_math",
    "integer_math",
    "lists",
    "logic",
    "macros",
    "macros2",
    "namespace",
    "parse",
    "plumbing",
    "string",
    "timestamps",
];

/// What a test expects.
enum Expected {
    Value(Value),
    Error,
    /// Outside the subset, and why.
    Outside(&'static str),
}

#[derive(Default, Debug)]
struct Count {
    passed: usize,
    failed: usize,
    outside: usize,
}

fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_cel_conformance_suite_is_never_passed_where_it_holds() {
    let mut counts: BTreeMap<&str, Count> = BTreeMap::new();
    let mut violations = Vec::new();
    let mut outside_why: BTreeMap<&str, usize> = BTreeMap::new();
    for file in FILES {
        let path = root().join(format!(
            "tests/data/cel-spec/tests/simple/testdata/{file}.textproto"
        ));
        let text = std::fs::read_to_string(&path).unwrap();
        let parsed = textproto::parse(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let count = counts.entry(file).or_default();
        for section in parsed.all("section") {
            for test in section.all("test") {
                let name = test.get("name").and_then(Field::text).unwrap_or_default();
                let Some(expr) = test.get("expr").and_then(Field::text) else {
                    count.outside += 1;
                    continue;
                };
                let expected = expectation(test);
                let ours = match expected {
                    Expected::Outside(why) => {
                        count.outside += 1;
                        *outside_why.entry(why).or_default() += 1;
                        continue;
                    }
                    _ => evaluate(&expr),
                };
                let verdict = judge(&expected, &ours);
                match verdict {
                    Verdict::Pass => count.passed += 1,
                    Verdict::Held => {
                        count.failed += 1;
                        if std::env::var_os("CEL_CONFORMANCE_VERBOSE").is_some() {
                            println!("held {file}/{name}: `{expr}` is {ours:?} here");
                        }
                    }
                    Verdict::Violation => {
                        count.failed += 1;
                        violations.push(format!("{file}/{name}: `{expr}` is {ours:?} here"));
                    }
                }
            }
        }
    }
    let total = counts.values().fold(Count::default(), |t, c| Count {
        passed: t.passed + c.passed,
        failed: t.failed + c.failed,
        outside: t.outside + c.outside,
    });
    for (file, c) in &counts {
        println!(
            "{file}: {} passed, {} failed, {} outside",
            c.passed, c.failed, c.outside
        );
    }
    println!("outside the subset, by what the test needs: {outside_why:?}");
    println!(
        "cel-spec: {} passed, {} failed, {} outside the subset",
        total.passed, total.failed, total.outside
    );
    assert!(
        violations.is_empty(),
        "true here where the suite is not:\n{}",
        violations.join("\n")
    );
    assert!(total.passed >= 900, "{total:?}");
}

enum Verdict {
    Pass,
    /// Not the suite's answer, and not true where it is not: held.
    Held,
    /// True here where the suite expects false or an error.
    Violation,
}

fn judge(expected: &Expected, ours: &Result<Value, String>) -> Verdict {
    let ours_true = matches!(ours, Ok(Value::Bool(true)));
    match (expected, ours) {
        (Expected::Value(v), Ok(o)) if same(v, o) => Verdict::Pass,
        (Expected::Value(Value::Bool(false)), _) | (Expected::Error, _) if ours_true => {
            Verdict::Violation
        }
        (Expected::Error, Err(_)) => Verdict::Pass,
        _ => Verdict::Held,
    }
}

/// What `test` expects, or why it is outside the subset.
fn expectation(test: &Field) -> Expected {
    let needs = [
        "bindings",
        "type_env",
        "container",
        "check_only",
        "typed_result",
        "unknown",
        "any_unknowns",
    ];
    if let Some(field) = needs.iter().find(|n| test.get(n).is_some()) {
        return Expected::Outside(field);
    }
    if test.get("eval_error").is_some() || test.get("any_eval_errors").is_some() {
        return Expected::Error;
    }
    match test.get("value").map(value) {
        Some(Some(v)) => Expected::Value(v),
        Some(None) => Expected::Outside("a message, enum or type value"),
        // No expectation written: the suite's default is `true`.
        None => Expected::Value(Value::Bool(true)),
    }
}

/// A `cel.expr.Value` as ours, `None` when it is of a kind conditions do not have.
fn value(f: &Field) -> Option<Value> {
    let names = f.names();
    let kind = *names.first()?;
    let field = f.get(kind)?;
    let word = || field.word().unwrap_or_default().to_string();
    Some(match kind {
        "int64_value" => Value::Int(word().parse().ok()?),
        "uint64_value" => Value::Uint(word().parse().ok()?),
        "double_value" => Value::Double(match word().to_ascii_lowercase().as_str() {
            "inf" | "infinity" => f64::INFINITY,
            "-inf" | "-infinity" => f64::NEG_INFINITY,
            "nan" => f64::NAN,
            w => w.parse().ok()?,
        }),
        "string_value" => Value::String(field.text()?.into()),
        "bytes_value" => match field {
            Field::Text(b) => Value::Bytes(b.clone().into()),
            _ => return None,
        },
        "bool_value" => Value::Bool(word() == "true"),
        "null_value" => Value::Null,
        "list_value" => Value::List(
            field
                .all("values")
                .map(value)
                .collect::<Option<Vec<_>>>()?
                .into(),
        ),
        "map_value" => {
            let mut map = BTreeMap::new();
            for entry in field.all("entries") {
                let key = value(entry.get("key")?)?.key()?;
                map.insert(key, value(entry.get("value")?)?);
            }
            Value::Map(map.into())
        }
        _ => return None,
    })
}

/// The same value: of one kind, equal (NaN the same as NaN, as the suite writes it).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Uint(x), Value::Uint(y)) => x == y,
        (Value::Double(x), Value::Double(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| same(p, q))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w: &Value| same(v, w)))
        }
        _ => false,
    }
}
