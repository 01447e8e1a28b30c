//! The attestation conditions judged by cel-go, the CEL of Kubernetes (tests/sigtools/celjudge,
//! built by `make sigtools`): a corpus of expression × statement cases (fields, `has()`,
//! macros, string functions and regular expressions, timestamps and durations, numbers, type
//! errors, big lists) is evaluated by cel-go and by the controller's conditions
//! (`policy::conditions`, what `spec.verify.attestations` runs). No case may be true here and
//! not in cel-go; a case true in cel-go and not here must be one of [`DIFFERENCES`] (listed
//! with their reasons in docs/imagepolicy.md), each of which must still differ.

mod corpus;

use image_reflector::policy::conditions::{Condition, Input};
use serde_json::{json, Value};
use std::collections::BTreeMap;

const DIGEST: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
const NOW: &str = "2026-12-01T00:00:00Z";
/// [`NOW`] in seconds since the epoch.
const NOW_UNIX: i64 = 1_796_083_200;

/// Where this evaluator holds what cel-go passes, on purpose: the expression's name, and why.
/// The reverse, true here and not in cel-go, is never allowed.
pub const DIFFERENCES: &[(&str, &str)] = &[
    ("ts-tz-arg", "the timestamp accessors with a time zone are refused at compile time: they read the zone database, which the controller's image does not carry"),
    ("double-str-hex", "double() of a hexadecimal float (0x1p-2) is an error: only decimal text and the words for infinity and NaN are read"),
    ("map-over-map", "map() over a map's keys is an error: cel-go's order over the keys is Go's map order, which changes from one evaluation to the next"),
    ("filter-over-map", "filter() over a map's keys is an error, for map()'s reason"),
];

/// cel-go's verdicts on `cases`, by id.
fn judged(cases: &[(String, &str, &Value)]) -> BTreeMap<String, (bool, String)> {
    let lines: Vec<String> = cases
        .iter()
        .map(|(id, expression, statement)| {
            json!({"id": id, "expression": expression, "statement": statement,
                   "digest": DIGEST, "now": NOW})
            .to_string()
        })
        .collect();
    crate::support::sigtools::judge_lines("cel-judge", lines)
}

/// Our verdict: the condition compiled as a spec's is, evaluated as the controller does.
fn ours(expression: &str, statement: &Value) -> Result<(), String> {
    let condition = Condition::cached(expression, None).map_err(|e| e.reason)?;
    let input = Input::new(statement, DIGEST)?;
    condition
        .holds(&input, NOW_UNIX)
        .map_err(|unmet| unmet.message)
}

#[test]
#[ignore = "needs cel-go's judge: make e2e-signatures"]
fn every_condition_is_judged_as_cel_go_judges_it() {
    assert_eq!(
        NOW_UNIX,
        httpdate::parse_http_date("Tue, 01 Dec 2026 00:00:00 GMT")
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    );
    let statements = corpus::statements();
    let expressions: Vec<_> = corpus::expressions()
        .into_iter()
        .chain(corpus::families())
        .collect();
    let cases: Vec<(String, &str, &Value)> = expressions
        .iter()
        .flat_map(|(e, expression)| {
            statements
                .iter()
                .map(move |(s, statement)| (format!("{e}/{s}"), *expression, statement))
        })
        .collect();
    let theirs = judged(&cases);
    assert_eq!(theirs.len(), cases.len(), "one verdict per case");
    // The corpus with cel-go's verdicts, for measuring another evaluator against it (the cel
    // crate was: docs/imagepolicy.md, "Conditions").
    if let Some(out) = std::env::var_os("CEL_CORPUS_OUT") {
        let lines: Vec<String> = cases
            .iter()
            .map(|(id, expression, statement)| {
                json!({"id": id, "expression": expression, "statement": statement,
                       "now": NOW_UNIX, "digest": DIGEST, "celgo": theirs[id].0})
                .to_string()
            })
            .collect();
        std::fs::write(out, lines.join("\n") + "\n").unwrap();
    }
    let (mut agree, mut stricter, mut wrong) = (0, BTreeMap::new(), Vec::new());
    for (id, expression, statement) in &cases {
        let ours = ours(expression, statement);
        let (valid, reason) = &theirs[id];
        let name = id.split('/').next().unwrap_or_default();
        let line = format!(
            "{id} `{expression}`: ours {} ({}), cel-go {} ({reason})",
            if ours.is_ok() { "true" } else { "not" },
            ours.as_ref().err().map_or("", String::as_str),
            if *valid { "true" } else { "not" },
        );
        match (ours.is_ok(), *valid) {
            (a, b) if a == b => agree += 1,
            (true, false) => wrong.push(format!("{line}: PASSES WHAT CEL-GO HOLDS")),
            _ if DIFFERENCES.iter().any(|(n, _)| *n == name) => {
                stricter.entry(name).or_insert(line);
            }
            _ => wrong.push(format!("{line}: a difference not listed")),
        }
    }
    for (name, _) in DIFFERENCES {
        if !stricter.contains_key(name) {
            wrong.push(format!(
                "{name}: listed as a difference, and agrees everywhere"
            ));
        }
    }
    let valid = theirs.values().filter(|(v, _)| *v).count();
    println!(
        "{} condition cases ({} expressions, {valid} true to cel-go): {agree} agree, {} expressions \
         held here and passed by cel-go, on purpose",
        cases.len(),
        expressions.len(),
        stricter.len()
    );
    for line in stricter.values() {
        println!("  {line}");
    }
    assert!(cases.len() >= 1000, "the corpus has {} cases", cases.len());
    assert!(valid >= 300, "only {valid} cases are true to cel-go");
    assert!(
        wrong.is_empty(),
        "{} disagreements:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
