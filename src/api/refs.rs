//! Object references shared by both kinds (Flux's `meta.LocalObjectReference` and
//! `meta.NamespacedObjectReference`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A reference to an object in the same namespace, e.g. a Secret.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct LocalObjectReference {
    /// Name of the referent.
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
