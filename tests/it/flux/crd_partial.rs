//! No schema of ours, past or partial, prunes a gate field unseen (issue 87, item 1). A policy
//! setting every field beyond Flux's, at every depth, is marked under our CRD; then the API
//! server serves, in turn, each of our past ImagePolicy CRDs (tests/data/past-crds/) and ours
//! with each field the policy sets removed: every time, the policy is held with a
//! `GatesHidden` Warning naming each field the served schema lacks, and nothing is elected
//! without it. On an API server of its own, as `crd_revert` (`make e2e-flux`).

use super::crd_revert::events_of;
use super::until;
use crate::support::cluster::{
    get_json, install_crds, install_without_crds_and_controller_kubeconfig, kubectl, ok,
    Controller, Namespace,
};
use crate::support::distribution::{Distribution, Variant};
use image_reflector::api::{set_gate_fields, ImagePolicy};
use serde_json::Value;

const PAST: [&str; 9] = [
    include_str!("../../data/past-crds/2026-11-22-0d60fa6.yaml"),
    include_str!("../../data/past-crds/2026-11-24-cd3390f.yaml"),
    include_str!("../../data/past-crds/2026-11-25-4c1c338.yaml"),
    include_str!("../../data/past-crds/2026-11-25-12c5e0d.yaml"),
    include_str!("../../data/past-crds/2026-11-25-aab5e54.yaml"),
    include_str!("../../data/past-crds/2026-12-02-203d0f8.yaml"),
    include_str!("../../data/past-crds/2026-12-02-fb0d3e6.yaml"),
    include_str!("../../data/past-crds/2026-12-02-1db8131.yaml"),
    include_str!("../../data/past-crds/2026-12-02-c61f38c.yaml"),
];

/// Every field beyond Flux's, at every depth (`newest` is the other policy's).
const GATED: &str = r#"  policy: {semver: {range: '>=1.0.0'}}
  filterTags:
    minAge: 1h
    minAgeUndated: FirstSeen
    minAgeSignedTime: Required
    minAgeByBump: {major: 72h, minor: 24h, patch: 1h}
  platforms: [linux/amd64]
  downgrade: Refuse
  verify:
    provider: cosign
    secretRef: {name: keys}
    trustedRootSecretRef: {name: root}
    transparencyLog: Optional
    imageSignature: NotRequired
    matchOIDCIdentity: [{issuer: '^https://issuer$', subject: '^me$'}]
    attestations:
      - name: provenance
        predicateType: https://slsa.dev/provenance/v1
        conditions: [{expression: 'true', message: always}]
        matchOIDCIdentity: [{issuer: '^https://issuer$', subject: '^ci$'}]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs an API server of its own: make e2e-flux"]
async fn crd_past_and_partial_schemas_hold_a_policy_naming_each_field_they_lack() {
    install_crds();
    let registry = Distribution::start(Variant::default());
    registry
        .push_dated("demo/app", "1.0.0", "amd64", None, "a")
        .await;
    let ns = Namespace(format!(
        "image-reflector-crd-partial-{}",
        std::process::id()
    ));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let policy = |name: &str, spec: &str| {
        format!(
            "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n\
             metadata: {{name: {name}, namespace: {ns}}}\nspec:\n  imageRepositoryRef: {{name: app}}\n{spec}",
            ns = ns.0
        )
    };
    let objects = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n\
         metadata: {{name: app, namespace: {ns}}}\nspec: {{image: {host}/demo/app, interval: 1h}}\n",
        ns = ns.0,
        host = registry.host,
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&objects)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_without_crds_and_controller_kubeconfig(dir.path());
    let log = dir.path().join("controller.log");
    let out: std::process::Stdio = std::fs::File::create(&log).unwrap().into();
    let flags = ["--served-schema-interval=1s"];
    let controller = Controller::start_full(&ns.0, &kubeconfig, &flags, &[], out);
    let text = || std::fs::read_to_string(&log).unwrap_or_default();
    // A policy of its own for each schema served (an object's Warnings are rate-limited as
    // Kubernetes limits them): created under our CRD, marked, then served pruned.
    let specs = [("gated", GATED), ("newest", "  policy: {newest: {}}\n")];
    let mut count = 0;
    let mut fresh = |kind: usize| {
        count += 1;
        let name = format!("{}-{count}", specs[kind].0);
        ok(kubectl(
            &["apply", "-f", "-"],
            Some(&policy(&name, specs[kind].1)),
        ));
        name
    };
    let mut leaves = Vec::new();
    for kind in 0..specs.len() {
        let name = fresh(kind);
        let fields = marked(&ns.0, &name, &text).await;
        leaves.extend(fields.into_iter().map(|f| (kind, f)));
    }
    assert!(leaves.len() >= 20, "{leaves:?}");

    // Ours, with each field a policy sets removed in turn.
    let ours = our_crd();
    for (kind, field) in &leaves {
        let name = fresh(*kind);
        marked(&ns.0, &name, &text).await;
        apply_crd(&without(&ours, field));
        held(&ns.0, &name, &[field], &text).await;
        install_crds();
    }
    // Each past CRD: held naming every field it lacks.
    for past in PAST {
        let crd: Value = serde_saphyr::from_str(past).unwrap();
        let names: Vec<String> = (0..specs.len()).map(&mut fresh).collect();
        for name in &names {
            marked(&ns.0, name, &text).await;
        }
        apply_crd(&crd);
        for (kind, name) in names.iter().enumerate() {
            let lacking: Vec<&str> = leaves
                .iter()
                .filter(|(k, field)| *k == kind && !served(&crd, field))
                .map(|(_, field)| *field)
                .collect();
            if !lacking.is_empty() {
                held(&ns.0, name, &lacking, &text).await;
            }
        }
        install_crds();
    }
    assert!(controller.stop().success(), "{}", text());
}

/// Waits until the controller marked the policy `name` with the gate fields it sets; those.
async fn marked(ns: &str, name: &str, log: &impl Fn() -> String) -> Vec<&'static str> {
    let object = get_json(ns, &format!("imagepolicy/{name}"));
    let parsed: ImagePolicy = serde_json::from_value(object).unwrap();
    let set = set_gate_fields(&parsed.spec);
    let marker = format!("1:{}", set.join(","));
    until(60, &format!("{name} marked {marker}"), log, || {
        let object = get_json(ns, &format!("imagepolicy/{name}"));
        object["metadata"]["annotations"]["image-reflector.internal/gates"] == *marker
    })
    .await;
    set
}

/// Waits for a `GatesHidden` Warning on `name` naming every one of `fields`.
async fn held(ns: &str, name: &str, fields: &[&str], log: &impl Fn() -> String) {
    let what = format!("{name} held without spec.{}", fields.join(", spec."));
    until(60, &what, log, || {
        events_of(ns, name).iter().any(|e| {
            let message = e["message"].as_str().unwrap_or_default();
            e["reason"] == "GatesHidden"
                && e["type"] == "Warning"
                && fields
                    .iter()
                    .all(|f| message.contains(&format!("spec.{f}")))
        })
    })
    .await;
}

/// Our ImagePolicy CRD, as JSON.
fn our_crd() -> Value {
    let crd = image_reflector::api::crds()
        .into_iter()
        .find(|c| c.spec.names.kind == "ImagePolicy")
        .unwrap();
    serde_json::to_value(crd).unwrap()
}

/// `crd` with the spec field `path` (dotted, through lists' items) removed from every version.
fn without(crd: &Value, path: &str) -> Value {
    let mut crd = crd.clone();
    let (parent, leaf) = path.rsplit_once('.').unwrap_or(("", path));
    for version in crd["spec"]["versions"].as_array_mut().unwrap() {
        let mut node = &mut version["schema"]["openAPIV3Schema"]["properties"]["spec"];
        for segment in parent.split('.').filter(|s| !s.is_empty()) {
            node = properties(node).get_mut(segment).unwrap();
        }
        if let Some(required) = items_or_self(node)["required"].as_array_mut() {
            required.retain(|r| r != leaf);
        }
        properties(node).remove(leaf);
    }
    crd
}

/// Whether `crd`'s v1 schema has the spec field `path`.
fn served(crd: &Value, path: &str) -> bool {
    let versions = crd["spec"]["versions"].as_array().unwrap();
    let v1 = versions.iter().find(|v| v["name"] == "v1").unwrap();
    let mut node = &v1["schema"]["openAPIV3Schema"]["properties"]["spec"];
    for segment in path.split('.') {
        let object = match node.get("items") {
            Some(items) => items,
            None => node,
        };
        match object["properties"].get(segment) {
            Some(inner) => node = inner,
            None => return false,
        }
    }
    true
}

fn items_or_self(node: &mut Value) -> &mut Value {
    match node.get("items").is_some() {
        true => &mut node["items"],
        false => node,
    }
}

fn properties(node: &mut Value) -> &mut serde_json::Map<String, Value> {
    items_or_self(node)["properties"].as_object_mut().unwrap()
}

/// Applies `crd` (server-side, as `install_crds` does) and waits until it is Established.
fn apply_crd(crd: &Value) {
    ok(kubectl(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(&serde_json::to_string(crd).unwrap()),
    ));
    let name = "crd/imagepolicies.image.toolkit.fluxcd.io";
    ok(kubectl(
        &["wait", "--for=condition=Established", "--timeout=60s", name],
        None,
    ));
}
