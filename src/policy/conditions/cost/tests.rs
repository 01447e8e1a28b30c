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

/// A comparison with something sure to be a scalar costs what that scalar's bytes walk (a unit
/// per 512); with anything else, what comparing two parts of the statement may walk (4,096).
#[test]
fn comparisons_cost_what_their_scalar_side_may_walk() {
    let long = "x".repeat(1024);
    // `==` (1, and 1 + 1024 / 512), the select (2), the literal (1).
    assert_eq!(cost(&format!("predicate.a == '{long}'")), 1 + 3 + 2 + 1);
    assert_eq!(cost(&format!("predicate.a == b'{long}'")), 1 + 3 + 2 + 1);
    assert_eq!(cost("predicate.a == digest"), 1 + 1 + 2 + 1);
    // `>` (2), now (1), timestamp() (1 + 16 + its literal 1).
    assert_eq!(cost("now > timestamp('2020-01-01T00:00:00Z')"), 2 + 1 + 18);
    // string() may be 16 KiB: 1 + 32; itself 1 + 32 + its select 2.
    assert_eq!(cost("predicate.a == string(predicate.b)"), 1 + 33 + 2 + 35);
    // size() is a number.
    assert_eq!(cost("size(predicate.l) == size(predicate.m)"), 2 + 35 + 35);
    // A literal joined to a string is a string of up to 32 KiB: 1 + 64; the join 1 + 64.
    assert_eq!(
        cost("'a' + predicate.b == predicate.c"),
        (1 + 65) + (1 + 65 + 1 + 2) + 2
    );
    // Two parts of the statement.
    assert_eq!(cost("predicate.a == predicate.b"), 1 + 4096 + 2 + 2);
}

/// Each function in the form CEL's standard library has it: contains() as a method,
/// timestamp() as a function.
#[test]
fn functions_only_in_their_standard_form() {
    assert!(refused("contains(predicate.s, 'a')").contains("'contains' is not supported"));
    assert!(refused("predicate.s.timestamp() < now").contains("'timestamp' is not supported"));
    assert!(
        refused("predicate.s.getFullYear() == 1 && getFullYear(now) == 1")
            .contains("'getFullYear'")
    );
}

#[test]
fn each_functions_weight() {
    // `+` of a number (1 + 2 × 32), `in` a literal list (1 + 32 an element), matches() (32
    // and the pattern's length), a timestamp's accessor (4).
    assert_eq!(cost("predicate.n + 1.0 > 0.0"), 2 + (1 + 65 + 2 + 1) + 1);
    assert_eq!(cost("predicate.a in ['x', 'y', 'z']"), 1 + 97 + 2 + 4);
    assert_eq!(cost("predicate.a in predicate.l"), 1 + 4096 + 2 + 2);
    assert_eq!(cost("predicate.s.matches('^abc$')"), 1 + 37 + 2 + 1);
    assert_eq!(cost("now.getFullYear() == 2026"), 2 + (1 + 4 + 1) + 1);
}

/// A join of two parts of the statement is a list or a string of any size; and a macro over a
/// part of an element two macros up is not amortized by the macro in between (every element
/// of one list, for each of another: the estimate says so even when it refuses).
#[test]
fn what_is_not_sure_is_counted_at_its_most() {
    assert_eq!(
        cost("predicate.a + predicate.b == predicate.c"),
        (1 + 4096) + (1 + 4096 + 2 + 2) + 2
    );
    let crossed = refused("predicate.a.all(a, predicate.b.all(b, a.v.all(v, true)))");
    let estimate: u64 = crossed
        .split("cost, ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(estimate > 10_000_000_000, "{estimate}");
}
