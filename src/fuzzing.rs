//! Every fuzz target, by name: the targets in `fuzz/` call these, and `cargo test` replays the
//! checked-in corpora and past findings (`fuzz/corpus/<name>`, `fuzz/regressions/<name>`)
//! through them under a watchdog (`tests/it/policy/fuzz_replay.rs`). Each takes arbitrary bytes,
//! must not panic, and asserts what must hold of its parser. Not an API.

use crate::policy::{
    compile_exclusions, translate_go_regex, Constraints, FilterSpec, InvalidPolicy, Order, Policy,
    PolicyChoice, Version,
};
pub use crate::registry::fuzz::{
    cloud_answer, docker_config, image_inspection, image_reference, link_header, manifest,
    proxy_address, retry_after, tag_list_json, token_json, www_authenticate,
};
pub use crate::verify::fuzz::{
    cosign_key, cosign_payload, notation_envelope, signature_bundle, trust_documents,
};

/// A fuzz target: raw bytes in, a panic on a finding.
pub type Target = fn(&[u8]);

/// Every target, by the name of its binary in `fuzz/` and of its corpus directories.
pub const TARGETS: &[(&str, Target)] = &[
    ("cloud_answer", cloud_answer),
    ("constraint", constraint),
    ("cosign_key", cosign_key),
    ("cosign_payload", cosign_payload),
    ("docker_config", docker_config),
    ("exclusion_list", exclusion_list),
    ("filter_extract", filter_extract),
    ("go_regex", go_regex),
    ("image_inspection", image_inspection),
    ("image_reference", image_reference),
    ("link_header", link_header),
    ("manifest", manifest),
    ("notation_envelope", notation_envelope),
    ("platform", platform),
    ("proxy_address", proxy_address),
    ("retry_after", retry_after),
    ("signature_bundle", signature_bundle),
    ("tag_list_json", tag_list_json),
    ("token_json", token_json),
    ("trust_documents", trust_documents),
    ("www_authenticate", www_authenticate),
];

/// `spec.platforms` entries: a parsed platform prints as text that parses to the same
/// platform, and an image for a platform serves that platform.
pub fn platform(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(parsed) = crate::policy::Platform::parse(text) {
        assert!(parsed.served_by(&parsed), "{text:?}");
        let printed = parsed.to_string();
        // The printed form adds a default variant (`linux/arm` -> `linux/arm/v7`): past the
        // length bound it is not read back, which is fine for a form nobody writes.
        if printed.len() > crate::policy::MAX_PLATFORM_LEN {
            return;
        }
        let again = crate::policy::Platform::parse(&printed)
            .unwrap_or_else(|e| panic!("{printed:?} (from {text:?}) does not parse: {e}"));
        assert_eq!(again, parsed, "{text:?}");
    }
}

fn lines(data: &[u8]) -> Option<std::str::Split<'_, char>> {
    std::str::from_utf8(data).ok().map(|t| t.split('\n'))
}

/// A semver range (first line) and a tag (second): errors are the documented kinds.
pub fn constraint(data: &[u8]) {
    let Some(mut lines) = lines(data) else { return };
    let range = lines.next().unwrap_or_default();
    let tag = lines.next().unwrap_or("1.2.3");
    match Constraints::parse(range) {
        Ok(c) => {
            if let Some(v) = Version::parse_tag(tag) {
                let _ = c.matches(&v);
            }
        }
        Err(
            InvalidPolicy::ImproperConstraint(_)
            | InvalidPolicy::ConstraintParser { .. }
            | InvalidPolicy::RangeTooLong(_),
        ) => {}
        Err(other) => panic!("unexpected error kind for a range: {other}"),
    }
}

/// A pattern, a template, then tags, through `filterTags` and all three policies: `select`
/// and `explain` elect the same tag.
pub fn filter_extract(data: &[u8]) {
    let Some(mut lines) = lines(data) else { return };
    let pattern = lines.next().unwrap_or_default();
    let extract = lines.next().unwrap_or_default();
    let tags: Vec<&str> = lines.collect();
    let filter = FilterSpec {
        pattern: pattern.into(),
        extract: extract.into(),
    };
    for choice in [
        PolicyChoice {
            semver: Some(">=0.0.0-0".into()),
            ..Default::default()
        },
        PolicyChoice {
            alphabetical: Some(Order::Asc),
            ..Default::default()
        },
        PolicyChoice {
            numerical: Some(Order::Desc),
            ..Default::default()
        },
    ] {
        if let Ok(policy) = Policy::new(&choice, Some(&filter)) {
            let elected = policy.select(tags.iter().copied()).ok();
            let explained = policy.explain(tags.iter().copied(), 2);
            assert_eq!(elected, explained.elected.as_ref().map(|c| c.tag.as_str()));
        }
    }
}

/// An exclusion list (lines up to an empty line), then tags: compiles or fails with Flux's
/// text naming an entry, and matches each tag.
pub fn exclusion_list(data: &[u8]) {
    let Some(text) = std::str::from_utf8(data).ok() else {
        return;
    };
    let (patterns, tags) = text.split_once("\n\n").unwrap_or((text, "1.0.0\nlatest"));
    let patterns: Vec<String> = patterns.split('\n').map(str::to_string).collect();
    match compile_exclusions(&patterns) {
        Ok(exclusions) => {
            assert_eq!(exclusions.len(), patterns.len());
            for tag in tags.split('\n') {
                let _ = exclusions.excludes(tag);
            }
        }
        Err(message) => assert!(message.starts_with("failed to compile "), "{message}"),
    }
}

/// A Go pattern: Go's error, or a translation the regex crate reads (the translator never
/// writes text the crate refuses), the same each time.
pub fn go_regex(data: &[u8]) {
    let Ok(pattern) = std::str::from_utf8(data) else {
        return;
    };
    match translate_go_regex(pattern) {
        Ok(translated) => {
            let parsed = regex_syntax::ParserBuilder::new()
                .nest_limit(8000)
                .build()
                .parse(&translated.pattern);
            assert!(parsed.is_ok(), "{pattern:?} -> {:?}", translated.pattern);
            assert_eq!(translate_go_regex(pattern).ok(), Some(translated));
        }
        Err(e) => assert!(e.to_string().starts_with("error parsing regexp: "), "{e}"),
    }
}
