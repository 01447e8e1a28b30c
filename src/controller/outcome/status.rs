//! The status writer, the way Flux writes status (docs/imagerepository.md): Flux's final step
//! (conditions summarized, observedGeneration, the handled request) and a JSON merge patch on
//! the status subresource with field manager `image-reflector-controller`, sent only when the
//! status changed, so a reconcile that changed nothing writes nothing.

use super::conditions::{carry_transition_times, Conditions};
use super::error::Error;
use super::summary::{summarize, Outcome};
use crate::api::Condition;
use crate::controller::object::keys::{requested_at, FIELD_MANAGER};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::fmt::Debug;
use tracing::Instrument;

/// What a status patch carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Patched {
    /// All of `desired` (so a cache a write behind is overwritten): every reconcile's write.
    Whole,
    /// Only what changed (a migration, its own small write).
    Changes,
}

/// Patches `desired` onto the object's status when it differs from `current`, with `null`
/// for what `desired` no longer has; returns whether it wrote. With `guards` (JSON patch
/// tests, controller/schema/marker.rs) it is a JSON patch instead, the guards first, and the
/// API server writes nothing unless every one holds.
pub async fn patch_status<K, S>(
    api: &Api<K>,
    obj: &K,
    current: &S,
    desired: &S,
    patched: Patched,
    guards: &[Value],
) -> Result<bool, Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
    S: Serialize + PartialEq,
{
    if current == desired {
        return Ok(false);
    }
    let (current, desired) = (to_value(current), to_value(desired));
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    let patched = if guards.is_empty() {
        let patch = serde_json::json!({ "status": merge_patch(&current, &desired, patched) });
        api.patch_status(&obj.name_any(), &params, &Patch::Merge(&patch))
            .instrument(tracing::info_span!("status patch"))
            .await
    } else {
        // The whole status: what `Whole` writes, and `Changes` too once nothing else writes
        // our status (a merge patch's `null`s have no JSON patch twin that cannot fail).
        let mut ops = guards.to_vec();
        ops.push(serde_json::json!({"op": "add", "path": "/status", "value": desired}));
        // Operations of ours (marker.rs, whose tests read them as a patch).
        let patch: json_patch::Patch =
            serde_json::from_value(Value::Array(ops)).expect("JSON patch operations");
        api.patch_status(&obj.name_any(), &params, &Patch::Json::<()>(patch))
            .instrument(tracing::info_span!("status patch"))
            .await
    };
    patched?;
    Ok(true)
}

fn to_value<S: Serialize>(status: &S) -> Value {
    // A status is plain data: it always serialises.
    serde_json::to_value(status).unwrap_or(Value::Null)
}

/// The JSON merge patch (RFC 7386) from `current` to `desired`. The status types omit absent
/// fields when serialised, and a merge patch leaves an omitted field as it was: a field to
/// clear must be sent as `null`. `Whole` sends every field of `desired`; `Changes` only those
/// that differ.
fn merge_patch(current: &Value, desired: &Value, patched: Patched) -> Value {
    let (Value::Object(old), Value::Object(new)) = (current, desired) else {
        return desired.clone();
    };
    let mut patch = serde_json::Map::new();
    for (key, value) in new {
        match old.get(key) {
            Some(was) if was == value && patched == Patched::Changes => {}
            Some(was) => {
                patch.insert(key.clone(), merge_patch(was, value, patched));
            }
            None => {
                patch.insert(key.clone(), value.clone());
            }
        }
    }
    for key in old.keys().filter(|k| !new.contains_key(*k)) {
        patch.insert(key.clone(), Value::Null);
    }
    Value::Object(patch)
}

/// The fields both kinds' statuses share, which Flux's final step writes.
pub trait FluxStatus: Clone + Default + PartialEq {
    fn conditions(&self) -> &[Condition];
    fn set_conditions(&mut self, conditions: Vec<Condition>);
    fn observed_generation(&self) -> Option<i64>;
    fn set_observed_generation(&mut self, generation: Option<i64>);
    fn set_last_handled_reconcile_at(&mut self, token: String);
}

macro_rules! flux_status {
    ($status:ty) => {
        impl FluxStatus for $status {
            fn conditions(&self) -> &[Condition] {
                self.conditions.as_deref().unwrap_or_default()
            }
            fn set_conditions(&mut self, conditions: Vec<Condition>) {
                self.conditions = Some(conditions);
            }
            fn observed_generation(&self) -> Option<i64> {
                self.observed_generation
            }
            fn set_observed_generation(&mut self, generation: Option<i64>) {
                self.observed_generation = generation;
            }
            fn set_last_handled_reconcile_at(&mut self, token: String) {
                self.last_handled_reconcile_at = Some(token);
            }
        }
    };
}
flux_status!(crate::api::ImageRepositoryStatus);
flux_status!(crate::api::ImagePolicyStatus);

/// Flux's final step of a reconcile of `obj` (§2.3–2.4): the finalized conditions (edited in
/// `list` by the steps), transition times kept where nothing changed, observedGeneration, and
/// the handled reconcile request, written into `status`.
pub fn finish_status<K: Resource, S: FluxStatus>(
    obj: &K,
    old: &S,
    status: &mut S,
    mut list: Vec<Condition>,
    outcome: &Outcome,
    now: Timestamp,
) {
    let generation = obj.meta().generation.unwrap_or(0);
    let mut conditions = Conditions::new(&mut list, generation, now);
    let observed = summarize(
        &mut conditions,
        outcome,
        generation,
        old.observed_generation(),
    );
    carry_transition_times(old.conditions(), &mut list);
    status.set_conditions(list);
    status.set_observed_generation(observed);
    if let Some(token) = requested_at(obj) {
        status.set_last_handled_reconcile_at(token.to_string());
    }
}

/// Whether `conditions` say Ready=True.
pub fn is_ready(conditions: &[Condition]) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == crate::api::ConditionStatus::True)
}

/// Whether `conditions` say Stalled=True.
pub fn is_stalled(conditions: &[Condition]) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == "Stalled" && c.status == crate::api::ConditionStatus::True)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_merge_patch_clears_what_the_status_no_longer_has() {
        let current = json!({"latestRef": {"name": "a", "tag": "1", "digest": "sha256:1"},
                             "latestImage": "a:1", "observedGeneration": 2});
        let desired = json!({"latestRef": {"name": "a", "tag": "1"}, "observedGeneration": 2});
        assert_eq!(
            merge_patch(&current, &desired, Patched::Whole),
            json!({"latestRef": {"name": "a", "tag": "1", "digest": null},
                   "latestImage": null, "observedGeneration": 2})
        );
        assert_eq!(
            merge_patch(&current, &desired, Patched::Changes),
            json!({"latestRef": {"digest": null}, "latestImage": null})
        );
    }
}
