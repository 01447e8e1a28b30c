//! Which fields of an ImagePolicy's spec Flux's CRDs lack: the ones an API server serving
//! Flux's schema prunes from every read (docs/install.md, "While Flux's CRDs are served").
//!
//! Derived from the types, not listed by hand: [`set_beyond_flux`] destructures the spec in
//! full, so a field added to [`ImagePolicySpec`] or [`TagFilter`] does not compile until it is
//! classed here as Flux's or beyond, and a test checks both lists against the CRD we generate
//! (and, under `make e2e-flux`, [`FLUX_SPEC_FIELDS`] against Flux's own CRD).

use super::image_policy::{
    DowngradePolicy, ImagePolicyChoice, ImagePolicySpec, SignedTimePolicy, TagFilter, UndatedPolicy,
};

/// The spec fields of Flux's ImagePolicy v1 (image-reflector-controller v1.2), as dotted paths.
pub const FLUX_SPEC_FIELDS: [&str; 11] = [
    "digestReflectionPolicy",
    "filterTags",
    "filterTags.extract",
    "filterTags.pattern",
    "imageRepositoryRef",
    "interval",
    "policy",
    "policy.alphabetical",
    "policy.numerical",
    "policy.semver",
    "suspend",
];

/// The spec fields beyond Flux's, as dotted paths: every gate, and what tunes one.
pub const BEYOND_FLUX: [&str; 8] = [
    "downgrade",
    "filterTags.minAge",
    "filterTags.minAgeByBump",
    "filterTags.minAgeSignedTime",
    "filterTags.minAgeUndated",
    "platforms",
    "policy.newest",
    "verify",
];

/// Status fields of our ImagePolicy CRD that Flux's v1 lacks: `heldBack` (the gated
/// election's), and `latestImage` and `observedPreviousImage`, Flux's deprecated fields, kept so
/// that a status written with them is read and migrated.
pub const BEYOND_FLUX_STATUS: [&str; 3] = ["heldBack", "latestImage", "observedPreviousImage"];

/// Every path of our ImagePolicy CRD that Flux's lacks (`ImagePolicy.spec.verify`, ...): what
/// `image-reflector crds --beyond-flux` prints, CI's schema comparison allows and the docs list.
pub fn beyond_flux_paths() -> Vec<String> {
    let spec = BEYOND_FLUX.iter().map(|f| format!("ImagePolicy.spec.{f}"));
    let status = BEYOND_FLUX_STATUS
        .iter()
        .map(|f| format!("ImagePolicy.status.{f}"));
    spec.chain(status).collect()
}

/// The fields of [`BEYOND_FLUX`] that `spec` sets to something other than what their absence
/// reads as: what a served schema without them would take away. `minAgeUndated: Hold` and
/// `downgrade: Allow` are what a missing field means, and an empty `platforms` asks nothing.
pub fn set_beyond_flux(spec: &ImagePolicySpec) -> Vec<&'static str> {
    // In full, without `..`: a new field fails to compile here until it is classed.
    let ImagePolicySpec {
        image_repository_ref: _,
        policy:
            ImagePolicyChoice {
                semver: _,
                alphabetical: _,
                numerical: _,
                newest,
            },
        filter_tags,
        digest_reflection_policy: _,
        interval: _,
        suspend: _,
        platforms,
        verify,
        downgrade,
    } = spec;
    let (min_age, by_bump, undated, signed) = match filter_tags.as_deref() {
        Some(TagFilter {
            pattern: _,
            extract: _,
            min_age,
            min_age_undated,
            min_age_signed_time,
            min_age_by_bump,
        }) => (
            min_age.is_some(),
            min_age_by_bump.is_some(),
            *min_age_undated,
            *min_age_signed_time,
        ),
        None => (false, false, None, None),
    };
    let set = [
        ("downgrade", *downgrade == Some(DowngradePolicy::Refuse)),
        ("filterTags.minAge", min_age),
        ("filterTags.minAgeByBump", by_bump),
        (
            "filterTags.minAgeSignedTime",
            signed.is_some_and(|s| s != SignedTimePolicy::default()),
        ),
        (
            "filterTags.minAgeUndated",
            undated.is_some_and(|u| u != UndatedPolicy::default()),
        ),
        (
            "platforms",
            platforms.as_ref().is_some_and(|p| !p.is_empty()),
        ),
        ("policy.newest", newest.is_some()),
        ("verify", verify.is_some()),
    ];
    set.into_iter()
        .filter_map(|(field, is_set)| is_set.then_some(field))
        .collect()
}

/// `field` (a dotted path) as a JSON pointer under the object: `/spec/filterTags/minAge`.
pub fn spec_pointer(field: &str) -> String {
    format!("/spec/{}", field.replace('.', "/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{crds, ImagePolicy};
    use std::collections::BTreeSet;

    /// The dotted paths of the properties of our CRD's v1 ImagePolicy spec, two levels deep
    /// (the depth at which Flux's and ours part).
    fn our_spec_fields() -> BTreeSet<String> {
        let crd = crds()
            .into_iter()
            .find(|c| c.spec.names.kind == "ImagePolicy")
            .unwrap();
        let v1 = crd.spec.versions.iter().find(|v| v.name == "v1").unwrap();
        let schema = serde_json::to_value(&v1.schema).unwrap();
        let spec = &schema["openAPIV3Schema"]["properties"]["spec"]["properties"];
        let mut fields = BTreeSet::new();
        for (name, property) in spec.as_object().unwrap() {
            fields.insert(name.clone());
            if name == "filterTags" || name == "policy" {
                for inner in property["properties"].as_object().unwrap().keys() {
                    fields.insert(format!("{name}.{inner}"));
                }
            }
        }
        fields
    }

    #[test]
    fn every_spec_field_is_fluxs_or_beyond_and_none_is_both() {
        let classed: BTreeSet<String> = FLUX_SPEC_FIELDS
            .iter()
            .chain(&BEYOND_FLUX)
            .map(|f| f.to_string())
            .collect();
        assert_eq!(our_spec_fields(), classed);
        assert_eq!(classed.len(), FLUX_SPEC_FIELDS.len() + BEYOND_FLUX.len());
    }

    fn spec(json: serde_json::Value) -> ImagePolicySpec {
        let policy: ImagePolicy = serde_json::from_value(serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy",
            "metadata": {"name": "app"}, "spec": json,
        }))
        .unwrap();
        policy.spec
    }

    #[test]
    fn only_what_a_pruned_read_would_change_counts_as_set() {
        let base = serde_json::json!({
            "imageRepositoryRef": {"name": "app"}, "policy": {"semver": {"range": "1.x"}},
        });
        let with = |extra: serde_json::Value| {
            let mut json = base.clone();
            json.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            set_beyond_flux(&spec(json))
        };
        assert!(with(serde_json::json!({})).is_empty());
        // What our CRD's defaults fill in reads the same when missing.
        let defaults = serde_json::json!({
            "downgrade": "Allow", "platforms": [],
            "filterTags": {"pattern": ".*", "minAgeUndated": "Hold", "minAgeSignedTime": "IfPresent"},
        });
        assert!(with(defaults).is_empty());
        let all = serde_json::json!({
            "downgrade": "Refuse", "platforms": ["linux/arm64"],
            "filterTags": {"minAge": "1h", "minAgeUndated": "FirstSeen",
                           "minAgeSignedTime": "Required", "minAgeByBump": {"major": "720h"}},
            "verify": {"provider": "cosign"},
            "policy": {"semver": {"range": "1.x"}, "newest": {}},
        });
        assert_eq!(with(all), BEYOND_FLUX.to_vec());
    }

    #[test]
    fn a_field_is_pointed_at_under_spec() {
        assert_eq!(spec_pointer("filterTags.minAge"), "/spec/filterTags/minAge");
        assert_eq!(spec_pointer("verify"), "/spec/verify");
    }
}
