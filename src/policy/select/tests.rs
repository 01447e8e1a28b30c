//! Tests of `select.rs`.

use super::super::best::prefix_key;
use super::{FilterSpec, Policy, PolicyChoice};

#[test]
fn prefix_key_orders_like_bytes_for_every_length() {
    let tags = [
        "",
        "a",
        "ab",
        "abc",
        "abcd",
        "abcde",
        "abcdef",
        "abcdefg",
        "abcdefgh",
        "abcdefghi",
        "b",
        "ba",
        "z9",
        "1.2.3",
        "v1.2.30",
        "v1.2.4",
    ];
    for a in tags {
        for b in tags {
            let (ka, kb) = (prefix_key(a), prefix_key(b));
            if ka != kb {
                assert_eq!(ka.cmp(&kb), a.cmp(b), "{a:?} vs {b:?}");
            }
            if a.len().max(b.len()) <= 8 {
                assert_eq!(ka == kb, a == b, "{a:?} vs {b:?}");
            }
        }
    }
}

#[test]
fn a_large_class_of_equal_rank_is_grouped_once() {
    // Build metadata does not count in semver precedence: every tag ranks equal. Searching
    // the class per tag was quadratic; grouping at the end is one sort.
    let tags: Vec<String> = (0..200_000).map(|i| format!("1.0.0+b{i:06}")).collect();
    let mut sorted = tags.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let semver = PolicyChoice {
        semver: Some(">=1.0.0".into()),
        ..Default::default()
    };
    let policy = Policy::new(&semver, None).unwrap();
    assert_eq!(
        policy.select_sorted(sorted.iter().map(String::as_str)),
        Ok("1.0.0+b199999")
    );
    // With an extract that groups them by tens: each group is represented by its
    // byte-smallest tag, and the tie between groups goes to the byte-greatest of those.
    let filter = FilterSpec {
        pattern: r"^(1\.0\.0\+b\d{5})\d$".into(),
        extract: "$1".into(),
    };
    let policy = Policy::new(&semver, Some(&filter)).unwrap();
    assert_eq!(
        policy.select(tags.iter().map(String::as_str)),
        Ok("1.0.0+b199990")
    );
}

#[test]
fn ranks_below_follows_each_kind_and_never_compares_a_non_candidate() {
    let semver = Policy::new(
        &PolicyChoice {
            semver: Some(">=1.0.0".into()),
            ..Default::default()
        },
        None,
    )
    .unwrap();
    assert_eq!(semver.ranks_below("1.3.0", "1.4.0"), Some(true));
    assert_eq!(semver.ranks_below("1.10.0", "1.4.0"), Some(false));
    assert_eq!(semver.ranks_below("1.4.0", "1.4.0"), None, "the same tag");
    assert_eq!(
        semver.ranks_below("0.9.0", "1.4.0"),
        None,
        "outside the range"
    );
    assert_eq!(semver.ranks_below("latest", "1.4.0"), None, "not a version");
    let numerical_asc = Policy::new(
        &PolicyChoice {
            numerical: Some(super::Order::Asc),
            ..Default::default()
        },
        Some(&FilterSpec {
            pattern: "^main-(?P<ts>[0-9]+)$".into(),
            extract: "$ts".into(),
        }),
    )
    .unwrap();
    assert_eq!(numerical_asc.ranks_below("main-9", "main-10"), Some(true));
    assert_eq!(numerical_asc.ranks_below("main-11", "main-10"), Some(false));
    assert_eq!(
        numerical_asc.ranks_below("dev-1", "main-10"),
        None,
        "filtered out"
    );
}
