//! Property tests of the election: independent of input order, equal to a slow reference that
//! sorts every candidate, and consistent with `explain`.

use image_reflector::policy::{
    Constraints, Filter, FilterSpec, Number, Order, Policy, PolicyChoice, Version,
};
use image_reflector::store::TagList;
use proptest::prelude::*;
use std::cmp::Ordering;

/// Tags drawn from small alphabets so that ties (`1.0.0`/`v1.0.0`, `5`/`05`/`5.0`) are common.
fn tag() -> impl Strategy<Value = String> {
    prop_oneof![
        "v?[0-2]\\.[0-2]\\.[0-2](-(rc|beta)\\.[0-2])?(\\+b[0-2])?",
        "0?[0-9](\\.0)?",
        "(main|dev)-[ab]{1,2}-0?[0-9]",
        "[a-c]{1,3}",
    ]
}

fn policies() -> impl Strategy<Value = (PolicyChoice, Option<FilterSpec>)> {
    let order = prop_oneof![Just(Order::Asc), Just(Order::Desc)];
    let choice = prop_oneof![
        prop_oneof![
            Just(">=0.0.0"),
            Just("^1.x"),
            Just(">=1.0.0-0"),
            Just("~0.1 || 2.x"),
            Just("!=1.1.1")
        ]
        .prop_map(|r| PolicyChoice {
            semver: Some(r.to_string()),
            ..Default::default()
        }),
        order.clone().prop_map(|o| PolicyChoice {
            alphabetical: Some(o),
            ..Default::default()
        }),
        order.prop_map(|o| PolicyChoice {
            numerical: Some(o),
            ..Default::default()
        }),
    ];
    let filter = prop_oneof![
        Just(None),
        Just(Some(("^v?(?P<v>.*)$", "$v"))),
        Just(Some(("^(main|dev)-[ab]+-(?P<n>[0-9]+)$", "$n"))),
        Just(Some(("-", ""))),
        Just(Some(("^(?:main|dev)-[ab]+-([0-9])", "x$1"))),
    ]
    .prop_map(|f| {
        f.map(|(p, e)| FilterSpec {
            pattern: p.into(),
            extract: e.into(),
        })
    });
    (choice, filter)
}

/// The obviously-correct election: collect every candidate, sort, take the first.
fn reference(
    choice: &PolicyChoice,
    filter: Option<&FilterSpec>,
    tags: &[String],
) -> Option<String> {
    let f = filter.map(|f| Filter::new(&f.pattern, &f.extract).unwrap());
    let mut candidates: Vec<(String, String)> = Vec::new();
    for t in tags {
        let value = match &f {
            None => t.clone(),
            Some(f) => match f.apply(t, &mut f.scratch()) {
                Some(v) => v.to_string(),
                None => continue,
            },
        };
        candidates.push((t.clone(), value));
    }
    // Flux's filter is a map from value to tag filled in the store's descending byte order:
    // of tags with the identical value, the last assigned (byte-smallest) stays.
    candidates.sort_by(|a, b| b.0.cmp(&a.0));
    let mut by_value: std::collections::HashMap<String, String> = Default::default();
    for (tag, value) in candidates {
        by_value.insert(value, tag);
    }
    let mut candidates: Vec<(String, String)> = by_value.into_iter().map(|(v, t)| (t, v)).collect();
    let better = |a: &(String, String), b: &(String, String)| -> Ordering {
        if choice.semver.is_some() {
            let (x, y) = (
                Version::parse_tag(&a.1).unwrap(),
                Version::parse_tag(&b.1).unwrap(),
            );
            x.precedence(&y).then(a.0.cmp(&b.0))
        } else if let Some(order) = choice.alphabetical {
            let by = a.1.as_bytes().cmp(b.1.as_bytes());
            (if order == Order::Asc {
                by
            } else {
                by.reverse()
            })
            .then(a.0.cmp(&b.0))
        } else {
            let order = choice.numerical.unwrap();
            let by = Number::parse(&a.1).cmp(&Number::parse(&b.1));
            (if order == Order::Asc {
                by
            } else {
                by.reverse()
            })
            .then(b.0.cmp(&a.0))
        }
    };
    if let Some(range) = &choice.semver {
        let c = Constraints::parse(range).unwrap();
        candidates.retain(|(_, v)| Version::parse_tag(v).is_some_and(|v| c.matches(&v)));
    } else if choice.numerical.is_some() {
        candidates.retain(|(_, v)| Number::parse(v).is_some());
    }
    candidates.sort_by(|a, b| better(b, a));
    candidates.into_iter().next().map(|(t, _)| t)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn election_is_order_independent_and_matches_the_reference(
        (choice, filter) in policies(),
        tags in proptest::collection::vec(tag(), 0..40),
        seed in any::<u64>(),
    ) {
        let policy = Policy::new(&choice, filter.as_ref()).unwrap();
        let elected = policy.select(tags.iter().map(String::as_str)).ok().map(str::to_string);
        prop_assert_eq!(&elected, &reference(&choice, filter.as_ref(), &tags));

        let mut shuffled = tags.clone();
        let mut s = seed | 1;
        for i in (1..shuffled.len()).rev() {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            shuffled.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let again = policy.select(shuffled.iter().map(String::as_str)).ok().map(str::to_string);
        prop_assert_eq!(&elected, &again);

        if let Ok(list) = TagList::new(&tags) {
            let sorted = policy.select_sorted(list.iter()).ok().map(str::to_string);
            prop_assert_eq!(&elected, &sorted);
        }

        let explained = policy.explain(tags.iter().map(String::as_str), 3);
        prop_assert_eq!(elected, explained.elected.map(|c| c.tag));
        prop_assert_eq!(explained.read, tags.len());
    }
}
