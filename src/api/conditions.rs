//! The standard Kubernetes `metav1.Condition`, with the schema the API server expects.
//!
//! k8s-openapi's `Condition` carries no validation in its generated schema, while Flux's CRDs
//! carry metav1's (patterns, lengths, the status enum), so the schema is written out here.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The status of a condition.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

/// One observation of an object's state, as in `metav1.Condition`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The condition type, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    pub status: ConditionStatus,
    /// The `metadata.generation` the condition was set for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When the status last changed.
    pub last_transition_time: Time,
    /// A CamelCase reason, e.g. `Succeeded`.
    pub reason: String,
    /// A human-readable message.
    pub message: String,
}

impl JsonSchema for Condition {
    fn schema_name() -> Cow<'static, str> {
        "Condition".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "description": "An observation of one aspect of the object's state.",
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
            "properties": {
                "lastTransitionTime": {
                    "type": "string", "format": "date-time",
                    "description": "When the condition last changed from one status to another."
                },
                "message": {
                    "type": "string", "maxLength": 32768,
                    "description": "A human-readable message about the transition."
                },
                "observedGeneration": {
                    "type": "integer", "format": "int64", "minimum": 0,
                    "description": "The metadata.generation the condition was set for."
                },
                "reason": {
                    "type": "string", "minLength": 1, "maxLength": 1024,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                    "description": "A programmatic identifier of the reason for the last transition."
                },
                "status": {
                    "type": "string", "enum": ["True", "False", "Unknown"],
                    "description": "Status of the condition."
                },
                "type": {
                    "type": "string", "maxLength": 316,
                    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                    "description": "Type of the condition, in CamelCase."
                }
            }
        })
    }
}
