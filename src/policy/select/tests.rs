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
