//! Any pattern, template and tags through filterTags and an election: no panic.
#![no_main]

use image_reflector::policy::{FilterSpec, Order, Policy, PolicyChoice};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut parts = text.splitn(3, '\n');
    let (pattern, extract, tags) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let filter = FilterSpec { pattern: pattern.into(), extract: extract.into() };
    let tags: Vec<&str> = tags.split('\n').collect();
    for choice in [
        PolicyChoice { semver: Some(">=0.0.0-0".into()), ..Default::default() },
        PolicyChoice { alphabetical: Some(Order::Asc), ..Default::default() },
        PolicyChoice { numerical: Some(Order::Desc), ..Default::default() },
    ] {
        if let Ok(policy) = Policy::new(&choice, Some(&filter)) {
            let elected = policy.select(tags.iter().copied()).ok();
            let explained = policy.explain(tags.iter().copied(), 2);
            assert_eq!(elected, explained.elected.as_ref().map(|c| c.tag.as_str()));
        }
    }
});
