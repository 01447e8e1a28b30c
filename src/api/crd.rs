//! Generates the two CustomResourceDefinitions from the Rust types.
//!
//! kube's derive produces the v1 schema; `finish_crd` then applies what a derive cannot say
//! and Flux's CRDs do: the status default `{observedGeneration: -1}`, no `nullable` markers
//! (Flux's optional fields are simply absent), and the deprecated `v1beta2` version served
//! with the same schema (docs/compatibility.md, "API").

use super::{ImagePolicy, ImageRepository};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use kube::CustomResourceExt;
use serde_json::{json, Value};

/// The API group of both kinds.
pub const API_GROUP: &str = "image.toolkit.fluxcd.io";
/// The stored version.
pub const STORAGE_VERSION: &str = "v1";
/// The older version still served, deprecated, with the same schema.
pub const DEPRECATED_VERSION: &str = "v1beta2";

/// Both CRDs, ImageRepository first.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        finish_crd(ImageRepository::crd()),
        finish_crd(ImagePolicy::crd()),
    ]
}

/// Both CRDs as one multi-document YAML stream, exactly as committed under `crds/`.
pub fn crds_yaml() -> Result<String, serde_saphyr::ser::Error> {
    let mut out = String::new();
    for crd in crds() {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(&crd)?);
    }
    Ok(out)
}

fn finish_crd(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    let kind = crd.spec.names.kind.clone();
    crd.spec.names.list_kind = Some(format!("{kind}List"));
    let mut v1 = crd.spec.versions.remove(0);
    if let Some(schema) = v1
        .schema
        .as_mut()
        .and_then(|s| s.open_api_v3_schema.as_mut())
    {
        let mut value = serde_json::to_value(&*schema).expect("a schema serializes");
        strip_nullable(&mut value);
        no_default_when_required(&mut value);
        let root = value.as_object_mut().expect("the root schema is an object");
        // The API server requires neither spec nor status at the root, and Flux declares the
        // standard envelope fields explicitly.
        root.remove("required");
        let properties = root["properties"]
            .as_object_mut()
            .expect("root has properties");
        properties.insert("apiVersion".into(), json!({ "type": "string" }));
        properties.insert("kind".into(), json!({ "type": "string" }));
        properties.insert("metadata".into(), json!({ "type": "object" }));
        properties["status"]["default"] = json!({ "observedGeneration": -1 });
        *schema = serde_json::from_value::<JSONSchemaProps>(value).expect("schema round-trips");
    }
    let mut v1beta2 = v1.clone();
    v1beta2.name = DEPRECATED_VERSION.to_string();
    v1beta2.storage = false;
    v1beta2.deprecated = Some(true);
    v1beta2.deprecation_warning = Some(format!("v1beta2 {kind} is deprecated, upgrade to v1"));
    crd.spec.versions = vec![v1, v1beta2];
    crd
}

/// Removes the `default` of every required property: a field the schema requires is never
/// defaulted by the API server (a default would take the place of a missing value). The Rust
/// types read some required fields as empty when absent (`#[serde(default)]`, for a served
/// schema of ours that lacks them: api/gate_fields.rs), which schemars writes as a default.
fn no_default_when_required(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let required: Vec<String> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(properties)) = map.get_mut("properties") {
                for name in &required {
                    if let Some(Value::Object(property)) = properties.get_mut(name) {
                        property.remove("default");
                    }
                }
            }
            map.values_mut().for_each(no_default_when_required);
        }
        Value::Array(items) => items.iter_mut().for_each(no_default_when_required),
        _ => {}
    }
}

/// Removes `nullable: true` and the `null` member of optional enums everywhere: Flux's
/// schema has neither; an optional field is simply absent.
fn strip_nullable(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("nullable");
            if let Some(Value::Array(members)) = map.get_mut("enum") {
                members.retain(|m| !m.is_null());
            }
            map.values_mut().for_each(strip_nullable);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nullable),
        _ => {}
    }
}
