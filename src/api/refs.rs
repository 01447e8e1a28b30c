//! Object references shared by both kinds (Flux's `meta.LocalObjectReference` and
//! `meta.NamespacedObjectReference`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A reference to an object in the same namespace, e.g. a Secret.
///
/// `name` is required by the schema but read as empty when absent: a served schema that lacks
/// it (an older CRD of ours under a gate field) must not make the object undecodable, which
/// fails every object of the watch's list; the policy is then held naming the field
/// (`flux::crd_partial`), and an empty name is refused by the name check.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[schemars(extend("required" = ["name"]))]
pub struct LocalObjectReference {
    /// Name of the referent.
    #[serde(default)]
    pub name: String,
}

/// A reference to an object, in the referrer's namespace unless `namespace` is set.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct NamespacedObjectReference {
    /// Name of the referent.
    pub name: String,
    /// Namespace of the referent; empty means the referrer's own namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}
