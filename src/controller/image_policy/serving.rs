//! How the API server serves a policy, and what the policy is told of it
//! (controller/schema/): held when it arrives without fields its generation held, told once
//! when the served schema lacks fields it could set (docs/install.md, "While Flux's CRDs are
//! served").

use crate::api::{gate_path, present, ImagePolicy};
use crate::controller::events::transition::{EventSpec, EventType};
use crate::controller::frame::reconciled::Serving;
use crate::controller::object::keys::{object_key, FIELD_MANAGER};
use crate::controller::outcome::error::Error;
use crate::controller::schema::marker::{hidden, GATES_ANNOTATION};
use crate::controller::schema::ServedSchema;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};

/// The Warning of a policy held because it arrived without fields its generation held.
pub const GATES_HIDDEN: &str = "GatesHidden";
/// The Normal event of a policy served whole by a schema that lacks fields beyond Flux's.
pub const GATE_FIELDS_UNSERVED: &str = "GateFieldsUnserved";
/// The Warning of a policy whose gates annotation names fields the served schema has and the
/// policy lacks: the annotation does not match the object.
pub const GATES_MARKER_INCONSISTENT: &str = "GatesAnnotationInconsistent";

/// How `policy` is served, given what is known of the `schema`.
pub fn serving(policy: &ImagePolicy, schema: &ServedSchema) -> Serving {
    let fix = "apply image-reflector's CRDs (docs/install.md)";
    if let Some(missing) = hidden(policy) {
        // The served schema has every one of them: nothing pruned them, the annotation is
        // not what this controller wrote.
        // (The schema names the topmost field it lacks: a marked field under it is lacking.)
        let served = schema.lacking();
        let lacked = |lacking: &[&str], field: &str| {
            lacking
                .iter()
                .any(|l| field == *l || field.starts_with(&format!("{l}.")))
        };
        if served.is_some_and(|lacking| missing.iter().all(|f| !lacked(&lacking, f))) {
            return Serving::Inconsistent(EventSpec {
                type_: EventType::Warning,
                reason: GATES_MARKER_INCONSISTENT.into(),
                message: format!(
                    "the annotation {GATES_ANNOTATION} says generation {} of this policy set \
                     spec.{}, which the API server's schema serves and the policy does not \
                     set: the annotation was not written by this controller. Nothing is \
                     written until it matches; remove the annotation",
                    policy.metadata.generation.unwrap_or_default(),
                    missing.join(", spec."),
                ),
            });
        }
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
    if let Some(unserved) = unserved_under_set(policy, schema) {
        return Serving::Hidden(EventSpec {
            type_: EventType::Warning,
            reason: GATES_HIDDEN.into(),
            message: format!(
                "the API server's ImagePolicy schema lacks spec.{}, under fields this policy \
                 sets: what it was given there would be pruned unseen, and it is not judged \
                 without it. Nothing is written; {fix}",
                unserved.join(", spec."),
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

/// The gate paths the served schema lacks whose parent is a gate field `policy` sets: an
/// older CRD of ours serving `verify` without `verify.attestations` would have pruned the
/// policy's attestations on their way in, leaving a signature alone to elect on.
fn unserved_under_set(policy: &ImagePolicy, schema: &ServedSchema) -> Option<Vec<&'static str>> {
    let lacking = schema.lacking()?;
    let spec = serde_json::to_value(&policy.spec).ok()?;
    let unserved: Vec<&'static str> = lacking
        .into_iter()
        .filter(|path| {
            path.rsplit_once('.')
                .is_some_and(|(parent, _)| gate_path(parent).is_some() && present(&spec, parent))
        })
        .collect();
    (!unserved.is_empty()).then_some(unserved)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::schema::served::{KindSchema, Served};
    use serde_json::json;

    fn policy(annotation: Option<&str>, spec: serde_json::Value) -> ImagePolicy {
        let mut whole =
            json!({"imageRepositoryRef": {"name": "app"}, "policy": {"semver": {"range": "1.x"}}});
        whole
            .as_object_mut()
            .unwrap()
            .extend(spec.as_object().unwrap().clone());
        let annotations =
            annotation.map(|a| json!({crate::controller::schema::marker::GATES_ANNOTATION: a}));
        serde_json::from_value(json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy",
            "metadata": {"name": "app", "namespace": "team", "generation": 2, "annotations": annotations},
            "spec": whole,
            "status": {"latestRef": {"name": "r/app", "tag": "1.0.0"}},
        }))
        .unwrap()
    }

    fn fluxs_schema() -> ServedSchema {
        let schema = ServedSchema::default();
        schema.take(Served {
            policy: Some(KindSchema {
                fingerprint: 1,
                lacking: crate::api::BEYOND_FLUX.to_vec(),
            }),
            repository: None,
        });
        schema
    }

    #[test]
    fn a_pruned_gated_policy_is_hidden_with_the_fields_the_election_kept_and_the_fix() {
        let pruned = policy(Some("2:filterTags.minAge"), json!({}));
        let Serving::Hidden(event) = serving(&pruned, &ServedSchema::default()) else {
            panic!("held, whatever is known of the schema");
        };
        assert_eq!(
            (event.type_, event.reason.as_str()),
            (EventType::Warning, GATES_HIDDEN)
        );
        for part in [
            "generation 2",
            "without spec.filterTags.minAge",
            "r/app:1.0.0 stands",
            "apply image-reflector's CRDs",
        ] {
            assert!(event.message.contains(part), "{part}: {}", event.message);
        }
    }

    /// A marker naming fields the served schema has, which the policy lacks, is the
    /// annotation's own inconsistency (a tenant's hand), not the cluster's CRDs: held, named
    /// as such; with the schema unknown or lacking the field, as before.
    #[test]
    fn a_forged_marker_is_named_not_blamed_on_the_crds() {
        let forged = policy(Some("2:filterTags.minAge"), json!({}));
        let ours = ServedSchema::default();
        ours.take(Served {
            policy: Some(KindSchema {
                fingerprint: 2,
                lacking: vec![],
            }),
            repository: None,
        });
        let Serving::Inconsistent(event) = serving(&forged, &ours) else {
            panic!("inconsistent");
        };
        assert_eq!(event.reason, GATES_MARKER_INCONSISTENT);
        assert!(
            event.message.contains("spec.filterTags.minAge")
                && event.message.contains("remove the annotation")
        );
        assert!(matches!(
            serving(&forged, &fluxs_schema()),
            Serving::Hidden(_)
        ));
        // A field marked at depth, under the one the schema names as lacking (an older CRD
        // of ours without minAgeByBump): pruned by the CRDs, not forged (`flux::crd_partial`).
        let deep = policy(Some("2:filterTags.minAgeByBump.major"), json!({}));
        let older = ServedSchema::default();
        older.take(Served {
            policy: Some(KindSchema {
                fingerprint: 4,
                lacking: vec!["filterTags.minAgeByBump"],
            }),
            repository: None,
        });
        let Serving::Hidden(event) = serving(&deep, &older) else {
            panic!("hidden, not inconsistent");
        };
        assert!(event
            .message
            .contains("without spec.filterTags.minAgeByBump.major"));
        // A schema lacking another field only: the marked one is served, the marker forged.
        let other = ServedSchema::default();
        other.take(Served {
            policy: Some(KindSchema {
                fingerprint: 5,
                lacking: vec!["platforms"],
            }),
            repository: None,
        });
        assert!(matches!(serving(&deep, &other), Serving::Inconsistent(_)));
    }

    /// A served schema with `verify` but without `verify.attestations` (an older CRD of ours)
    /// holds a policy that sets `verify`: its attestations would have been pruned unseen. One
    /// that sets no `verify` runs; Flux's schema (no `verify` at all) holds none.
    #[test]
    fn a_gate_field_unserved_under_one_the_policy_sets_holds_it() {
        let older = ServedSchema::default();
        older.take(Served {
            policy: Some(KindSchema {
                fingerprint: 3,
                lacking: vec!["verify.attestations"],
            }),
            repository: None,
        });
        let verified = policy(
            None,
            json!({"verify": {"provider": "cosign",
            "secretRef": {"name": "keys"}}}),
        );
        let Serving::Hidden(event) = serving(&verified, &older) else {
            panic!("held");
        };
        assert!(
            event.message.contains("lacks spec.verify.attestations"),
            "{}",
            event.message
        );
        assert!(!matches!(
            serving(&policy(None, json!({})), &older),
            Serving::Hidden(_)
        ));
        assert!(!matches!(
            serving(&verified, &fluxs_schema()),
            Serving::Hidden(_)
        ));
    }

    #[test]
    fn a_policy_served_whole_is_told_once_when_the_schema_lacks_fields() {
        let plain = policy(None, json!({}));
        assert_eq!(
            serving(&plain, &ServedSchema::default()),
            Serving::Whole,
            "schema unknown"
        );
        let schema = fluxs_schema();
        let Serving::Told(event) = serving(&plain, &schema) else {
            panic!("told");
        };
        assert_eq!(
            (event.type_, event.reason.as_str()),
            (EventType::Normal, GATE_FIELDS_UNSERVED)
        );
        assert!(
            event.message.contains("lacks spec.downgrade"),
            "{}",
            event.message
        );
        assert_eq!(serving(&plain, &schema), Serving::Whole, "once");
        let whole = policy(
            Some("2:filterTags.minAge"),
            json!({"filterTags": {"minAge": "1h"}}),
        );
        assert!(matches!(serving(&whole, &fluxs_schema()), Serving::Told(_)));
    }
}
