//! The API types, the generated CRDs and the sample manifests.

use crate::support::{root, yaml_file};
use image_reflector::api::{self, ImagePolicy, ImageRepository, ReflectionPolicy};
use serde_json::{json, Value};

fn samples() -> Vec<(String, Value)> {
    let dir = root().join("config/samples");
    let mut out: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .expect("config/samples exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n != "kustomization.yaml" && n != "namespaces.yaml")
        })
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                yaml_file(&p),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn committed_crds_match_the_generator() {
    let committed = std::fs::read_to_string(root().join("crds/crds.yaml")).expect("crds/crds.yaml");
    let generated = api::crds_yaml().expect("CRDs serialize");
    assert!(
        committed == generated,
        "crds/crds.yaml is stale: run `make crds`"
    );
    let committed = std::fs::read_to_string(root().join("config/admission/crd.yaml")).unwrap();
    let generated = api::verified_digests_yaml().expect("the CRD serializes");
    assert!(
        committed == generated,
        "config/admission/crd.yaml is stale: run `make crds`"
    );
}

#[test]
fn every_sample_parses_into_our_types_and_round_trips() {
    let all = samples();
    assert!(all.len() >= 10, "samples missing: {}", all.len());
    for (name, doc) in all {
        let (kind, version) = (
            doc["kind"].as_str().unwrap(),
            doc["apiVersion"].as_str().unwrap(),
        );
        assert!(
            version == "image.toolkit.fluxcd.io/v1" || version == "image.toolkit.fluxcd.io/v1beta2"
        );
        let back = match kind {
            "ImageRepository" => {
                let obj: ImageRepository =
                    serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
                serde_json::to_value(&obj).unwrap()
            }
            "ImagePolicy" => {
                let obj: ImagePolicy =
                    serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
                obj.spec
                    .selection_policy()
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                serde_json::to_value(&obj).unwrap()
            }
            other => panic!("{name}: unexpected kind {other}"),
        };
        assert_eq!(
            back["spec"], doc["spec"],
            "{name}: spec does not round-trip"
        );
        assert_eq!(back["metadata"]["name"], doc["metadata"]["name"], "{name}");
    }
}

#[test]
fn samples_create_every_namespace_they_use_and_the_kustomization_lists_every_file() {
    let text = std::fs::read_to_string(root().join("config/samples/namespaces.yaml")).unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
    let created: Vec<(String, Value)> = docs
        .into_iter()
        .map(|v| {
            assert_eq!(v["kind"], "Namespace");
            (v["metadata"]["name"].as_str().unwrap().to_string(), v)
        })
        .collect();
    let names: Vec<&str> = created.iter().map(|(n, _)| n.as_str()).collect();
    for (file, doc) in samples() {
        let mut used = vec![doc["metadata"]["namespace"].as_str().unwrap_or("default")];
        used.extend(doc["spec"]["imageRepositoryRef"]["namespace"].as_str());
        for ns in used {
            assert!(
                ns == "default" || names.contains(&ns),
                "{file}: namespace {ns} is not created"
            );
        }
        // A selector in `accessFrom` that a created namespace matches: the cross-namespace
        // sample is allowed on a fresh cluster.
        if let Some(selectors) = doc["spec"]["accessFrom"]["namespaceSelectors"].as_array() {
            let selects = |ns: &Value| {
                selectors.iter().any(|s| {
                    let labels = s["matchLabels"].as_object().unwrap();
                    labels
                        .iter()
                        .all(|(k, v)| ns["metadata"]["labels"][k] == *v)
                })
            };
            assert!(
                created.iter().any(|(_, ns)| selects(ns)),
                "{file}: no namespace selected"
            );
        }
    }
    let kustomization =
        std::fs::read_to_string(root().join("config/samples/kustomization.yaml")).unwrap();
    for entry in std::fs::read_dir(root().join("config/samples")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name != "kustomization.yaml" {
            assert!(
                kustomization.contains(&format!("- {name}")),
                "{name} not listed"
            );
        }
    }
}

#[test]
fn samples_cover_every_policy_and_reflection_kind() {
    let policies: Vec<ImagePolicy> = samples()
        .into_iter()
        .filter(|(_, d)| d["kind"] == "ImagePolicy")
        .map(|(_, d)| serde_json::from_value(d).unwrap())
        .collect();
    let has = |f: &dyn Fn(&ImagePolicy) -> bool| policies.iter().any(f);
    assert!(has(&|p| p.spec.policy.semver.is_some()));
    assert!(has(&|p| p.spec.policy.alphabetical.is_some()));
    assert!(has(&|p| p.spec.policy.numerical.is_some()));
    assert!(has(&|p| p
        .spec
        .filter_tags
        .as_ref()
        .is_some_and(|f| f.extract.is_some())));
    for r in [
        ReflectionPolicy::Always,
        ReflectionPolicy::IfNotPresent,
        ReflectionPolicy::Never,
    ] {
        assert!(
            has(&|p| p.spec.digest_reflection_policy == Some(r)),
            "{r:?}"
        );
    }
    assert!(
        has(&|p| p.spec.image_repository_ref.namespace.is_some()),
        "cross-namespace"
    );
    assert!(
        has(&|p| {
            let gates = p.spec.gates().unwrap();
            gates.names() == ["platforms", "minAge", "verify"]
        }),
        "every gate"
    );
}

#[test]
fn v1beta2_manifests_parse_with_the_same_schema() {
    let doc = json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1beta2",
        "kind": "ImageRepository",
        "metadata": {"name": "r", "namespace": "ns"},
        "spec": {"image": "ghcr.io/a/b", "interval": "1m", "exclusionList": ["^x$"], "insecure": true},
        "status": {"observedGeneration": -1, "lastScanResult": {"tagCount": 3, "revision": "sha256:00"}}
    });
    let repo: ImageRepository = serde_json::from_value(doc).expect("v1beta2 parses");
    assert_eq!(repo.spec.insecure, Some(true));
    assert_eq!(repo.status.unwrap().last_scan_result.unwrap().tag_count, 3);
}

#[test]
fn deprecated_status_fields_are_read() {
    let doc = json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1beta2", "kind": "ImagePolicy",
        "metadata": {"name": "p"},
        "spec": {"imageRepositoryRef": {"name": "r"}, "policy": {"semver": {"range": "1.x"}}},
        "status": {"latestImage": "ghcr.io/a/b:1.2.3", "observedPreviousImage": "ghcr.io/a/b:1.2.2"}
    });
    let p: ImagePolicy = serde_json::from_value(doc).expect("parses");
    let status = p.status.expect("status");
    assert_eq!(status.latest_image.as_deref(), Some("ghcr.io/a/b:1.2.3"));
    assert_eq!(
        status.observed_previous_image.as_deref(),
        Some("ghcr.io/a/b:1.2.2")
    );
}

fn crd_json(kind: &str) -> Value {
    let crd = api::crds()
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .expect("CRD generated");
    serde_json::to_value(crd).unwrap()
}

#[test]
fn schema_defaults_are_the_documented_ones() {
    for (kind, path, want) in [
        (
            "ImageRepository",
            "/spec/properties/exclusionList/default",
            json!(["^.*\\.sig$"]),
        ),
        (
            "ImageRepository",
            "/spec/properties/provider/default",
            json!("generic"),
        ),
        (
            "ImagePolicy",
            "/spec/properties/digestReflectionPolicy/default",
            json!("Never"),
        ),
        (
            "ImagePolicy",
            "/spec/properties/policy/properties/alphabetical/properties/order/default",
            json!("asc"),
        ),
        (
            "ImagePolicy",
            "/spec/properties/policy/properties/numerical/properties/order/default",
            json!("asc"),
        ),
        (
            "ImageRepository",
            "/status/default",
            json!({"observedGeneration": -1}),
        ),
        (
            "ImagePolicy",
            "/status/default",
            json!({"observedGeneration": -1}),
        ),
    ] {
        let crd = crd_json(kind);
        for version in 0..2 {
            let schema =
                &crd["spec"]["versions"][version]["schema"]["openAPIV3Schema"]["properties"];
            assert_eq!(schema.pointer(path), Some(&want), "{kind} {path}");
        }
    }
}

#[test]
fn versions_are_v1_stored_and_v1beta2_deprecated_with_one_schema() {
    for kind in ["ImageRepository", "ImagePolicy"] {
        let crd = crd_json(kind);
        let versions = crd["spec"]["versions"].as_array().unwrap();
        assert_eq!(versions.len(), 2);
        assert_eq!(
            (
                versions[0]["name"].as_str(),
                versions[0]["storage"].as_bool()
            ),
            (Some("v1"), Some(true))
        );
        assert_eq!(versions[1]["name"], "v1beta2");
        assert_eq!(versions[1]["served"], true);
        assert_eq!(versions[1]["storage"], false);
        assert_eq!(versions[1]["deprecated"], true);
        assert_eq!(
            versions[1]["deprecationWarning"],
            format!("v1beta2 {kind} is deprecated, upgrade to v1")
        );
        assert_eq!(versions[0]["schema"], versions[1]["schema"]);
        assert_eq!(
            versions[0]["additionalPrinterColumns"],
            versions[1]["additionalPrinterColumns"]
        );
        let text = serde_json::to_string(&crd).unwrap();
        for forbidden in [
            "anyOf",
            "oneOf",
            "allOf",
            "$ref",
            "nullable",
            "x-kubernetes-preserve-unknown-fields",
        ] {
            assert!(
                !text.contains(forbidden),
                "{kind}: {forbidden} makes the schema non-structural or unlike Flux's"
            );
        }
    }
}

#[test]
fn image_policy_crd_carries_the_cel_rules_and_printer_columns() {
    let crd = crd_json("ImagePolicy");
    let v1 = &crd["spec"]["versions"][0];
    let rules = &v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"];
    assert_eq!(
        rules,
        &json!([
            {"message": "spec.interval is only accepted when spec.digestReflectionPolicy is set to 'Always'",
             "rule": "!has(self.interval) || (has(self.digestReflectionPolicy) && self.digestReflectionPolicy == 'Always')"},
            {"message": "spec.interval must be set when spec.digestReflectionPolicy is set to 'Always'",
             "rule": "has(self.interval) || !has(self.digestReflectionPolicy) || self.digestReflectionPolicy != 'Always'"}
        ])
    );
    let columns: Vec<&str> = v1["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Image", "Tag", "Ready", "Status", "Age"]);
    assert_eq!(
        crd["spec"]["names"]["shortNames"],
        json!(["imgpol", "imagepol"])
    );
    assert_eq!(
        crd["spec"]["names"]["categories"],
        json!(["all", "fluxcd", "fluxcd-images"])
    );

    let repo = crd_json("ImageRepository");
    let columns = &repo["spec"]["versions"][0]["additionalPrinterColumns"];
    assert_eq!(
        columns[4],
        json!({"jsonPath": ".status.lastScanResult.scanTime", "name": "Last scan", "priority": 1, "type": "string"})
    );
    assert_eq!(
        repo["spec"]["names"]["shortNames"],
        json!(["imgrepo", "imagerepo"])
    );
}

#[test]
fn gate_fields_are_bounded_and_name_the_field() {
    let spec = |extra: Value| -> api::ImagePolicySpec {
        let mut spec = json!({"imageRepositoryRef": {"name": "app"},
                              "policy": {"semver": {"range": "1.x"}}});
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        serde_json::from_value(spec).unwrap()
    };
    assert!(
        !spec(json!({})).gates().unwrap().any(),
        "no gate: Flux's election"
    );
    let gates = spec(json!({"filterTags": {"minAge": "1h30m"}, "platforms": ["linux/arm64"]}))
        .gates()
        .unwrap();
    assert_eq!(
        gates.describe(),
        ["platforms linux/arm64/v8", "minAge 1h30m"]
    );
    let err = |extra: Value| spec(extra).gates().unwrap_err();
    assert!(err(json!({"filterTags": {"minAge": "a week"}}))
        .starts_with("invalid spec.filterTags.minAge"));
    assert!(err(json!({"filterTags": {"minAge": "100000h"}})).contains("longer than ten years"));
    let many: Vec<String> = (0..17).map(|i| format!("linux/arch{i}")).collect();
    assert!(err(json!({"platforms": many})).contains("lists 17 platforms; at most 16"));
    assert!(
        err(json!({"platforms": ["linux/".to_string() + &"a".repeat(100)]}))
            .contains("longer than 64 bytes")
    );
    assert!(err(json!({"verify": {"provider": "cosign"}})).contains("secretRef is required"));
    let bad_name = spec(json!({"verify": {"provider": "cosign", "secretRef": {"name": "?x=1"}}}));
    assert!(bad_name
        .check_references()
        .unwrap_err()
        .contains("spec.verify.secretRef.name"));
    let bad_root = spec(
        json!({"verify": {"provider": "cosign", "trustedRootSecretRef": {"name": "../x"},
        "matchOIDCIdentity": [{"issuer": "^i$", "subject": "^s$"}]}}),
    );
    assert!(bad_root
        .check_references()
        .unwrap_err()
        .contains("spec.verify.trustedRootSecretRef.name"));
    let crd = crd_json("ImagePolicy");
    let spec_schema =
        &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(spec_schema["properties"]["platforms"]["maxItems"], 16);
    let status_schema =
        &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"];
    assert_eq!(status_schema["properties"]["heldBack"]["maxItems"], 10);
}

#[test]
fn the_readme_shows_the_gated_sample_as_it_is() {
    let sample =
        std::fs::read_to_string(root().join("config/samples/imagepolicy_gated.yaml")).unwrap();
    let body: String = sample
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("```yaml\n{body}```")),
        "README.md's gated ImagePolicy differs from config/samples/imagepolicy_gated.yaml"
    );
    assert!(
        body.lines().count() <= 22,
        "the README's policy stays short"
    );
}
