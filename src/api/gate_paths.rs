//! Every gate field at every depth: the spec paths under [`BEYOND_FLUX`]'s fields, read from
//! the CRD we generate (so a field added anywhere under them is one with no other change), and
//! which of them a spec sets. What a served schema lacks, what a policy's marker records and
//! what a write guards are all in these paths (controller/schema/).

use super::beyond_flux::{set_beyond_flux, BEYOND_FLUX};
use super::image_policy::ImagePolicySpec;
use serde_json::Value;
use std::sync::LazyLock;

/// The dotted paths of our ImagePolicy v1 spec under a field beyond Flux's, that field first,
/// through objects' properties and lists' items, in the schema's (sorted) order.
static GATE_PATHS: LazyLock<Vec<String>> = LazyLock::new(|| {
    let crd = super::crds()
        .into_iter()
        .find(|c| c.spec.names.kind == "ImagePolicy")
        .expect("our CRDs have ImagePolicy");
    let v1 = crd.spec.versions.iter().find(|v| v.name == "v1");
    let schema = serde_json::to_value(v1.map(|v| &v.schema)).unwrap_or_default();
    let spec = &schema["openAPIV3Schema"]["properties"]["spec"];
    let mut paths = Vec::new();
    walk(spec, "", &mut paths);
    paths.retain(|p| {
        BEYOND_FLUX
            .iter()
            .any(|b| p == b || p.starts_with(&format!("{b}.")))
    });
    paths
});

fn walk(schema: &Value, prefix: &str, out: &mut Vec<String>) {
    let properties = schema
        .get("properties")
        .or_else(|| schema.pointer("/items/properties"));
    for (name, inner) in properties.and_then(Value::as_object).into_iter().flatten() {
        let path = match prefix {
            "" => name.clone(),
            _ => format!("{prefix}.{name}"),
        };
        out.push(path.clone());
        walk(inner, &path, out);
    }
}

/// Every gate path, at every depth.
pub fn gate_paths() -> impl Iterator<Item = &'static str> {
    GATE_PATHS.iter().map(String::as_str)
}

/// `path` as one of [`gate_paths`], `None` when it is none.
pub fn gate_path(path: &str) -> Option<&'static str> {
    gate_paths().find(|p| *p == path)
}

/// The gate paths `spec` sets, the deepest of each branch: of each field beyond Flux's it
/// sets (as [`set_beyond_flux`] reads them), the paths under it present in the spec with no
/// present path under them, or the field itself. A child present implies its parents, so these
/// say all that is set.
pub fn set_gate_fields(spec: &ImagePolicySpec) -> Vec<&'static str> {
    let json = serde_json::to_value(spec).unwrap_or_default();
    let mut leaves = Vec::new();
    for top in set_beyond_flux(spec) {
        let under: Vec<&'static str> = gate_paths()
            .filter(|p| p.starts_with(&format!("{top}.")) && present(&json, p))
            .collect();
        let deepest = under
            .iter()
            .filter(|p| !under.iter().any(|q| q.starts_with(&format!("{p}."))));
        let before = leaves.len();
        leaves.extend(deepest);
        if leaves.len() == before {
            leaves.push(top);
        }
    }
    leaves
}

/// Whether `spec` (as JSON) has a value other than `null` at the dotted `path`, through lists
/// (in any of their items).
pub fn present(spec: &Value, path: &str) -> bool {
    pointer(spec, path).is_some()
}

/// The JSON pointer under the object of the first place `spec` has a value at `path`
/// (`/spec/verify/attestations/0/conditions/0/expression`).
pub fn pointer(spec: &Value, path: &str) -> Option<String> {
    let names: Vec<&str> = path.split('.').collect();
    find(spec, &names).map(|rest| format!("/spec{rest}"))
}

fn find(value: &Value, names: &[&str]) -> Option<String> {
    let Some((name, rest)) = names.split_first() else {
        return (!value.is_null()).then(String::new);
    };
    match value {
        Value::Object(fields) => {
            let inner = fields.get(*name)?;
            find(inner, rest)
                .map(|after| format!("/{}{after}", name.replace('~', "~0").replace('/', "~1")))
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| find(item, names).map(|after| format!("/{i}{after}"))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Read from our CRD: the fields beyond Flux's first in each branch, and under `verify`
    /// every field added since (attestations, the trusted root), at every depth.
    #[test]
    fn every_gate_field_is_read_from_our_crd() {
        let paths: Vec<&str> = gate_paths().collect();
        for field in BEYOND_FLUX {
            assert!(paths.contains(&field), "{field}");
        }
        for deep in [
            "verify.attestations",
            "verify.attestations.conditions.expression",
            "verify.attestations.matchOIDCIdentity.subject",
            "verify.trustedRootSecretRef.name",
            "filterTags.minAgeByBump.major",
        ] {
            assert!(paths.contains(&deep), "{deep}");
        }
        assert!(!paths
            .iter()
            .any(|p| p.starts_with("filterTags.pattern") || *p == "interval"));
        assert_eq!(
            gate_path("verify.attestations.name"),
            Some("verify.attestations.name")
        );
        assert_eq!(gate_path("verify.nothing"), None);
    }

    #[test]
    fn what_a_spec_sets_is_its_deepest_gate_fields() {
        let spec: ImagePolicySpec = serde_json::from_value(json!({
            "imageRepositoryRef": {"name": "app"}, "policy": {"semver": {"range": "1.x"}},
            "downgrade": "Refuse",
            "verify": {"provider": "cosign", "secretRef": {"name": "keys"},
                "attestations": [{"name": "p", "predicateType": "t"},
                                 {"name": "s", "predicateType": "u",
                                  "conditions": [{"expression": "true"}]}]}}))
        .unwrap();
        assert_eq!(
            set_gate_fields(&spec),
            [
                "downgrade",
                "verify.attestations.conditions.expression",
                "verify.attestations.name",
                "verify.attestations.predicateType",
                "verify.provider",
                "verify.secretRef.name",
            ]
        );
        let json = serde_json::to_value(&spec).unwrap();
        assert_eq!(
            pointer(&json, "verify.attestations.conditions.expression").as_deref(),
            Some("/spec/verify/attestations/1/conditions/0/expression")
        );
        assert_eq!(
            pointer(&json, "downgrade").as_deref(),
            Some("/spec/downgrade")
        );
        assert_eq!(pointer(&json, "verify.trustedRootSecretRef"), None);
    }
}
