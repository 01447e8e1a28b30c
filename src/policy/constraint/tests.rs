//! Tests of `constraint.rs`.

use super::*;

fn admits(range: &str, tag: &str) -> bool {
    let c = Constraints::parse(range).unwrap_or_else(|e| panic!("{range}: {e}"));
    c.matches(&Version::parse_loose(tag).expect("test version parses"))
}

#[test]
fn operator_table() {
    let cases: &[(&str, &str, bool)] = &[
        ("1.2.3", "1.2.3", true),
        ("=1.2.3", "1.2.4", false),
        ("1.2", "1.2.9", true),
        ("1.2", "1.3.0", false),
        ("1", "1.9.9", true),
        ("1", "2.0.0", false),
        ("*", "99.0.0", true),
        ("!=1.2.3", "1.2.3", false),
        ("!=1.2.x", "1.2.7", false),
        ("!=1.2.x", "1.3.0", true),
        ("!=1.x", "1.5.0", false),
        (">1.2.3", "1.2.4", true),
        (">1", "1.9.0", false),
        (">1", "2.0.0", true),
        (">1.2", "1.2.9", false),
        (">1.2", "1.3.0", true),
        ("<1.2.3", "1.2.2", true),
        ("<=1.2", "1.2.9", true),
        ("<=1.2", "1.3.0", false),
        ("<=1", "1.9.0", true),
        ("=<1.0.0", "1.0.0", true),
        ("=>1.0", "1.0.0", true),
        ("~1.2.3", "1.2.9", true),
        ("~1.2.3", "1.3.0", false),
        ("~1", "1.9.0", true),
        ("~>1.2", "1.2.0", true),
        ("~0.0.0", "5.0.0", true),
        ("^1.2.3", "1.9.0", true),
        ("^1.2.3", "2.0.0", false),
        ("^0.2.3", "0.2.9", true),
        ("^0.2.3", "0.3.0", false),
        ("^0.0.3", "0.0.3", true),
        ("^0.0.3", "0.0.4", false),
        ("^0.0", "0.0.9", true),
        ("^0.0", "0.1.0", false),
        ("^0", "0.9.0", true),
        ("^*", "0.0.0", true),
        ("^*", "1.0.0", false),
        (">=1.0.0 <2.0.0", "1.5.0", true),
        (">=1.0.0, <2.0.0", "2.0.0", false),
        ("<1.0.0 || >=3.0.0", "3.1.0", true),
        ("1.0 - 1.4.5", "1.4.5", true),
        ("1.0 - 1.4.5", "1.4.6", false),
        ("1.0-2.0", "1.0.5", true),
        (">=1.0.0-0", "1.1.0-rc.1", true),
        (">=1.0.0", "1.1.0-rc.1", false),
        ("*", "2.0.0-rc.1", false),
        (">=1.0.0-0 <2.0.0 || >=3.0.0", "1.5.0-rc.1", true),
        (">=1.0.0 || >=1.0.0-0", "1.5.0-rc.1", true),
        ("^1.x-0", "1.2.0-beta", true),
        (">= 1.0.0", "1.0.0", true),
        (">=01.0.0", "1.0.0", true),
    ];
    for &(range, tag, want) in cases {
        assert_eq!(admits(range, tag), want, "{range} vs {tag}");
    }
}

#[test]
fn rejects_improper_constraints_with_masterminds_texts() {
    for (range, text) in [
        ("", r#"improper constraint: """#),
        ("||", r#"improper constraint: """#),
        ("a", r#"improper constraint: "a""#),
        ("-1", r#"improper constraint: "-1""#),
        ("1.0.0p", r#"improper constraint: "1.0.0p""#),
        ("1.2.3.4", r#"improper constraint: "1.2.3.4""#),
        ("latest", r#"improper constraint: "latest""#),
        ("==1.0.0", r#"improper constraint: "==1.0.0""#),
        (">=1.0.0,", r#"improper constraint: ">=1.0.0,""#),
        ("*-*", r#"improper constraint: "*-*""#),
        (">=1.0.0>=2", r#"improper constraint: ">=1.0.0>=2""#),
        ("1x", "constraint parser error"),
        ("x1", "constraint parser error"),
        ("1|2", "constraint parser error"),
        (">=1.0.0-01", "constraint parser error"),
        (">=99999999999999999999", "constraint parser error"),
    ] {
        let err = Constraints::parse(range).expect_err(range);
        assert_eq!(err.constraint_text(), text, "{range}");
    }
}

#[test]
fn the_vague_parser_error_says_which_comparator_and_why() {
    for (range, second) in [
        (
            "1x",
            r#""1x": major, minor and patch are each a number, or x, X or * for any"#,
        ),
        (
            ">=1.0 <2x",
            r#""<2x": major, minor and patch are each a number, or x, X or * for any"#,
        ),
        (
            ">=1.0.0-01",
            r#"">=1.0.0-01": a numeric pre-release identifier has no leading zero"#,
        ),
        (
            ">=99999999999999999999",
            r#"">=99999999999999999999": a version number is beyond 18446744073709551615"#,
        ),
    ] {
        let err = Constraints::parse(range).expect_err(range).to_string();
        assert_eq!(
            err,
            format!("invalid policy: constraint parser error\n{second} (spec.policy.semver.range)"),
            "{range}"
        );
    }
}

#[test]
fn accepts_valid_forms() {
    for range in [
        "x",
        "1",
        "v1.0.x",
        "1.0 - 2.0",
        "~>1.2",
        "=<1.0",
        "^0.0",
        ">=01.0.0",
        " >= 1.0 , < 2 ",
        ">0,<2.0",
        "1.0.0+build",
        "^1.0 || ~2.1 || 3.x",
    ] {
        assert!(Constraints::parse(range).is_ok(), "{range} should parse");
    }
}

#[test]
fn ranges_are_bounded() {
    // The hyphen rewrite is quadratic: 64 KiB of hyphen ranges is the most it ever sees.
    let mut range = String::new();
    let mut i = 0;
    while range.len() + 40 < MAX_RANGE_BYTES {
        range.push_str(&format!("1.0.{i} - 2.0.{i} || "));
        i += 1;
    }
    range.push_str("3.0.0");
    let parsed = Constraints::parse(&range).unwrap();
    assert!(parsed.matches(&Version::parse_tag("1.5.0").unwrap()));
    let long = " ".repeat(MAX_RANGE_BYTES + 1);
    assert_eq!(
        Constraints::parse(&long).unwrap_err().to_string(),
        "invalid policy: improper constraint: the range is 65537 bytes long; the limit is 65536 bytes\n\
         spec.policy.semver.range: shorten it"
    );
}
