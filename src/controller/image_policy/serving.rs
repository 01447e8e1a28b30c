//! How the API server serves a policy, and what the policy is told of it
//! (controller/schema/): held when it arrives without fields its generation held, told once
//! when the served schema lacks fields it could set (docs/install.md, "While Flux's CRDs are
//! served").

use crate::api::ImagePolicy;
use crate::controller::events::transition::{EventSpec, EventType};
use crate::controller::frame::apply::Serving;
use crate::controller::object::keys::{object_key, FIELD_MANAGER};
use crate::controller::outcome::error::Error;
use crate::controller::schema::marker::hidden;
use crate::controller::schema::ServedSchema;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};

/// The Warning of a policy held because it arrived without fields its generation held.
pub const GATES_HIDDEN: &str = "GatesHidden";
/// The Normal event of a policy served whole by a schema that lacks fields beyond Flux's.
pub const GATE_FIELDS_UNSERVED: &str = "GateFieldsUnserved";

/// How `policy` is served, given what is known of the `schema`.
pub fn serving(policy: &ImagePolicy, schema: &ServedSchema) -> Serving {
    let fix = "apply image-reflector's CRDs (docs/install.md)";
    if let Some(missing) = hidden(policy) {
        let elected = policy.status.as_ref().and_then(|s| s.latest_ref.as_ref());
        let kept = elected.map_or("no election".to_string(), |r| {
            format!("{}:{}", r.name, r.tag)
        });
        return Serving::Hidden(EventSpec {
            type_: EventType::Warning,
            reason: GATES_HIDDEN.into(),
            message: format!(
                "the API server serves generation {} of this policy without spec.{}, which it \
                 holds: the CRDs it serves are not image-reflector's. Nothing is written ({kept} \
                 stands); {fix}, and it resumes with every stored field",
                policy.metadata.generation.unwrap_or_default(),
                missing.join(", spec."),
            ),
        });
    }
    match schema.news_for(&object_key(policy)) {
        Some(lacking) => Serving::Told(EventSpec {
            type_: EventType::Normal,
            reason: GATE_FIELDS_UNSERVED.into(),
            message: format!(
                "the API server's ImagePolicy schema lacks spec.{}: this policy sets none of \
                 them and runs as under Flux's controller; to use them, {fix}",
                lacking.join(", spec."),
            ),
        }),
        None => Serving::Whole,
    }
}

/// Writes the marker patch (controller/schema/marker.rs) onto `policy`.
pub async fn mark(
    api: &Api<ImagePolicy>,
    policy: &ImagePolicy,
    marking: serde_json::Value,
) -> Result<(), Error> {
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    // Operations of ours (marker.rs, whose tests read them as a patch).
    let patch: json_patch::Patch = serde_json::from_value(marking).expect("JSON patch operations");
    api.patch(&policy.name_any(), &params, &Patch::Json::<()>(patch))
        .await?;
    Ok(())
}
