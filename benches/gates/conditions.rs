//! What a tenant's attestation conditions can cost (issue 73): the costliest shapes the static
//! estimate accepts, each on the largest statement a bundle can carry (a bundle is at most
//! 256 KiB, so a statement at most about 190 KiB), evaluated as the controller evaluates them.
//! Prints each one's estimate and thread CPU time, and the time one unit of the estimate takes;
//! fails when a condition at the estimate's limit would take over 50 ms, or a digest's
//! conditions at the policy's limit (on the statements judged of each type) over 200 ms.

use image_reflector::policy::conditions::{
    Condition, Input, COST_LIMIT, MAX_STATEMENTS_JUDGED, POLICY_COST_LIMIT,
};
use serde_json::{json, Value};
use std::time::Duration;

/// The largest statement bytes a 256 KiB bundle's base64 payload holds, about.
const STATEMENT_BYTES: usize = 190 << 10;

fn statement(predicate: Value) -> Value {
    let statement = json!({"_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "app", "digest": {"sha256": "ab"}}],
        "predicateType": "https://example.com/p/v1", "predicate": predicate});
    let size = statement.to_string().len();
    assert!(size <= STATEMENT_BYTES, "{size} bytes do not fit a bundle");
    statement
}

/// Thread CPU time of `f`, over `rounds`.
fn cpu(rounds: u32, mut f: impl FnMut()) -> Duration {
    let started = super::roots::thread_cpu();
    for _ in 0..rounds {
        f();
    }
    (super::roots::thread_cpu() - started) / rounds
}

pub fn hostile_conditions() {
    let numbers = statement(json!({"l": (0..4096).collect::<Vec<_>>()}));
    // 4,096 names of 40 bytes: 190 KiB.
    let names: Vec<String> = (0..4096).map(|i| format!("{i:0>40}")).collect();
    let strings = statement(json!({"names": names}));
    // 64 results of 64 findings, four fields each: 16,384 values.
    let results: Vec<Value> = (0..64)
        .map(|_| {
            let v: Vec<Value> = (0..64)
                .map(|i| json!({"id": format!("CVE-{i}"), "s": "LOW", "c": 1.0}))
                .collect();
            json!({"t": "app", "v": v})
        })
        .collect();
    let scan = statement(json!({"r": results}));
    let clauses = vec!["x >= 0.0"; 24].join(" && ");
    let wide = format!("predicate.l.all(x, {clauses})");
    let cases: Vec<(&str, &str, &Value)> = vec![
        (
            "all over 4,096 numbers",
            "predicate.l.all(x, x >= 0.0)",
            &numbers,
        ),
        ("24 comparisons per element", &wide, &numbers),
        (
            "startsWith per name",
            "predicate.names.exists(n, n.startsWith('zzz'))",
            &strings,
        ),
        (
            "matches per name",
            "predicate.names.exists(n, n.matches('^zzz[0-9]+$'))",
            &strings,
        ),
        (
            "contains per name",
            "predicate.names.exists(n, n.contains('zzz'))",
            &strings,
        ),
        (
            "nested over 4,096 findings",
            "!predicate.r.exists(r, r.v.exists(v, v.s == 'CRITICAL'))",
            &scan,
        ),
        (
            "string concatenation per name",
            "predicate.names.exists(n, 'x' + n == 'y')",
            &strings,
        ),
    ];
    println!("\n| condition (largest statement a bundle carries) | estimate | CPU | ns a unit |");
    println!("|---|---|---|---|");
    let mut worst: f64 = 0.0;
    for (name, expression, statement) in cases {
        let condition =
            Condition::compile(expression, None).unwrap_or_else(|e| panic!("{name}: {}", e.reason));
        let input = Input::new(statement, "sha256:ab").unwrap();
        let took = cpu(5, || {
            let _ = condition.holds(&input, 1_796_000_000);
        });
        let per_unit = took.as_secs_f64() * 1e9 / condition.cost as f64;
        worst = worst.max(per_unit);
        println!(
            "| {name} | {} | {:.2} ms | {per_unit:.1} |",
            condition.cost,
            took.as_secs_f64() * 1e3
        );
    }
    let at_limit = Duration::from_secs_f64(worst * COST_LIMIT as f64 / 1e9);
    println!(
        "a condition at the limit ({COST_LIMIT}) costs at most {:.1} ms of CPU",
        at_limit.as_secs_f64() * 1e3
    );
    let units = POLICY_COST_LIMIT * MAX_STATEMENTS_JUDGED as u64;
    let per_digest = Duration::from_secs_f64(worst * units as f64 / 1e9);
    println!(
        "a digest's conditions at the policy's limit ({POLICY_COST_LIMIT} on each of \
         {MAX_STATEMENTS_JUDGED} statements of a type) cost at most {:.1} ms of CPU",
        per_digest.as_secs_f64() * 1e3
    );
    assert!(
        at_limit <= Duration::from_millis(50),
        "a condition at the estimate's limit may cost over 50 ms"
    );
    assert!(
        per_digest <= Duration::from_millis(200),
        "a digest's conditions may cost over 200 ms"
    );
}
