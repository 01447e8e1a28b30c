//! What a tenant's attestation conditions can cost (issue 86): conditions written to spend the
//! whole budget, each on the largest statement a bundle can carry (a bundle is at most 256 KiB,
//! so a statement at most about 190 KiB) and at the data bounds (16 KiB strings, 4,096-item
//! lists), evaluated as the controller evaluates them. Prints each one's units spent, thread CPU
//! time and time a unit; the worst time a unit, times [`COST_LIMIT`] and [`POLICY_COST_LIMIT`],
//! is the most a condition and a digest can take. Fails over 100 ms a condition or 400 ms a
//! digest.

use image_reflector::policy::conditions::{
    Budget, Condition, Input, COST_LIMIT, MAX_STRING_BYTES, POLICY_COST_LIMIT,
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

/// This thread's CPU time, to the nanosecond (user and system).
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Thread CPU time of one run of `f`: the mean of as many runs as take 100 ms (at least 3).
fn cpu(mut f: impl FnMut()) -> Duration {
    let started = thread_cpu();
    let mut rounds = 0;
    while rounds < 3 || thread_cpu() - started < Duration::from_millis(100) {
        f();
        rounds += 1;
    }
    (thread_cpu() - started) / rounds
}

pub fn hostile_conditions() {
    let mut late = vec![2; 4096];
    late[4095] = 1;
    let numbers = statement(json!({"a": vec![1; 4096], "b": late}));
    // Eleven strings of 16 KiB: 176 KiB.
    let text: String = "ab".repeat(MAX_STRING_BYTES / 2);
    let long = statement(json!({"t": vec![text.clone(); 11]}));
    let unicode = statement(json!({"t": vec!["é".repeat(MAX_STRING_BYTES / 2); 11]}));
    // 128 strings of 1 KiB, for the pattern whose automaton is largest; and of random a and b,
    // where the regex crate's lazy DFA gives up and its slowest engine runs.
    let kib = statement(json!({"t": vec![&text[..1024]; 128]}));
    let mut x: u64 = 12345;
    let random: String = (0..1024)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if (x >> 33) & 1 == 1 {
                'a'
            } else {
                'b'
            }
        })
        .collect();
    let three = format!("{random}{random}{random}");
    let random = statement(json!({"t": vec![random; 128]}));
    let random3 = statement(json!({"t": vec![three; 32]}));
    // 4,096 names of 40 bytes: 190 KiB.
    let names: Vec<String> = (0..4096).map(|i| format!("{i:0>40}")).collect();
    let strings = statement(json!({"names": names}));
    let clauses = vec!["x >= 0"; 24].join(" && ");
    let wide = format!("predicate.a.all(x, {clauses}) && predicate.a.all(x, {clauses})");
    let cases: Vec<(&str, String, &Value)> = vec![
        (
            "each of 4,096 against each of 4,096",
            "predicate.a.all(x, predicate.b.exists(y, y == x))".into(),
            &numbers,
        ),
        ("24 comparisons per element, twice", wide, &numbers),
        (
            "in over 4,096 per element",
            "predicate.a.all(x, x in predicate.b)".into(),
            &numbers,
        ),
        (
            "lists compared per element",
            "predicate.a.all(x, predicate.a == predicate.a)".into(),
            &numbers,
        ),
        (
            "lists concatenated per element",
            "predicate.a.all(x, size(predicate.a + predicate.b) > 0)".into(),
            &numbers,
        ),
        (
            "map() of lists per element",
            "predicate.a.all(x, size(predicate.a.map(y, [y, y])) > 0)".into(),
            &numbers,
        ),
        (
            "matches, 1,000 repeats, 16 KiB",
            "predicate.t.all(s, s.matches('[ab]*a[ab]{998}$'))".into(),
            &long,
        ),
        (
            "matches, 1,000 repeats, 1 KiB",
            "predicate.t.all(s, !s.matches('[ab]*c[ab]{998}$'))".into(),
            &kib,
        ),
        (
            "matches, 1,000 repeats, 1 KiB, found",
            "predicate.t.all(s, s.matches('[ab]*a[ab]{998}'))".into(),
            &kib,
        ),
        (
            "matches, 3,000 states, random 1 KiB",
            "predicate.t.all(s, !s.matches('(?:(?:a|b)(?:a|b)?){1000}c'))".into(),
            &random,
        ),
        (
            "matches, 600 states, random 3 KiB",
            "predicate.t.all(s, !s.matches('(?:(?:a|b)(?:a|b)?){200}c'))".into(),
            &random3,
        ),
        (
            "matches, word boundaries, random 1 KiB",
            "predicate.t.all(s, s.matches('\\\\b[ab]*a[ab]{500}\\\\b'))".into(),
            &random,
        ),
        (
            "matches, small, 16 KiB",
            "predicate.t.all(s, s.matches('^(a|b)+c'))".into(),
            &long,
        ),
        (
            "matches per name",
            "predicate.names.all(n, n.matches('^[0-9]+$'))".into(),
            &strings,
        ),
        (
            "size of 16 KiB of é",
            "predicate.t.all(s, predicate.t.all(u, size(u) > 0))".into(),
            &unicode,
        ),
        (
            "contains over 16 KiB",
            "predicate.t.all(s, predicate.t.all(u, !u.contains('c')))".into(),
            &long,
        ),
        (
            "16 KiB concatenated",
            "predicate.t.all(s, predicate.t.all(u, size(s + u) > 0))".into(),
            &long,
        ),
        (
            "16 KiB compared",
            "predicate.t.all(s, predicate.t.all(u, s == u))".into(),
            &long,
        ),
        (
            "duration() of 16 KiB",
            "predicate.t.all(s, predicate.t.all(u, duration(u) > duration('0')))".into(),
            &long,
        ),
        (
            "double() of 16 KiB",
            "predicate.t.all(s, predicate.t.all(u, double(u) > 0.0))".into(),
            &long,
        ),
        (
            "startsWith per name per name",
            "predicate.names.all(n, predicate.names.all(m, !m.startsWith('zzz')))".into(),
            &strings,
        ),
    ];
    println!(
        "\n| condition (largest statement a bundle carries) | units spent | CPU | ns a unit |"
    );
    println!("|---|---|---|---|");
    let mut worst: f64 = 0.0;
    for (name, expression, statement) in &cases {
        let condition =
            Condition::compile(expression, None).unwrap_or_else(|e| panic!("{name}: {}", e.reason));
        let input = Input::new(statement, "sha256:ab").unwrap();
        let mut spent = 0;
        let took = cpu(|| {
            let mut budget = Budget::new(COST_LIMIT);
            let _ = condition.holds_within(&input, 1_796_000_000, &mut budget);
            spent = COST_LIMIT - budget.left;
        });
        let per_unit = took.as_secs_f64() * 1e9 / spent.max(1) as f64;
        // A time a unit is read where at least a hundredth of the budget was spent (runs of
        // 100 ms make that exact enough); a condition that stops early (its first call over
        // the budget) is its own time.
        worst = match spent >= COST_LIMIT / 100 {
            true => worst.max(per_unit),
            false => worst.max(took.as_secs_f64() * 1e9 / COST_LIMIT as f64),
        };
        println!(
            "| {name} | {spent} | {:.2} ms | {per_unit:.1} |",
            took.as_secs_f64() * 1e3
        );
    }
    let at_limit = Duration::from_secs_f64(worst * COST_LIMIT as f64 / 1e9);
    println!(
        "a condition at the limit ({COST_LIMIT}) costs at most {:.1} ms of CPU",
        at_limit.as_secs_f64() * 1e3
    );
    let per_digest = Duration::from_secs_f64(worst * POLICY_COST_LIMIT as f64 / 1e9);
    println!(
        "a digest's conditions at the policy's limit ({POLICY_COST_LIMIT}, every statement of \
         every type) cost at most {:.1} ms of CPU",
        per_digest.as_secs_f64() * 1e3
    );
    assert!(
        at_limit <= Duration::from_millis(100),
        "a condition at the limit may cost over 100 ms"
    );
    assert!(
        per_digest <= Duration::from_millis(400),
        "a digest's conditions may cost over 400 ms"
    );
}
