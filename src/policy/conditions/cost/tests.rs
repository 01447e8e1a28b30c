//! The estimate as the module says it counts, worked out by hand for small expressions: each
//! node once per run, a call's weight, a macro's body once per element (4,096 for statement
//! data, as written for a literal list), amortized over the statement's 65,536 values for a
//! macro over a part of the enclosing macro's element.

use super::super::{Condition, COST_LIMIT, POLICY_COST_LIMIT};

fn cost(expression: &str) -> u64 {
    Condition::compile(expression, None)
        .unwrap_or_else(|e| panic!("{expression}: {}", e.reason))
        .cost
}

fn refused(expression: &str) -> String {
    Condition::compile(expression, None).unwrap_err().reason
}

#[test]
fn nodes_and_weights() {
    assert_eq!(cost("true"), 1);
    // `_==_` (1, and 1 against a short literal), the select (1) and its variable (1), 'x' (1).
    assert_eq!(cost("predicate.a == 'x'"), 5);
    // contains walks a string: 16 KiB at 512 bytes a unit.
    assert_eq!(cost("predicate.s.contains('a')"), 1 + 32 + 2 + 1);
    assert_eq!((COST_LIMIT, POLICY_COST_LIMIT), (1_000_000, 2_000_000));
}

#[test]
fn macros_run_their_body_once_per_element() {
    // The macro (1), its range (2), its accumulator (1), its result (1); its condition
    // `@not_strictly_false(@result)` (3) and step `@result && x > 0.0` (7) per element.
    assert_eq!(cost("predicate.l.all(x, x > 0.0)"), 5 + 4096 * 10);
    // A literal list of two: as written.
    assert_eq!(cost("[1, 2].all(x, x > 0)"), 1 + 3 + 1 + 2 * 10 + 1);
}

#[test]
fn a_macro_over_its_enclosing_elements_parts_is_amortized() {
    // Outer: 5, and 4,096 runs of its condition (3) and step (3, the inner macro aside);
    // inner, per outer run: itself, its range, accumulator and result (5); its body 65,536
    // runs in all (the statement's values) of 10.
    let nested = "predicate.r.all(r, r.v.all(v, v > 0.0))";
    assert_eq!(cost(nested), 5 + 4096 * 6 + 4096 * 5 + 65_536 * 10);
    // Through a literal index too (the index, its weight and its literal: 3 a run).
    let indexed = "predicate.r.all(r, r.v[0].all(v, v > 0.0))";
    assert_eq!(cost(indexed), cost(nested) + 4096 * 3);
    // Not when the enclosing macro runs over a literal list (its elements may share parts):
    // 20 × 4,096 runs of the inner body.
    let parts = vec!["predicate.a"; 20].join(", ");
    let listed = format!("[{parts}].all(r, r.v.all(v, v > 0.0))");
    assert!(cost(&listed) >= 20 * 4096 * 10, "{}", cost(&listed));
}

#[test]
fn depths_are_bounded_exactly() {
    // 63 additions under a comparison: 64 levels; one more is refused.
    let chain = |n: usize| vec!["1"; n].join(" + ") + " > 0";
    assert!(Condition::compile(&chain(63), None).is_ok());
    assert!(refused(&chain(64)).contains("over 64 deep"));
    // Macros three deep, and two such one after the other.
    let three = "[1].all(a, [1].all(b, [1].all(c, true)))";
    assert!(Condition::compile(three, None).is_ok());
    assert!(Condition::compile(&format!("{three} && {three}"), None).is_ok());
    assert!(refused("[1].all(a, [1].all(b, [1].all(c, [1].all(d, true))))").contains("over 3"));
}

/// An expression that costs the limit exactly, from the counts above: a macro over data whose
/// body costs 244 (40 comparisons: 238), a literal macro of 70 (8 a element and 4), and the
/// glue (`&&` 2 twice, `!true` 3).
fn at_the_limit() -> String {
    let body = vec!["x > 0.0"; 40].join(" && ");
    let list = vec!["1"; 70].join(", ");
    format!("predicate.l.all(x, {body}) && [{list}].all(y, true) && !true")
}

#[test]
fn the_limit_is_accepted_and_one_over_is_not() {
    assert_eq!(cost(&at_the_limit()), COST_LIMIT);
    let over = at_the_limit() + " && true";
    assert!(refused(&over).contains("over the limit of 1000000"));
}
