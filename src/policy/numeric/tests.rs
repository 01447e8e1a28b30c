//! Tests of `numeric.rs`.

use super::*;

fn n(s: &str) -> Number {
    Number::parse(s).unwrap_or_else(|| panic!("{s} should parse"))
}

#[test]
fn accepts_go_float_syntax() {
    for s in [
        "0",
        "-0",
        "+2",
        ".5",
        "5.",
        "1e3",
        "1E-3",
        "1_000",
        "0x1p4",
        "0X1.8P1",
        "0x_1p-2",
        "inf",
        "-Infinity",
        "+INF",
        "1e400",
        "00012",
        "1_0.5_0e1_0",
    ] {
        assert!(Number::parse(s).is_some(), "{s} should parse");
    }
}

#[test]
fn rejects_what_go_rejects_and_nan() {
    for s in [
        "", "-", ".", "e3", "1e", "1e+", "0x10", "0x", "0xp1", "_1", "1_", "1__0", "1_.5", "NaN",
        "nan", "+nan", "infin", "1.2.3", "12abc", " 1", "1 ", "0x1p4_", "--1",
    ] {
        assert!(Number::parse(s).is_none(), "{s} should be rejected");
    }
}

#[test]
fn compares_exactly() {
    let ascending = [
        "-inf",
        "-1e400",
        "-10",
        "-9.5",
        "-0x1p-1",
        "0",
        "0x1p-2",
        ".5",
        "1",
        "1.0000000000000000001",
        "15",
        "0x1p4",
        "999",
        "1_000",
        "12345678901234567890",
        "12345678901234567891",
        "1e400",
        "Inf",
    ];
    for pair in ascending.windows(2) {
        assert_eq!(n(pair[0]).cmp(&n(pair[1])), Ordering::Less, "{pair:?}");
    }
    assert_eq!(n("1"), n("1.0"));
    assert_eq!(
        n("007").cmp(&n("7")),
        Ordering::Equal,
        "the integer fast path agrees"
    );
    assert_eq!(
        n("9999999999999999999").cmp(&n("1e19")),
        Ordering::Less,
        "mixed paths agree"
    );
    assert_eq!(n("12").cmp(&n("12.5")), Ordering::Less);
    assert_eq!(n("1e3"), n("1000"));
    assert_eq!(n("-0"), n("0"));
    assert_eq!(n("0x1p4"), n("16"));
    assert_eq!(n("0x1.8p1"), n("3"));
    assert_eq!(n("0x1p-1"), n("0.5"));
    // float64 cannot tell these apart; we can.
    assert_ne!(n("1700000000000000001"), n("1700000000000000000"));
}
