//! What the API server's OpenAPI v3 document for `image.toolkit.fluxcd.io/v1` says of our
//! kinds: a fingerprint of each kind's schema (a change restarts that kind's watch) and which
//! ImagePolicy gate fields it lacks, at every depth (fields it would prune: an older CRD of
//! ours lacks `verify.attestations` though it has `verify`). A pure reading of the document;
//! [`super::monitor`] fetches it.

use crate::api::{gate_paths, API_GROUP, STORAGE_VERSION};
use serde_json::Value;
use std::hash::{DefaultHasher, Hash, Hasher};

/// One kind's schema as served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindSchema {
    /// A fingerprint of the kind's whole schema.
    pub fingerprint: u64,
    /// For ImagePolicy, the gate paths (`api::gate_paths`) the schema lacks, each the
    /// topmost of its branch (empty for ours).
    pub lacking: Vec<&'static str>,
}

/// The group version's document, read: each kind, or `None` when it is not served.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Served {
    pub policy: Option<KindSchema>,
    pub repository: Option<KindSchema>,
}

/// Reads the OpenAPI v3 document of `image.toolkit.fluxcd.io/v1`.
pub fn read(document: &Value) -> Served {
    Served {
        policy: kind_schema(document, "ImagePolicy"),
        repository: kind_schema(document, "ImageRepository"),
    }
}

/// The schema of `kind`, found by its `x-kubernetes-group-version-kind` (not by the name the
/// API server gives it, which is its own business).
fn kind_schema(document: &Value, kind: &str) -> Option<KindSchema> {
    let schemas = document.pointer("/components/schemas")?.as_object()?;
    let schema = schemas.values().find(|schema| is_kind(schema, kind))?;
    let mut hasher = DefaultHasher::new();
    // serde_json's maps are sorted: one schema, one text, one fingerprint.
    schema.to_string().hash(&mut hasher);
    let spec = schema.pointer("/properties/spec").unwrap_or(&Value::Null);
    let lacking = match kind {
        "ImagePolicy" => lacking(spec),
        _ => Vec::new(),
    };
    Some(KindSchema {
        fingerprint: hasher.finish(),
        lacking,
    })
}

fn is_kind(schema: &Value, kind: &str) -> bool {
    let gvks = schema["x-kubernetes-group-version-kind"].as_array();
    gvks.into_iter().flatten().any(|gvk| {
        gvk["group"] == API_GROUP && gvk["version"] == STORAGE_VERSION && gvk["kind"] == kind
    })
}

/// The gate paths `spec` (a served schema) lacks, a path under one it lacks not repeated.
pub fn lacking(spec: &Value) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for path in gate_paths() {
        let under_one = out.iter().any(|l| path.starts_with(&format!("{l}.")));
        if !under_one && !has_field(spec, path) {
            out.push(path);
        }
    }
    out
}

/// Whether the object schema `spec` has the dotted path `field` among its properties, through
/// lists' items.
fn has_field(spec: &Value, field: &str) -> bool {
    field
        .split('.')
        .try_fold(spec, |schema, name| {
            let object = schema.get("items").unwrap_or(schema);
            object.pointer(&format!("/properties/{name}"))
        })
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn document(policy_spec: Value) -> Value {
        let gvk = |kind: &str| json!([{"group": API_GROUP, "version": "v1", "kind": kind}]);
        json!({"components": {"schemas": {
            "io.fluxcd.toolkit.image.v1.ImagePolicy": {
                "x-kubernetes-group-version-kind": gvk("ImagePolicy"),
                "properties": {"spec": policy_spec},
            },
            "io.fluxcd.toolkit.image.v1.ImagePolicyList": {
                "x-kubernetes-group-version-kind": gvk("ImagePolicyList"),
            },
            "io.fluxcd.toolkit.image.v1.ImageRepository": {
                "x-kubernetes-group-version-kind": gvk("ImageRepository"),
                "properties": {"spec": {"properties": {"image": {"type": "string"}}}},
            },
        }}})
    }

    fn fluxs() -> Value {
        json!({"properties": {
            "filterTags": {"properties": {"pattern": {}, "extract": {}}},
            "policy": {}, "suspend": {},
        }})
    }

    /// Our CRD's ImagePolicy v1 spec schema.
    fn ours() -> Value {
        let crd = crate::api::crds()
            .into_iter()
            .find(|c| c.spec.names.kind == "ImagePolicy")
            .unwrap();
        let v1 = crd
            .spec
            .versions
            .into_iter()
            .find(|v| v.name == "v1")
            .unwrap();
        let schema = serde_json::to_value(v1.schema).unwrap();
        schema["openAPIV3Schema"]["properties"]["spec"].clone()
    }

    #[test]
    fn our_schema_lacks_nothing_and_fluxs_lacks_every_field_beyond() {
        let served = read(&document(ours()));
        assert_eq!(served.policy.unwrap().lacking, Vec::<&str>::new());
        let served = read(&document(fluxs()));
        assert_eq!(
            served.policy.unwrap().lacking,
            crate::api::BEYOND_FLUX.to_vec()
        );
        assert!(served.repository.unwrap().lacking.is_empty());
    }

    /// Each gate field at every depth removed in turn from our schema (an older or partial CRD
    /// of ours) is lacking, and nothing else is: `verify` kept does not hide
    /// `verify.attestations` gone.
    #[test]
    fn each_gate_field_removed_at_any_depth_is_lacking() {
        let all: Vec<&str> = gate_paths().collect();
        assert!(all.len() >= 29, "{all:?}");
        for path in all {
            let mut spec = ours();
            let names: Vec<&str> = path.split('.').collect();
            let (last, parents) = names.split_last().unwrap();
            let mut at = &mut spec;
            for name in parents {
                at = &mut at["properties"][*name];
                if at.get("items").is_some() {
                    at = &mut at["items"];
                }
            }
            at["properties"].as_object_mut().unwrap().remove(*last);
            let served = read(&document(spec));
            assert_eq!(served.policy.unwrap().lacking, vec![path], "{path}");
        }
    }

    #[test]
    fn a_schema_is_found_by_its_kind_and_a_change_changes_its_fingerprint() {
        let one = read(&document(fluxs()));
        let mut changed = fluxs();
        changed["properties"]["verify"] = json!({});
        let two = read(&document(changed));
        assert_ne!(
            one.policy.as_ref().unwrap().fingerprint,
            two.policy.as_ref().unwrap().fingerprint
        );
        assert_eq!(one.repository, two.repository, "the other kind unchanged");
        assert_eq!(
            read(&json!({"components": {"schemas": {}}})),
            Served::default()
        );
        assert_eq!(read(&json!("not a document")), Served::default());
    }
}
