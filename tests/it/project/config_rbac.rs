//! The installed RBAC grants what the controller does and no more (docs/security.md): read by
//! name where only a name is read, no token minting outside the workload-identity overlay, a
//! Lease and nothing else for election. The e2e tests run the controller with exactly these
//! permissions (and e2e-cluster checks its log has no "forbidden"), so a missing verb fails
//! there; this test fails when one is added beyond need.

use crate::support::root;
use serde_json::Value;

/// (apiGroup, resource, verbs) of every rule in a kustomization directory's YAML files.
fn rules(dir: &str) -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root().join(dir)).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "yaml") || path.ends_with("kustomization.yaml") {
            continue;
        }
        out.extend(rules_of_file(&path));
    }
    out
}

/// (apiGroup, resource, verbs) of every rule in one YAML file.
fn rules_of_file(path: &std::path::Path) -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&std::fs::read_to_string(path).unwrap()).unwrap();
    for doc in docs {
        for rule in doc["rules"].as_array().into_iter().flatten() {
            let verbs: Vec<String> = rule["verbs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            for group in rule["apiGroups"].as_array().unwrap() {
                for resource in rule["resources"].as_array().unwrap() {
                    out.push((
                        group.as_str().unwrap().to_string(),
                        resource.as_str().unwrap().to_string(),
                        verbs.clone(),
                    ));
                }
            }
        }
    }
    out
}

fn verbs_of<'a>(rules: &'a [(String, String, Vec<String>)], resource: &str) -> Vec<&'a str> {
    let mut verbs: Vec<&str> = rules
        .iter()
        .filter(|(_, r, _)| r == resource)
        .flat_map(|(_, _, v)| v.iter().map(String::as_str))
        .collect();
    verbs.sort();
    verbs
}

#[test]
fn the_installed_rbac_is_least_privilege() {
    let installed = rules("config/rbac");
    assert_eq!(
        verbs_of(&installed, "serviceaccounts"),
        ["get"],
        "serviceaccounts: read by name only"
    );
    // Secrets: read by name, their metadata watched for the trusted ones' changes.
    assert_eq!(verbs_of(&installed, "secrets"), ["get", "list", "watch"]);
    // Namespace labels decide accessFrom: watched, metadata only.
    assert_eq!(verbs_of(&installed, "namespaces"), ["get", "list", "watch"]);
    assert!(
        verbs_of(&installed, "serviceaccounts/token").is_empty(),
        "config/default must not let the controller mint tokens"
    );
    assert!(
        verbs_of(&installed, "configmaps").is_empty(),
        "election uses a Lease"
    );
    assert_eq!(verbs_of(&installed, "leases"), ["create", "get", "update"]);
    // The two kinds: watched and patched (status, finalizers), never created or deleted by the
    // controller (config/rbac's editor and viewer roles are for users, not bound to it).
    let role: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(root().join("config/rbac/role.yaml")).unwrap(),
    )
    .unwrap();
    let kinds = role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resources"][0] == "imagepolicies")
        .expect("the rule for the two kinds");
    assert_eq!(
        kinds["verbs"],
        serde_json::json!(["get", "list", "watch", "patch", "update"])
    );

    let gated = rules("config/object-level-workload-identity");
    assert_eq!(verbs_of(&gated, "serviceaccounts/token"), ["create"]);
    let overlay = std::fs::read_to_string(
        root().join("config/object-level-workload-identity/kustomization.yaml"),
    )
    .unwrap();
    assert!(overlay.contains("--feature-gates=ObjectLevelWorkloadIdentity=true"));
}

/// Every rule of the roles bound to the controller, exactly: a verb or a resource added to
/// config/rbac/role.yaml or leader_election_role.yaml fails here (the e2e tests, which run the
/// controller with these roles, fail when one is missing).
#[test]
fn the_controllers_roles_grant_exactly_what_it_uses() {
    let mut bound: Vec<(String, String, Vec<String>)> = ["role.yaml", "leader_election_role.yaml"]
        .iter()
        .flat_map(|file| rules_of_file(&root().join("config/rbac").join(file)))
        .map(|(group, resource, mut verbs)| {
            verbs.sort();
            (group, resource, verbs)
        })
        .collect();
    bound.sort();
    let rule = |group: &str, resource: &str, verbs: &[&str]| {
        let mut verbs: Vec<String> = verbs.iter().map(|v| v.to_string()).collect();
        verbs.sort();
        (group.to_string(), resource.to_string(), verbs)
    };
    let image = "image.toolkit.fluxcd.io";
    let mut expected = vec![
        rule("", "events", &["create", "patch"]),
        rule("", "secrets", &["get", "list", "watch"]),
        rule("", "serviceaccounts", &["get"]),
        rule("", "namespaces", &["get", "list", "watch"]),
        rule(
            "coordination.k8s.io",
            "leases",
            &["create", "get", "update"],
        ),
    ];
    for kind in ["imagepolicies", "imagerepositories"] {
        expected.push(rule(
            image,
            kind,
            &["get", "list", "watch", "patch", "update"],
        ));
        expected.push(rule(
            image,
            &format!("{kind}/status"),
            &["get", "patch", "update"],
        ));
        expected.push(rule(image, &format!("{kind}/finalizers"), &["update"]));
    }
    expected.sort();
    assert_eq!(bound, expected);
}
