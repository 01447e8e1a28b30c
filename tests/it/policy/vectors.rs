//! Flux's policy tests, as data in this repository (`tests/data/flux-policy-cases.jsonl`, see
//! `tests/data/README.md`), through the library: every case runs, and a case where we answer
//! otherwise on purpose must give our documented answer. The same deviations are listed for
//! `make conformance` in `docs/conformance-deviations.txt`; a test keeps the two in step.

use crate::support::root;
use image_reflector::policy::{Filter, FilterSpec, Order, Policy, PolicyChoice};
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Case {
    case: String,
    #[serde(default)]
    note: Option<String>,
    policy: Option<Kind>,
    filter_tags: Option<FilterTags>,
    tags: Option<Vec<String>>,
    flux: Outcome,
    #[serde(default)]
    input_order_matters: bool,
    /// Our answer where it differs from Flux's on purpose, and why.
    #[serde(default)]
    ours: Option<Outcome>,
    #[serde(default)]
    why: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
enum Kind {
    Semver(String),
    Alphabetical(String),
    Numerical(String),
    /// An empty `spec.policy`, which Flux refuses.
    None(serde::de::IgnoredAny),
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilterTags {
    pattern: String,
    extract: String,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
enum Outcome {
    /// The policy elects this tag.
    Latest(String),
    /// The policy (or its construction) fails.
    Error(bool),
    /// Construction alone (no tags): the policy is valid.
    Valid(bool),
    /// Filter only: the sorted, deduplicated values the policy would see.
    Filtered(Vec<String>),
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(root().join("tests/data/flux-policy-cases.jsonl"))
        .expect("the cases are in the repository");
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", i + 1))
        })
        .collect()
}

fn order(text: &str) -> Result<Order, String> {
    match text.to_ascii_uppercase().as_str() {
        "" | "ASC" => Ok(Order::Asc),
        "DESC" => Ok(Order::Desc),
        other => Err(format!("invalid order {other}")),
    }
}

fn policy(kind: &Kind, filter: Option<&FilterTags>) -> Result<Policy, String> {
    let choice = match kind {
        Kind::Semver(range) => PolicyChoice {
            semver: Some(range.clone()),
            ..Default::default()
        },
        Kind::Alphabetical(o) => PolicyChoice {
            alphabetical: Some(order(o)?),
            ..Default::default()
        },
        Kind::Numerical(o) => PolicyChoice {
            numerical: Some(order(o)?),
            ..Default::default()
        },
        Kind::None(_) => PolicyChoice::default(),
    };
    let filter = filter.map(|f| FilterSpec {
        pattern: f.pattern.clone(),
        extract: f.extract.clone(),
    });
    Policy::new(&choice, filter.as_ref()).map_err(|e| e.to_string())
}

/// What our library answers for a case.
fn run(case: &Case) -> Outcome {
    let tags = case.tags.clone();
    let Some(kind) = &case.policy else {
        let f = case
            .filter_tags
            .as_ref()
            .expect("a filter-only case has a filter");
        let filter = Filter::new(&f.pattern, &f.extract).expect("the pattern compiles");
        let mut scratch = filter.scratch();
        let mut values: Vec<String> = tags
            .unwrap_or_default()
            .iter()
            .filter_map(|t| filter.apply(t, &mut scratch).map(str::to_string))
            .collect();
        values.sort();
        values.dedup();
        return Outcome::Filtered(values);
    };
    match (policy(kind, case.filter_tags.as_ref()), tags) {
        (Err(_), _) => Outcome::Error(true),
        (Ok(_), None) => Outcome::Valid(true),
        (Ok(p), Some(tags)) => match p.select(tags.iter().map(String::as_str)) {
            Ok(tag) => Outcome::Latest(tag.to_string()),
            Err(_) => Outcome::Error(true),
        },
    }
}

#[test]
fn flux_policy_cases_agree_except_documented_deviations() {
    let cases = cases();
    assert!(cases.len() >= 140, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let want = case.ours.as_ref().unwrap_or(&case.flux);
        let got = run(case);
        if &got != want {
            let mut line = format!("{}: got {got:?}, want {want:?}", case.case);
            if let Some(note) = &case.note {
                line.push_str(&format!(" ({note})"));
            }
            failures.push(line);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases disagree:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_deviation_is_explained_differs_from_flux_and_is_listed_for_conformance() {
    let cases = cases();
    let listed = std::fs::read_to_string(root().join("docs/conformance-deviations.txt")).unwrap();
    let mut listed: Vec<&str> = listed
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    let mut deviating: Vec<&str> = Vec::new();
    for case in cases.iter().filter(|c| c.ours.is_some()) {
        assert!(case.why.is_some(), "{}: a deviation says why", case.case);
        assert_ne!(case.ours.as_ref(), Some(&case.flux), "{}", case.case);
        deviating.push(&case.case);
    }
    listed.sort_unstable();
    deviating.sort_unstable();
    assert_eq!(deviating, listed);
}

#[test]
fn cases_whose_flux_answer_depends_on_input_order_hold_in_that_order() {
    // Flux elects among equal-ranked tags by its input order, which is the store's descending
    // byte order; these cases give their tags in that order, and we elect the same tag.
    let cases = cases();
    let ordered: Vec<&Case> = cases.iter().filter(|c| c.input_order_matters).collect();
    assert!(!ordered.is_empty());
    for case in ordered {
        let tags = case.tags.as_ref().expect("tags");
        let reversed = Case {
            tags: Some(tags.iter().rev().cloned().collect()),
            ..case.clone()
        };
        assert_eq!(
            run(&reversed),
            run(case),
            "{}: our answer ignores input order",
            case.case
        );
    }
}
