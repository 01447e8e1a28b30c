//! Flux's policy vectors (../shared/spec/flux-policy-vectors.json) through the library,
//! including the filter-only ones the conformance tool skips. The deliberate deviations are
//! listed in docs/conformance-deviations.txt.

use crate::support::root;
use image_reflector::policy::{Filter, FilterSpec, Order, Policy, PolicyChoice};
use serde_json::Value;

fn vectors() -> Option<Vec<Value>> {
    let path = root().join("../shared/spec/flux-policy-vectors.json");
    let text = std::fs::read_to_string(&path).ok()?;
    Some(serde_json::from_str(&text).expect("vectors are JSON"))
}

fn order(v: &Value) -> Result<Order, String> {
    match v
        .get("order")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_uppercase()
        .as_str()
    {
        "" | "ASC" => Ok(Order::Asc),
        "DESC" => Ok(Order::Desc),
        other => Err(format!("invalid order {other}")),
    }
}

fn build(v: &Value) -> Result<Policy, String> {
    let p = &v["policy"];
    let choice = PolicyChoice {
        semver: p
            .get("semver")
            .map(|s| s["range"].as_str().unwrap_or("").to_string()),
        alphabetical: p.get("alphabetical").map(order).transpose()?,
        numerical: p.get("numerical").map(order).transpose()?,
    };
    let filter = v["filterTags"].as_object().map(|f| FilterSpec {
        pattern: f
            .get("pattern")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        extract: f
            .get("extract")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    });
    Policy::new(&choice, filter.as_ref()).map_err(|e| e.to_string())
}

#[test]
fn flux_policy_vectors_agree_except_documented_deviations() {
    let Some(vectors) = vectors() else {
        eprintln!("skipped: ../shared/spec/flux-policy-vectors.json is not beside this checkout");
        return;
    };
    let deviations =
        std::fs::read_to_string(root().join("docs/conformance-deviations.txt")).unwrap();
    let deviations: Vec<&str> = deviations
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    let (mut checked, mut deviated, mut failures) = (0, 0, Vec::new());
    for v in &vectors {
        let name = v["source"].as_str().unwrap_or("?");
        let tags: Option<Vec<&str>> = v["tags"]
            .as_array()
            .map(|a| a.iter().map(|t| t.as_str().unwrap()).collect());
        let outcome: Result<Option<String>, String> = if v["policy"].is_null() {
            let f = &v["filterTags"];
            let filter = Filter::new(
                f["pattern"].as_str().unwrap_or(""),
                f["extract"].as_str().unwrap_or(""),
            )
            .unwrap();
            let mut scratch = filter.scratch();
            let mut keys: Vec<String> = tags
                .unwrap_or_default()
                .iter()
                .filter_map(|t| filter.apply(t, &mut scratch).map(str::to_string))
                .collect();
            keys.sort();
            keys.dedup();
            let mut want: Vec<String> =
                serde_json::from_value(v["expectedFilteredTags"].clone()).unwrap();
            want.sort();
            checked += 1;
            if keys != want {
                failures.push(format!("{name}: filtered {keys:?}, want {want:?}"));
            }
            continue;
        } else {
            match (build(v), &tags) {
                (Err(e), _) => Err(e),
                (Ok(_), None) => Ok(None),
                (Ok(p), Some(t)) => p
                    .select(t.iter().copied())
                    .map(|s| Some(s.to_string()))
                    .map_err(|e| e.to_string()),
            }
        };
        checked += 1;
        let good = match (&outcome, v["expectError"].as_bool().unwrap_or(false)) {
            (Err(_), true) => true,
            (Ok(Some(got)), false) => Some(got.as_str()) == v["expected"].as_str(),
            (Ok(None), false) => tags.is_none(),
            _ => false,
        };
        if !good {
            if deviations.contains(&name) {
                deviated += 1;
            } else {
                failures.push(format!("{name}: got {outcome:?}, want {}", v["expected"]));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} vectors disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(
        deviated,
        deviations.len(),
        "every listed deviation should still deviate"
    );
    assert!(checked >= 140, "only {checked} vectors checked");
}
