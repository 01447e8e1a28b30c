//! Any string as a semver range, and any tag against it: no panic, and errors are the
//! documented ones.
#![no_main]

use image_reflector::policy::{Constraints, InvalidPolicy, Version};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (range, tag) = text.split_once('\n').unwrap_or((text, "1.2.3"));
    match Constraints::parse(range) {
        Ok(c) => {
            if let Some(v) = Version::parse_tag(tag) {
                let _ = c.matches(&v);
            }
        }
        Err(InvalidPolicy::ImproperConstraint(_) | InvalidPolicy::ConstraintParser) => {}
        Err(other) => panic!("unexpected error kind for a range: {other}"),
    }
});
