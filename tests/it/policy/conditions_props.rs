//! Properties of the attestation conditions' evaluator that hold for any input, with oracles
//! that are not the evaluator: it never panics on any text (compiled or refused, evaluated or
//! not), stays within its budget however the expression and the data are shaped, and CEL's
//! logic laws hold on its answers (`a || b` is `b || a`, `!!a` is `a`, `a && b` is true only
//! where both are).

use image_reflector::policy::conditions::{Budget, Condition, Input, COST_LIMIT};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::{json, Value};

/// Atoms of CEL text: names, literals of every kind, operators, brackets, macros and
/// functions, so that a random concatenation is often almost an expression.
fn atom() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "predicate",
        "statement",
        "digest",
        "now",
        "x",
        ".",
        ".a",
        ".l",
        ".s",
        ".m",
        "[0]",
        "['a']",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ",",
        ":",
        "?",
        "!",
        "-",
        "+",
        "*",
        "/",
        "%",
        "==",
        "!=",
        "<",
        "<=",
        ">",
        ">=",
        "&&",
        "||",
        " in ",
        "1",
        "-1",
        "2u",
        "1.5",
        "0x1f",
        "'a'",
        "\"b\"",
        "r'\\d'",
        "b'\\xff'",
        "'''t'''",
        "true",
        "false",
        "null",
        "size(",
        ".size()",
        ".all(x, ",
        ".exists(x, ",
        ".exists_one(x, ",
        ".map(x, ",
        ".filter(x, ",
        "has(",
        ".contains(",
        ".startsWith(",
        ".matches('^a+$')",
        "int(",
        "uint(",
        "double(",
        "string(",
        "bytes(",
        "timestamp(",
        "duration(",
        "dyn(",
        "'2026-01-01T00:00:00Z'",
        "'1h'",
        ".getHours()",
        "9223372036854775807",
        " ",
    ])
}

/// A soup of atoms, or a condition built by CEL's grammar over statement data (which is
/// `dyn`, so that most of what is built type-checks and runs).
fn text() -> impl Strategy<Value = String> {
    let soup = prop::collection::vec(atom(), 1..24).prop_map(|atoms| atoms.concat());
    prop_oneof![1 => soup, 4 => condition()]
}

/// A `dyn` expression: statement data, or any value made `dyn`.
fn data_expression() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(vec![
        "predicate.a",
        "predicate.l",
        "predicate.s",
        "predicate.m",
        "predicate.missing",
        "predicate",
        "predicate.l[0]",
        "predicate.m['a']",
        "dyn(1)",
        "dyn(-1)",
        "dyn(2u)",
        "dyn(1.5)",
        "dyn('a')",
        "dyn(true)",
        "dyn(null)",
        "dyn([1, 2])",
        "dyn({'a': 1})",
        "dyn(now)",
        "dyn(duration('1h'))",
        "dyn(9223372036854775807)",
    ])
    .prop_map(str::to_string);
    leaf.prop_recursive(1, 4, 2, |inner| {
        let wrap = prop::sample::select(vec![
            "dyn(size({}))",
            "dyn(string({}))",
            "dyn(int({}))",
            "dyn(double({}))",
            "dyn(-({}))",
            "({}).a",
            "({})[0]",
            "dyn(timestamp({}))",
            "dyn(duration({}))",
            "dyn(({}).map(x, x))",
            "dyn(({}).filter(x, x == 1))",
        ]);
        let op = prop::sample::select(vec!["+", "-", "*", "/", "%"]);
        prop_oneof![
            (wrap, inner.clone()).prop_map(|(w, e)| w.replace("{}", &e)),
            (inner.clone(), op, inner).prop_map(|(a, op, b)| format!("dyn(({a}) {op} ({b}))")),
        ]
    })
}

/// A condition: comparisons, membership, functions and macros over data, combined.
fn condition() -> impl Strategy<Value = String> {
    let d = data_expression;
    let compare = prop::sample::select(vec!["==", "!=", "<", "<=", ">", ">=", "in"]);
    let test = prop::sample::select(vec![
        "has(({}).a)",
        "({}).startsWith('a')",
        "({}).contains('a')",
        "({}).matches('^a')",
        "({}).all(x, x == 1)",
        "({}).exists(x, x != 'a')",
        "({}).exists_one(x, x == 1)",
        "size({}) > 0",
        "{}",
    ]);
    let leaf = prop_oneof![
        (d(), compare, d()).prop_map(|(a, op, b)| format!("({a}) {op} ({b})")),
        (test, d()).prop_map(|(t, e)| t.replace("{}", &e)),
    ];
    leaf.prop_recursive(2, 8, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|b| format!("!({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) && ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) || ({b})")),
            (inner.clone(), inner.clone(), inner)
                .prop_map(|(c, a, b)| format!("({c}) ? ({a}) : ({b})")),
        ]
    })
}

/// Statement data of every JSON kind, nested a little.
fn data() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e20f64..1e20).prop_map(Value::from),
        "[a-c\u{e9}\u{661} ]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-c]|l|s|m", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn input(predicate: &Value) -> Input {
    let statement = json!({"_type": "https://in-toto.io/Statement/v1", "predicate": predicate,
        "subject": [{"name": "a", "digest": {"sha256": "ab"}}], "predicateType": "t"});
    Input::new(&statement, "sha256:ab").unwrap()
}

/// Whether `expression` holds on `input`, `None` when it does not compile.
fn holds(expression: &str, input: &Input, budget: &mut Budget) -> Option<bool> {
    let condition = Condition::compile(expression, None).ok()?;
    Some(condition.holds_within(input, 1_796_000_000, budget).is_ok())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Any text: compiled or refused, evaluated within its budget, and no panic.
    #[test]
    fn any_text_is_refused_or_judged_within_its_budget(text in text(), data in data()) {
        let input = input(&data);
        let mut budget = Budget::new(COST_LIMIT);
        let _ = holds(&text, &input, &mut budget);
        prop_assert!(budget.left <= COST_LIMIT);
    }

    /// CEL's logic on whatever compiles: `||` and `&&` commute, `!!` is the identity, and a
    /// conjunction is true only where both sides are (an error on one side never makes it so).
    #[test]
    fn the_logic_laws_hold(a in text(), b in text(), data in data()) {
        let input = input(&data);
        let judge = |e: &str| holds(e, &input, &mut Budget::new(COST_LIMIT));
        let (Some(x), Some(y)) = (judge(&a), judge(&b)) else {
            return Ok(());
        };
        let or = judge(&format!("({a}) || ({b})"));
        prop_assert_eq!(or, judge(&format!("({b}) || ({a})")));
        let and = judge(&format!("({a}) && ({b})"));
        prop_assert_eq!(and, judge(&format!("({b}) && ({a})")));
        prop_assert!(and != Some(true) || (x && y), "{a} && {b} is true without both");
        if x || y {
            prop_assert_ne!(or, Some(false));
        }
        let twice = judge(&format!("!!({a})"));
        prop_assert!(twice.is_none() || twice == Some(x));
    }
}

/// The generators reach what they are for: over a fixed sample, some texts compile and some of
/// those are true, so the properties above are not vacuous.
#[test]
fn the_generated_texts_often_compile() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut compiled, mut true_) = (0, 0);
    let input = input(&json!({"a": 1, "l": [1, 2], "s": "a", "m": {"a": 1}}));
    for _ in 0..3000 {
        let text = text().new_tree(&mut runner).unwrap().current();
        if let Some(held) = holds(&text, &input, &mut Budget::new(COST_LIMIT)) {
            compiled += 1;
            true_ += usize::from(held);
        }
    }
    println!("of 3000 generated texts, {compiled} compile and {true_} are true");
    assert!(
        compiled >= 100 && true_ >= 20,
        "{compiled} compile, {true_} true"
    );
}
