//! `image-reflector scan`: the controller's reconcile, offline, over manifest files, against a
//! real Distribution registry (TLS + Basic auth, credentials from a Secret in the manifests).

use crate::support::distribution::{Distribution, Pki, Variant};
use crate::support::{run_bin, write};
use base64::Engine;

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test]
async fn scan_reconciles_manifests_with_their_secrets_and_prints_the_status() {
    let pki = Pki::new();
    let registry = Distribution::start(Variant {
        tls: Some(&pki),
        basic: Some(("scanner", "s3cret")),
        ..Default::default()
    });
    let tags: Vec<String> = ["1.0.0", "1.1.0", "1.1.0.sig"]
        .iter()
        .map(|t| t.to_string())
        .collect();
    let digest = registry.push_image("team/app", &tags).await;
    let host = &registry.host;
    let config =
        serde_json::json!({"auths": {host.as_str(): {"auth": b64("scanner:s3cret")}}}).to_string();
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("manifests");
    std::fs::create_dir(&manifests).unwrap();
    // A multi-document file: the repository, its credentials and its CA.
    write(
        &manifests,
        "app.yaml",
        &format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
             spec: {{image: {host}/team/app, interval: 5m, secretRef: {{name: creds}}, certSecretRef: {{name: ca}}}}\n---\n\
             apiVersion: v1\nkind: Secret\nmetadata: {{name: creds, namespace: team}}\ntype: kubernetes.io/dockerconfigjson\n\
             data: {{.dockerconfigjson: {}}}\n---\n\
             apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: latest-1x, namespace: team}}\n\
             spec: {{imageRepositoryRef: {{name: app}}, policy: {{semver: {{range: 1.x}}}}, digestReflectionPolicy: IfNotPresent}}\n---\n\
             apiVersion: v1\nkind: Secret\nmetadata: {{name: ca, namespace: team}}\nstringData:\n  ca.crt: |\n{}",
            b64(&config),
            pki.ca.lines().map(|l| format!("    {l}\n")).collect::<String>()
        ),
    );
    // A `kind: List` (what kubectl get -o yaml prints) with a repository lacking its Secret.
    write(
        &manifests,
        "list.yaml",
        &format!(
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: image.toolkit.fluxcd.io/v1\n  kind: ImageRepository\n  \
             metadata: {{name: anonymous, namespace: team}}\n  spec: {{image: {host}/team/app, interval: 5m, certSecretRef: {{name: ca}}}}\n"
        ),
    );
    let storage = dir.path().join("store");
    let storage = storage.to_str().unwrap();
    let manifests = manifests.to_str().unwrap();

    let out = run_bin(
        &[
            "scan",
            "-f",
            manifests,
            "--storage-path",
            storage,
            "-o",
            "yaml",
        ],
        None,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "one repository failed: {stderr}"
    );
    assert!(
        stderr.contains("not ready: ImageRepository team/anonymous"),
        "{stderr}"
    );
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&stdout).unwrap();
    let by_name = |name: &str| {
        docs.iter()
            .find(|d| d["metadata"]["name"] == name)
            .unwrap()
            .clone()
    };
    let app = by_name("app");
    assert_eq!(app["kind"], "ImageRepository");
    assert_eq!(app["status"]["lastScanResult"]["tagCount"], 2);
    assert_eq!(
        app["status"]["lastScanResult"]["latestTags"],
        serde_json::json!(["1.1.0", "1.0.0"])
    );
    assert_eq!(
        app["status"]["canonicalImageName"],
        format!("{host}/team/app")
    );
    let ready = &app["status"]["conditions"][0];
    assert_eq!(
        (ready["type"].as_str(), ready["status"].as_str()),
        (Some("Ready"), Some("True"))
    );
    let policy = by_name("latest-1x");
    assert_eq!(policy["kind"], "ImagePolicy");
    assert_eq!(
        policy["status"]["latestRef"],
        serde_json::json!({"name": format!("{host}/team/app"), "tag": "1.1.0", "digest": digest})
    );
    let anonymous = by_name("anonymous");
    let ready = ready_of(&anonymous);
    assert_eq!(ready["reason"], "ReadOperationFailed");
    let message = ready["message"].as_str().unwrap();
    assert!(
        message.contains("401 Unauthorized") && message.contains("wants credentials"),
        "{message}"
    );
    assert!(
        !stdout.contains("s3cret") && !stdout.contains(&b64("scanner:s3cret")),
        "no secret in the output"
    );

    // The tags are in the store, in Flux's layout.
    let stored =
        std::fs::read_to_string(format!("{storage}/imagerepository/team/app/tags.txt")).unwrap();
    assert_eq!(stored, "1.1.0\n1.0.0\n");

    // The table, for one file.
    let out = run_bin(
        &[
            "scan",
            "-f",
            &format!("{manifests}/app.yaml"),
            "--storage-path",
            storage,
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAMESPACE", "NAME", "IMAGE", "TAGS", "READY", "STATUS"]
    );
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        &row[..6],
        [
            "team",
            "app",
            &format!("{host}/team/app"),
            "2",
            "True",
            "successful"
        ]
    );
}

#[test]
fn scan_stalls_invalid_repositories_without_a_registry_and_rejects_empty_input() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad.yaml",
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {name: bad}\n\
         spec: {image: 'ghcr.io/org/app:1.0', interval: 5m}\n",
    );
    let storage = dir.path().join("store");
    let out = run_bin(
        &[
            "scan",
            "-f",
            &bad,
            "--storage-path",
            storage.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("default") && table.contains("False"),
        "{table}"
    );
    assert!(
        table.contains("image 'ghcr.io/org/app:1.0' should not include a tag; remove ':1.0'"),
        "{table}"
    );

    let empty = write(
        dir.path(),
        "empty.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    );
    let out = run_bin(
        &[
            "scan",
            "-f",
            &empty,
            "--storage-path",
            storage.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no ImageRepository or ImagePolicy in"));
}

/// A manifest a reader gets wrong is named: a missing required field names the object, and a
/// misspelt field (`semvar:`) is warned about, as kubectl warns that the API server prunes it.
#[test]
fn scan_names_the_object_of_a_missing_field_and_warns_of_unknown_ones() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().join("store");
    let store = storage.to_str().unwrap();
    let missing = write(
        dir.path(),
        "missing.yaml",
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n\
         metadata: {name: app, namespace: team}\nspec: {image: ghcr.io/org/app}\n",
    );
    let out = run_bin(&["scan", "-f", &missing, "--storage-path", store], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("missing.yaml: ImageRepository team/app: missing field `interval`"),
        "{err}"
    );
    let typo = write(
        dir.path(),
        "typo.yaml",
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n\
         metadata: {name: app, namespace: team}\nspec: {image: 'ghcr.io/org/app:1', interval: 5m}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: p, namespace: team}\n\
         spec: {imageRepositoryRef: {name: app}, policy: {semvar: {range: 1.x}}}\n",
    );
    let out = run_bin(&["scan", "-f", &typo, "--storage-path", store], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("typo.yaml: ImagePolicy team/p: unknown field spec.policy.semvar (ignored)"),
        "{err}"
    );
}

/// A file of 10,000 objects is read (the YAML parser's default budget stopped at 1,024
/// documents) and every one is reconciled: here ImageRepositories whose image names a tag,
/// each Stalled without a registry call.
#[test]
fn scan_reads_a_file_of_ten_thousand_objects() {
    let dir = tempfile::tempdir().unwrap();
    let manifests: String = (0..10_000)
        .map(|i| {
            format!(
                "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n\
                 metadata: {{name: app-{i}, namespace: bulk}}\nspec: {{image: 'ghcr.io/org/app:{i}', interval: 5m}}\n"
            )
        })
        .collect();
    let file = write(dir.path(), "many.yaml", &manifests);
    let storage = dir.path().join("store");
    let out = run_bin(
        &[
            "scan",
            "-f",
            &file,
            "--storage-path",
            storage.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    let rows = table
        .lines()
        .filter(|l| l.contains("should not include a tag"))
        .count();
    assert_eq!(rows, 10_000);
    assert!(table.contains("app-9999"));
}

/// `scan -f file -o yaml` with its store at `storage`, which must succeed: the documents.
fn scanned(file: &str, storage: &std::path::Path) -> Vec<serde_json::Value> {
    let storage = storage.to_str().unwrap();
    let out = run_bin(
        &["scan", "-f", file, "--storage-path", storage, "-o", "yaml"],
        None,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    serde_saphyr::from_multiple(&String::from_utf8_lossy(&out.stdout)).unwrap()
}

/// The document named `name`.
fn by_name(docs: &[serde_json::Value], name: &str) -> serde_json::Value {
    let found = docs.iter().find(|d| d["metadata"]["name"] == name);
    found.unwrap_or_else(|| panic!("no {name}")).clone()
}

/// The Ready condition of an object's status.
fn ready_of(object: &serde_json::Value) -> serde_json::Value {
    let conditions = object["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ready = conditions.into_iter().find(|c| c["type"] == "Ready");
    ready.expect("a Ready condition")
}

/// `scan` says of a policy that can never move what the controller says (`^latest$` with no
/// digest followed), against a real registry.
#[tokio::test]
async fn scan_says_when_a_policy_can_never_move() {
    let registry = Distribution::start(Variant::default());
    let tags: Vec<String> = ["latest", "1.0.0"].iter().map(|t| t.to_string()).collect();
    registry.push_image("team/app", &tags).await;
    let host = &registry.host;
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "frozen.yaml",
        &format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
             spec: {{image: {host}/team/app, interval: 5m}}\n---\n\
             apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: floating, namespace: team}}\n\
             spec: {{imageRepositoryRef: {{name: app}}, policy: {{alphabetical: {{}}}}, filterTags: {{pattern: '^latest$'}}}}\n"
        ),
    );
    let docs = scanned(&file, &dir.path().join("store"));
    let policy = by_name(&docs, "floating");
    assert_eq!(policy["status"]["latestRef"]["tag"], "latest");
    let ready = ready_of(&policy);
    assert_eq!(ready["status"], "True");
    let message = ready["message"].as_str().unwrap();
    assert!(
        message.ends_with("; the election can never change: spec.filterTags.pattern admits only the tag 'latest', and its digest is not followed; to follow what 'latest' points at, set digestReflectionPolicy: Always (with an interval), or use a pattern that admits versions"),
        "{message}"
    );
}

/// The referrers tag schema (`sha256-<hex>`, cosign's signature index on a registry without
/// the referrers API, and its `.att` kin) is excluded with Flux's default list: an
/// `alphabetical` policy would elect it. A list of one's own keeps it.
#[tokio::test]
async fn scan_never_elects_a_referrers_tag_with_the_default_exclusions() {
    let registry = Distribution::start(Variant::default());
    let hex = "b".repeat(64);
    let tags: Vec<String> = [
        "1.0.0".to_string(),
        format!("sha256-{hex}"),
        format!("sha256-{hex}.att"),
    ]
    .to_vec();
    registry.push_image("team/app", &tags).await;
    let host = &registry.host;
    let dir = tempfile::tempdir().unwrap();
    let manifests = |exclusions: &str| {
        format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
             spec: {{image: {host}/team/app, interval: 5m{exclusions}}}\n---\n\
             apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: abc, namespace: team}}\n\
             spec: {{imageRepositoryRef: {{name: app}}, policy: {{alphabetical: {{}}}}}}\n"
        )
    };
    let scan = |name: &str, exclusions: &str| {
        let file = write(dir.path(), name, &manifests(exclusions));
        let docs = scanned(&file, &dir.path().join(name).with_extension("store"));
        let elected = by_name(&docs, "abc")["status"]["latestRef"]["tag"].clone();
        (by_name(&docs, "app")["status"].clone(), elected)
    };
    for (name, exclusions) in [
        ("absent.yaml", ""),
        ("fluxs.yaml", ", exclusionList: ['^.*\\.sig$']"),
    ] {
        let (repository, elected) = scan(name, exclusions);
        assert_eq!(
            repository["lastScanResult"]["tagCount"], 1,
            "{name}: {repository}"
        );
        assert_eq!(
            repository["observedExclusionList"],
            serde_json::json!(["^.*\\.sig$"]),
            "{name}"
        );
        assert_eq!(elected, "1.0.0", "{name}");
    }
    let (repository, elected) = scan("own.yaml", ", exclusionList: ['^v']");
    assert_eq!(repository["lastScanResult"]["tagCount"], 3, "{repository}");
    assert_eq!(elected, format!("sha256-{hex}.att"));
}
