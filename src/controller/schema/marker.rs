//! A policy once seen with gates stays known as gated, at its generation, whatever schema the
//! API server serves later: an annotation the controller owns records which gate fields the
//! generation sets, at every depth (`api::set_gate_fields`: the deepest of each branch, e.g.
//! `verify.attestations.conditions.expression`). A served schema prunes `spec`, never
//! `metadata.annotations`, so an object of that generation that arrives without one of them
//! was pruned on its way here: nothing of it is written (any write, status included, would
//! store it pruned for good) until it arrives whole again (docs/install.md).
//!
//! And every write of a policy carries guards ([`guards`]): its generation, and each of those
//! fields still present in what the API server holds, so a schema swapped between our read and
//! our write fails the write instead of pruning the object.

use crate::api::{gate_path, gate_pointer, set_gate_fields, ImagePolicy};
use kube::ResourceExt;
use serde_json::{json, Value};

/// The annotation: `<generation>:<field>,<field>`, e.g. `3:downgrade,filterTags.minAge`.
/// Under `.internal`, a name no one else can own (RFC 6762 keeps it for private use).
pub const GATES_ANNOTATION: &str = "image-reflector.internal/gates";

/// Longer than any value we write (every gate path, a generation): a longer one is not ours.
const MAX_VALUE_LEN: usize = 1024;

/// What the annotation says: at `generation` the spec set `fields`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    pub generation: i64,
    pub fields: Vec<&'static str>,
}

impl Marker {
    /// The marker `policy` should carry now: its generation and the fields it sets.
    pub fn of(policy: &ImagePolicy) -> Marker {
        Marker {
            generation: policy.metadata.generation.unwrap_or_default(),
            fields: set_gate_fields(&policy.spec),
        }
    }

    /// The annotation's value; `None` for an unreadable one (too long, no generation). Names
    /// we do not know are dropped: a hand-written one cannot hold a policy on a field that
    /// does not exist.
    pub fn read(policy: &ImagePolicy) -> Option<Marker> {
        let value = policy.annotations().get(GATES_ANNOTATION)?;
        if value.len() > MAX_VALUE_LEN {
            return None;
        }
        let (generation, fields) = value.split_once(':')?;
        let fields = fields.split(',').filter_map(gate_path);
        Some(Marker {
            generation: generation.parse().ok()?,
            fields: fields.collect(),
        })
    }

    fn value(&self) -> String {
        format!("{}:{}", self.generation, self.fields.join(","))
    }
}

/// The fields `policy` held at this generation, as its marker says, that it arrived without;
/// `None` when it arrived whole (or nothing is known of this generation).
pub fn hidden(policy: &ImagePolicy) -> Option<Vec<&'static str>> {
    let marked = Marker::read(policy)?;
    let now = Marker::of(policy);
    if marked.generation != now.generation {
        return None;
    }
    // A field marked is there when it, or a field under it, is set now (a marker written
    // before fields were marked at every depth names `verify` for `verify.provider`).
    let missing: Vec<_> = marked
        .fields
        .into_iter()
        .filter(|field| {
            let under = format!("{field}.");
            !now.fields
                .iter()
                .any(|f| f == field || f.starts_with(&under))
        })
        .collect();
    (!missing.is_empty()).then_some(missing)
}

/// The JSON patch (RFC 6902) that marks `policy`, when it sets fields beyond Flux's and its
/// marker does not say so yet; `None` when there is nothing to record.
pub fn marking(policy: &ImagePolicy) -> Option<Value> {
    let now = Marker::of(policy);
    if now.fields.is_empty() || Marker::read(policy).as_ref() == Some(&now) {
        return None;
    }
    let mut ops = guards(policy);
    match policy.metadata.annotations {
        Some(_) => ops.push(json!({
            "op": "add",
            "path": format!("/metadata/annotations/{}", GATES_ANNOTATION.replace('/', "~1")),
            "value": now.value(),
        })),
        // A map of ours, only where there is none: an `add` would replace one.
        None => ops.extend([
            json!({"op": "test", "path": "/metadata/annotations", "value": null}),
            json!({
                "op": "add",
                "path": "/metadata/annotations",
                "value": {GATES_ANNOTATION: now.value()},
            }),
        ]),
    }
    Some(Value::Array(ops))
}

/// The tests a write of `policy` carries: the API server applies it only to the generation
/// decided on, and only while it still holds each field beyond Flux's that this spec sets.
/// RFC 6902 has no "exists": a `copy` of a field onto itself is one (its `from` must exist)
/// and changes nothing.
pub fn guards(policy: &ImagePolicy) -> Vec<Value> {
    let generation = policy.metadata.generation.unwrap_or_default();
    let mut ops = vec![json!({"op": "test", "path": "/metadata/generation", "value": generation})];
    let spec = serde_json::to_value(&policy.spec).unwrap_or_default();
    // Each field where this spec first has it (inside lists, its first item that does).
    for field in set_gate_fields(&policy.spec) {
        if let Some(pointer) = gate_pointer(&spec, field) {
            ops.push(json!({"op": "copy", "from": pointer, "path": pointer}));
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(generation: i64, annotation: Option<&str>, spec: Value) -> ImagePolicy {
        let mut spec_json = json!({
            "imageRepositoryRef": {"name": "app"}, "policy": {"semver": {"range": "1.x"}},
        });
        spec_json
            .as_object_mut()
            .unwrap()
            .extend(spec.as_object().unwrap().clone());
        let annotations = annotation.map(|a| json!({GATES_ANNOTATION: a}));
        serde_json::from_value(json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy",
            "metadata": {"name": "app", "namespace": "team", "generation": generation,
                         "annotations": annotations},
            "spec": spec_json,
        }))
        .unwrap()
    }

    fn gated() -> Value {
        json!({"filterTags": {"minAge": "1h"}, "downgrade": "Refuse"})
    }

    #[test]
    fn a_marked_generation_arriving_without_its_fields_is_hidden() {
        let marked = "4:downgrade,filterTags.minAge";
        assert_eq!(hidden(&policy(4, Some(marked), gated())), None, "whole");
        let pruned = policy(4, Some(marked), json!({}));
        assert_eq!(
            hidden(&pruned),
            Some(vec!["downgrade", "filterTags.minAge"])
        );
        let half = policy(4, Some(marked), json!({"downgrade": "Refuse"}));
        assert_eq!(hidden(&half), Some(vec!["filterTags.minAge"]));
        // A new generation is taken as it is; an unmarked object has nothing to lose.
        assert_eq!(hidden(&policy(5, Some(marked), json!({}))), None);
        assert_eq!(hidden(&policy(4, None, json!({}))), None);
    }

    #[test]
    fn a_hand_written_marker_holds_nothing_it_cannot_name() {
        let odd = policy(4, Some("4:spec.nothing,,verify2"), json!({}));
        assert_eq!(hidden(&odd), None);
        let long = format!("4:{}", "downgrade,".repeat(110));
        assert_eq!(hidden(&policy(4, Some(&long), json!({}))), None);
        // Read up to 1,024 bytes, not one more: every gate path and a generation fit.
        let every: Vec<&str> = crate::api::gate_paths().collect();
        let every = format!("{}:{}", i64::MAX, every.join(","));
        assert!(every.len() < MAX_VALUE_LEN, "{}", every.len());
        let exact = format!("{}4:downgrade", "0".repeat(1013));
        assert_eq!(exact.len(), 1024);
        let read = hidden(&policy(4, Some(&exact), json!({})));
        assert_eq!(read, Some(vec!["downgrade"]));
        let over = format!("0{exact}");
        assert_eq!(hidden(&policy(4, Some(&over), json!({}))), None);
        assert_eq!(hidden(&policy(4, Some("four:downgrade"), json!({}))), None);
        assert_eq!(hidden(&policy(4, Some("downgrade"), json!({}))), None);
    }

    #[test]
    fn marking_records_the_generation_and_its_fields_once() {
        let fresh = policy(4, None, gated());
        let patch = marking(&fresh).expect("gated and unmarked");
        let ops = patch.as_array().unwrap();
        assert_eq!(
            ops[0],
            json!({"op": "test", "path": "/metadata/generation", "value": 4})
        );
        assert_eq!(
            ops[ops.len() - 2],
            json!({"op": "test", "path": "/metadata/annotations", "value": null}),
            "a map of ours only where there is none"
        );
        assert_eq!(
            ops.last().unwrap(),
            &json!({"op": "add", "path": "/metadata/annotations",
                    "value": {GATES_ANNOTATION: "4:downgrade,filterTags.minAge"}})
        );
        let marked = policy(4, Some("4:downgrade,filterTags.minAge"), gated());
        assert_eq!(marking(&marked), None, "already says so");
        let older = policy(5, Some("4:downgrade,filterTags.minAge"), gated());
        let ops = marking(&older).unwrap();
        let _: json_patch::Patch = serde_json::from_value(ops.clone()).expect("a JSON patch");
        assert_eq!(
            ops.as_array().unwrap().last().unwrap()["path"],
            "/metadata/annotations/image-reflector.internal~1gates"
        );
        assert_eq!(
            marking(&policy(4, None, json!({}))),
            None,
            "nothing to mark"
        );
    }

    /// Fields at every depth: a marker names the deepest set (an attestation's condition), a
    /// policy that arrives without them is hidden, and one marked before depth was (`verify`)
    /// is whole while a field under `verify` is set.
    #[test]
    fn fields_are_marked_and_missed_at_every_depth() {
        let attested = json!({"verify": {"provider": "cosign", "secretRef": {"name": "k"},
            "attestations": [{"name": "p", "predicateType": "t",
                              "conditions": [{"expression": "true"}]}]}});
        let marker = Marker::of(&policy(3, None, attested.clone()));
        assert!(marker
            .fields
            .contains(&"verify.attestations.conditions.expression"));
        let value = marker.value();
        let pruned = json!({"verify": {"provider": "cosign", "secretRef": {"name": "k"}}});
        let missing = hidden(&policy(3, Some(&value), pruned.clone())).unwrap();
        assert!(missing.contains(&"verify.attestations.name"), "{missing:?}");
        assert_eq!(hidden(&policy(3, Some(&value), attested.clone())), None);
        assert_eq!(hidden(&policy(3, Some("3:verify"), pruned)), None);
        let ops = guards(&policy(3, None, attested));
        let pointer = "/spec/verify/attestations/0/conditions/0/expression";
        assert!(
            ops.contains(&json!({"op": "copy", "from": pointer, "path": pointer})),
            "{ops:?}"
        );
    }

    #[test]
    fn every_write_is_guarded_by_generation_and_each_set_field() {
        let ops = guards(&policy(7, None, gated()));
        assert_eq!(
            ops,
            vec![
                json!({"op": "test", "path": "/metadata/generation", "value": 7}),
                json!({"op": "copy", "from": "/spec/downgrade", "path": "/spec/downgrade"}),
                json!({"op": "copy", "from": "/spec/filterTags/minAge",
                       "path": "/spec/filterTags/minAge"}),
            ]
        );
    }
}
