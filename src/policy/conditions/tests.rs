use super::*;
use serde_json::json;

mod lexing;
mod messages;
mod semantics;

const NOW: i64 = 1_796_000_000; // 2026-11-29T...

fn statement(predicate: serde_json::Value) -> serde_json::Value {
    json!({"_type": "https://in-toto.io/Statement/v1",
           "subject": [{"name": "app", "digest": {"sha256": "ab"}}],
           "predicateType": "https://slsa.dev/provenance/v1", "predicate": predicate})
}

/// Whether `expression` is true on `predicate`; else why not, or why it was not evaluated.
fn holds(expression: &str, predicate: serde_json::Value) -> Result<(), String> {
    let condition = Condition::compile(expression, None).map_err(|e| e.reason)?;
    let input = Input::new(&statement(predicate), "sha256:ab")?;
    condition.holds(&input, NOW).map_err(|unmet| unmet.message)
}

/// How `expression` is not true on `predicate` (it compiles, and the statement is read).
fn unmet(expression: &str, predicate: serde_json::Value) -> Option<UnmetKind> {
    judged(expression, predicate).err().map(|unmet| unmet.kind)
}

fn judged(expression: &str, predicate: serde_json::Value) -> Result<(), Unmet> {
    let condition = Condition::compile(expression, None).unwrap();
    let input = Input::new(&statement(predicate), "sha256:ab").unwrap();
    condition.holds(&input, NOW)
}

fn refused(expression: &str) -> String {
    Condition::compile(expression, None).unwrap_err().reason
}

#[test]
fn a_condition_passes_only_when_true() {
    let provenance = json!({"buildDefinition": {"externalParameters": {"workflow": {
        "repository": "https://github.com/acme/app", "ref": "refs/tags/v1.2.0"}}},
        "runDetails": {"builder": {"id": "https://github.com/actions/runner"}}});
    let source = "predicate.buildDefinition.externalParameters.workflow.repository == \
                  'https://github.com/acme/app'";
    assert_eq!(holds(source, provenance.clone()), Ok(()));
    let tag = "predicate.buildDefinition.externalParameters.workflow.ref.startsWith('refs/tags/')";
    assert_eq!(holds(tag, provenance.clone()), Ok(()));
    assert_eq!(
        holds(
            "statement.subject.exists(s, 'sha256:' + s.digest.sha256 == digest)",
            provenance.clone()
        ),
        Ok(())
    );
    let other = source.replace("acme/app", "evil/app");
    let err = holds(&other, provenance.clone()).unwrap_err();
    assert!(err.ends_with("is false"), "{err}");
    assert_eq!(unmet(&other, provenance.clone()), Some(UnmetKind::False));
    // A missing field is an error, and holds; so is anything but a boolean.
    let err = holds("predicate.nothing == 'x'", provenance.clone()).unwrap_err();
    assert!(err.contains("failed") && err.contains("nothing"), "{err}");
    let missing = unmet("predicate.nothing == 'x'", provenance.clone());
    assert_eq!(missing, Some(UnmetKind::Failed));
    assert!(holds("has(predicate.nothing)", provenance.clone()).is_err());
    assert_eq!(holds("!has(predicate.nothing)", provenance.clone()), Ok(()));
    let err = holds("predicate.runDetails.builder.id", provenance.clone()).unwrap_err();
    assert!(err.contains("is not a boolean"), "{err}");
    let kind = unmet("predicate.runDetails.builder.id", provenance.clone());
    assert_eq!(kind, Some(UnmetKind::NotBoolean));
    // A macro over a string is an error, and holds.
    let err = holds("predicate.runDetails.builder.id.all(x, true)", provenance).unwrap_err();
    assert!(err.contains("failed: a macro over a string"), "{err}");
}

#[test]
fn a_condition_reads_now_and_timestamps() {
    let scan = json!({"metadata": {"scanFinishedOn": "2026-11-28T00:00:00Z"}});
    let fresh = "now - timestamp(predicate.metadata.scanFinishedOn) < duration('168h')";
    assert_eq!(holds(fresh, scan.clone()), Ok(()));
    let stale = "now - timestamp(predicate.metadata.scanFinishedOn) < duration('1h')";
    assert!(holds(stale, scan).is_err());
}

#[test]
fn the_message_names_a_false_condition() {
    let condition = Condition::compile("false", Some("built from the release workflow")).unwrap();
    let input = Input::new(&statement(json!({})), "sha256:ab").unwrap();
    assert_eq!(
        condition.holds(&input, NOW),
        Err(Unmet {
            kind: UnmetKind::False,
            message: "built from the release workflow (is false)".into()
        })
    );
    let quoted = Condition::compile("1 == 2", None).unwrap();
    assert_eq!(
        quoted.holds(&input, NOW).map_err(|unmet| unmet.message),
        Err("condition '1 == 2' is false".into())
    );
}

#[test]
fn what_cannot_be_evaluated_is_refused_at_compile() {
    assert!(refused("").contains("empty"));
    assert!(refused("predicate.x ==").contains("does not parse"));
    assert!(refused("'a' == 1").contains("no overload of Eq for (string, int)"));
    assert!(refused("[1, 'a'].size() == 2").contains("literals are homogeneous"));
    assert!(
        refused("predicate.x + 1").contains("not bool"),
        "{}",
        refused("predicate.x + 1")
    );
    let err = refused("tag == 'v1'");
    assert!(err.contains("undeclared reference to 'tag'"), "{err}");
    // A macro's variable is in scope in its body only.
    assert!(refused("predicate.l.all(x, x > 0) && x > 0").contains("'x'"));
    assert!(
        refused("type(predicate) == map").contains("'type()' with 1 argument(s) is not supported")
    );
    assert!(refused("max(1, 2) == 2").contains("'max()' with 2 argument(s) is not supported"));
    assert!(refused("predicate.s.matches(predicate.p)").contains("literal regular expression"));
    assert!(refused("predicate.s.matches('(')").contains("does not compile"));
    // RE2 refuses nested repetition over 1,000, and so does Go.
    assert!(refused("predicate.s.matches('(?:a{0,300}){10}b')").contains("invalid repeat count"));
    assert!(
        refused("Foo{a: 1} == 1").contains("not supported"),
        "{}",
        refused("Foo{a: 1} == 1")
    );
    let long = format!("{} == 'x'", "a".repeat(MAX_EXPRESSION_BYTES));
    assert!(refused(&long).contains("at most 4096"));
}

/// What would take the parser's, the check's or the evaluator's stack is refused before: deep
/// brackets and ternaries, long chains (each shape once, far over the bound). Runs of unary
/// operators are read as cel-go reads them: an even run is dropped.
#[test]
fn hostile_shapes_are_refused_without_a_crash() {
    let shapes = [
        format!("{}true{}", "(".repeat(2_000), ")".repeat(2_000)),
        format!("{}1{}", "[".repeat(2_000), "]".repeat(2_000)),
        format!("{}true", "true ? true : ".repeat(250)),
    ];
    for shape in &shapes {
        let err = refused(shape);
        assert!(err.contains("nested over 32 deep"), "{err}");
    }
    let chain = vec!["1"; 900].join(" + ") + " > 0";
    assert!(
        refused(&chain).contains("over 64 deep"),
        "{}",
        refused(&chain)
    );
    assert_eq!(
        holds(&format!("{}true", "!".repeat(4_000)), json!({})),
        Ok(())
    );
    assert!(holds(&format!("{}true", "!".repeat(4_001)), json!({})).is_err());
    assert_eq!(
        holds(&format!("{}1 == 1", "- ".repeat(2_000)), json!({})),
        Ok(())
    );
    // Within the bounds: accepted, and evaluated on a small stack (chains of && balanced).
    let nested = format!("{}true{}", "(".repeat(31), ")".repeat(31));
    let chain = vec!["true"; 400].join(" && ") + " && " + &vec!["1"; 40].join(" + ") + " > 0";
    for expression in [nested, chain] {
        let condition = Condition::compile(&expression, None).unwrap();
        let input = Input::new(&statement(json!({})), "sha256:ab").unwrap();
        let run = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || condition.holds(&input, NOW))
            .unwrap();
        assert_eq!(run.join().unwrap(), Ok(()));
    }
}

/// The budget is counted as the evaluation runs: a walk of one list against another stops
/// at [`COST_LIMIT`], saying so, and an error of the budget is never absorbed by `||`.
#[test]
fn the_budget_stops_an_evaluation_that_runs_past_it() {
    let mut b = vec![2; 4096];
    b[4095] = 1;
    let lists = json!({"a": vec![1; 4096], "b": b});
    let nested = "predicate.a.all(x, predicate.b.exists(y, y == x))";
    let err = holds(nested, lists.clone()).unwrap_err();
    assert!(
        err.contains("was stopped") && err.contains("1000000"),
        "{err}"
    );
    assert_eq!(unmet(nested, lists.clone()), Some(UnmetKind::OverBudget));
    let absorbed = format!("({nested}) || true");
    assert!(holds(&absorbed, lists.clone())
        .unwrap_err()
        .contains("was stopped"));
    // One walk of each is well within it.
    let walks = "predicate.a.all(x, x == 1) && !predicate.b.exists(y, y == 3)";
    assert_eq!(holds(walks, lists.clone()), Ok(()));
    let mut budget = Budget::new(50);
    let input = Input::new(&statement(lists), "sha256:ab").unwrap();
    let walk = Condition::compile("predicate.a.all(x, x == 1)", None).unwrap();
    let err = walk.holds_within(&input, NOW, &mut budget).unwrap_err();
    assert!(err.message.contains("spent the 50"), "{err}");
    assert_eq!(budget.left, 0);
    // Over the parts of each element: the statement's values, once.
    let nested = "predicate.results.all(r, !has(r.vulnerabilities) || \
                  r.vulnerabilities.all(v, v.severity != 'CRITICAL'))";
    let scan = json!({"results": [
        {"vulnerabilities": [{"severity": "LOW"}, {"severity": "HIGH"}]}, {"target": "x"}]});
    assert_eq!(holds(nested, scan.clone()), Ok(()));
    let critical = json!({"results": [{"vulnerabilities": [{"severity": "CRITICAL"}]}]});
    assert!(holds(nested, critical).is_err());
    // Macros nested four deep are refused whatever they walk.
    let four = "[1].all(a, [1].all(b, [1].all(c, [1].all(d, true))))";
    assert!(refused(four).contains("nested over 3 deep"));
}

/// cel-go's answers where an evaluator is easiest to get wrong (issue 86), each the one cel-go
/// v0.33 gives (tests/it/signatures/conditions.rs judges these families and more).
#[test]
fn the_semantics_are_cel_gos() {
    let data = json!({"repo": "https://github.com/acme/app-evil", "arabic": "v\u{0661}",
                      "event": {"name": "push"}, "n": 3, "s": "héllo"});
    let is = |e: &str| holds(e, data.clone());
    // A missing key is an error, whatever compares it.
    assert!(is("predicate.event.missing != 'pull_request_target'").is_err());
    assert!(is("predicate.event['missing'] != 'x'").is_err());
    // `in` on a string is no substring test; contains() is for strings only.
    assert!(is("'https://github.com/acme/app' in predicate.repo").is_err());
    assert!(is("dyn([1, 2]).contains(1)").is_err());
    // RE2's \d is ASCII.
    assert!(is(r"predicate.arabic.matches('^v\\d$')").is_err());
    assert_eq!(is(r"predicate.arabic.matches('^v\\pN$')"), Ok(()));
    // Go's duration grammar, UTC accessors, overflow as an error.
    assert!(is("duration('1h7d') == duration('1h')").is_err());
    assert_eq!(
        is("timestamp('2026-01-01T01:00:00+02:00').getHours() == 23"),
        Ok(())
    );
    assert!(is("-(-9223372036854775807 - 1) < 0").is_err());
    // An error is absorbed only where the other side decides.
    assert_eq!(is("predicate.missing == 1 || predicate.n == 3"), Ok(()));
    assert!(is("predicate.missing == 1 || predicate.n == 4").is_err());
    assert!(is("!(predicate.missing == 1 && true)").is_err());
    // Numbers compare across kinds; other kinds are unequal, never equal.
    assert_eq!(
        is("predicate.n == 3 && predicate.n > 2u && !(dyn('3') == 3)"),
        Ok(())
    );
}

#[test]
fn a_statement_is_read_within_its_bounds() {
    let list = |n: usize| json!({"l": vec![1; n]});
    assert!(holds("size(predicate.l) > 0", list(MAX_ITEMS)).is_ok());
    let err = holds("size(predicate.l) > 0", list(MAX_ITEMS + 1)).unwrap_err();
    assert!(err.contains("at most 4096 are read"), "{err}");
    let long = json!({"s": "x".repeat(MAX_STRING_BYTES + 1)});
    assert!(holds("true", long)
        .unwrap_err()
        .contains("a string of 16385 bytes"));
    let many: Vec<serde_json::Value> = (0..20).map(|_| json!(vec![1; 4000])).collect();
    let err = holds("true", json!({"m": many})).unwrap_err();
    assert!(err.contains("over 65536 values"), "{err}");
}

#[test]
fn a_compiled_expression_is_kept() {
    let first = Condition::cached("1 == 1", Some("one")).unwrap();
    let again = Condition::cached("1 == 1", None).unwrap();
    assert!(Arc::ptr_eq(&first.program, &again.program));
    assert_eq!(
        (first.message.as_deref(), again.message.as_deref()),
        (Some("one"), None)
    );
    assert_eq!(
        Condition::cached("nope ==", None).unwrap_err(),
        Condition::cached("nope ==", None).unwrap_err()
    );
}

/// What the evaluator is given in place of the crate's own: `size()` counts a string's code
/// points, `matches()` compiles its pattern once and answers both ways.
#[test]
fn size_and_matches_are_cels() {
    let strings = json!({"s": "héllo", "l": [1, 2, 3], "m": {"a": 1}});
    assert_eq!(holds("size(predicate.s) == 5", strings.clone()), Ok(()));
    assert_eq!(holds("predicate.s.size() == 5", strings.clone()), Ok(()));
    assert_eq!(
        holds(
            "size(predicate.l) == 3 && size(predicate.m) == 1",
            strings.clone()
        ),
        Ok(())
    );
    assert!(holds("size(predicate.s) == 6", strings.clone()).is_err());
    assert!(holds("size(1) == 1", strings.clone()).is_err());
    assert_eq!(
        holds("predicate.s.matches('^h.llo$')", strings.clone()),
        Ok(())
    );
    assert!(holds("predicate.s.matches('^x')", strings.clone()).is_err());
    assert_eq!(holds("!predicate.s.matches('^x')", strings), Ok(()));
}

#[test]
fn a_condition_says_whether_it_reads_the_clock() {
    let reads = |e: &str| Condition::compile(e, None).unwrap().reads_now();
    assert!(reads("now > timestamp('2020-01-01T00:00:00Z')"));
    assert!(!reads("predicate.a == 1"));
    let condition = Condition::compile("true", None).unwrap();
    let shown = format!("{condition:?}");
    assert_eq!(shown, "Condition { expression: \"true\" }");
}

#[test]
fn an_expression_of_exactly_4_kib_is_accepted() {
    let padded = format!("'{}' != ''", "a".repeat(MAX_EXPRESSION_BYTES - 8));
    assert_eq!(padded.len(), MAX_EXPRESSION_BYTES);
    assert!(Condition::compile(&padded, None).is_ok());
    let over = format!("'{}' != ''", "a".repeat(MAX_EXPRESSION_BYTES - 7));
    assert!(Condition::compile(&over, None).is_err());
}

/// Keeping one expression does not forget another.
#[test]
fn compiled_expressions_are_kept_side_by_side() {
    let first = Condition::cached("2 == 2", None).unwrap();
    let other = Condition::cached("3 == 3", None).unwrap();
    let again = Condition::cached("2 == 2", None).unwrap();
    assert!(Arc::ptr_eq(&first.program, &again.program));
    assert!(!Arc::ptr_eq(&first.program, &other.program));
}

/// Brackets inside string literals (quotes escaped within them too) are text, not nesting;
/// outside a closed literal they count.
#[test]
fn the_parser_reads_string_literals() {
    let parens = "(".repeat(40);
    for literal in [
        format!("'{parens}'"),
        format!("\"{parens}\""),
        format!("'it\\'s {parens}'"),
    ] {
        let expression = format!("predicate.s != {literal}");
        assert!(
            Condition::compile(&expression, None).is_ok(),
            "{expression}"
        );
    }
    let outside = format!("'a' != {}'b'{}", parens, ")".repeat(40));
    assert!(refused(&outside).contains("nested over 32 deep"));
}

/// What a refusal repeats is one line of at most 200 characters, the parser's words kept.
#[test]
fn refusals_are_one_short_line() {
    let message = "m".repeat(300);
    let condition = Condition::compile("false", Some(&message)).unwrap();
    let input = Input::new(&statement(json!({})), "sha256:ab").unwrap();
    let err = condition.holds(&input, NOW).unwrap_err().message;
    assert!(
        err.starts_with(&"m".repeat(200)) && err.contains("m... (is false)"),
        "{err}"
    );
    let short = Condition::compile("false", Some("short\nline")).unwrap();
    assert_eq!(
        short.holds(&input, NOW).map_err(|unmet| unmet.message),
        Err("short line (is false)".into())
    );
    let err = refused("predicate.x ==");
    assert!(
        err.len() > "does not parse: ".len() + 5 && !err.contains("xyzzy"),
        "{err}"
    );
}

/// Nesting is counted as deep as it goes, not as long: groups one after another, and binary
/// minus between operands, are no nesting; 31 brackets or ternaries inside the expression's
/// own level are accepted, and 32 are not.
#[test]
fn the_parser_counts_depth_not_length() {
    let groups = vec!["(1 == 1)"; 40].join(" && ");
    assert!(Condition::compile(&groups, None).is_ok());
    let minus = vec!["1"; 40].join(" - ") + " < 100";
    assert!(Condition::compile(&minus, None).is_ok());
    let ternaries = |n: usize| format!("{}true", "true ? true : ".repeat(n));
    assert!(Condition::compile(&ternaries(31), None).is_ok());
    assert!(refused(&ternaries(32)).contains("nested over 32 deep"));
    let brackets = |n: usize| format!("{}true{}", "(".repeat(n), ")".repeat(n));
    assert!(Condition::compile(&brackets(31), None).is_ok());
    assert!(refused(&brackets(32)).contains("nested over 32 deep"));
}

/// The tree's height bound is exact: an expression 64 deep is read, 65 deep refused.
#[test]
fn an_expression_64_deep_is_read_and_65_refused() {
    let chain = |terms: usize| vec!["1"; terms].join(" + ") + " > 0";
    assert_eq!(holds(&chain(63), json!({})), Ok(()));
    assert!(refused(&chain(64)).contains("over 64 deep"));
}

/// The documented bounds (docs/imagepolicy.md), written out: a condition on a statement, a
/// policy on a digest.
#[test]
fn the_cost_bounds_are_the_documented_ones() {
    assert_eq!((COST_LIMIT, POLICY_COST_LIMIT), (1_000_000, 4_000_000));
}
