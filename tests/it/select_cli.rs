//! `image-reflector select` through the binary: outputs, exit codes, explain.

use crate::support::{run_bin, write};

const SEMVER_V1: &str = r#"
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: p, namespace: default}
spec:
  imageRepositoryRef: {name: repo}
  policy: {semver: {range: ">=1.0.0 <2.0.0"}}
"#;

fn select(manifest: &str, tags: &str, extra: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "policy.yaml", manifest);
    let mut args = vec!["select", "-f", m.as_str(), "--tags-file", "-"];
    args.extend_from_slice(extra);
    let out = run_bin(&args, Some(tags));
    (
        out.status.code().expect("exit code"),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn prints_the_elected_tag_and_exits_0() {
    let (code, out, _) = select(SEMVER_V1, "1.0.0\n\nv1.9.0\n2.0.0\nlatest\n", &[]);
    assert_eq!((code, out.as_str()), (0, "v1.9.0\n"));
}

#[test]
fn reads_v1beta2_and_json_manifests() {
    let json = r#"{"apiVersion":"image.toolkit.fluxcd.io/v1beta2","kind":"ImagePolicy","metadata":{"name":"p"},
        "spec":{"imageRepositoryRef":{"name":"r"},"policy":{"alphabetical":{"order":"desc"}}}}"#;
    let (code, out, _) = select(json, "b\na\nc\n", &[]);
    assert_eq!((code, out.as_str()), (0, "a\n"));
}

#[test]
fn exits_1_with_the_flux_message_when_nothing_is_elected() {
    let (code, out, err) = select(SEMVER_V1, "3.0.0\nlatest\n", &[]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(
        err.contains("unable to determine latest version from provided list"),
        "{err}"
    );
    let (code, _, err) = select(SEMVER_V1, "", &[]);
    assert_eq!(code, 1);
    assert!(
        err.contains("version list argument cannot be empty"),
        "{err}"
    );
}

#[test]
fn exits_2_on_an_invalid_range_regex_or_manifest() {
    let bad_range = SEMVER_V1.replace(">=1.0.0 <2.0.0", "latest");
    let (code, _, err) = select(&bad_range, "1.0.0\n", &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains(r#"invalid policy: improper constraint: "latest""#),
        "{err}"
    );

    let bad_regex = format!("{SEMVER_V1}  filterTags: {{pattern: '(x'}}\n");
    let (code, _, err) = select(&bad_regex, "1.0.0\n", &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("failed to filter tags: invalid regular expression pattern '(x'"),
        "{err}"
    );

    let (code, _, err) = select("kind: ConfigMap\napiVersion: v1\n", "1.0.0\n", &[]);
    assert_eq!(code, 2);
    assert!(err.contains("expected kind ImagePolicy"), "{err}");

    let no_policy = SEMVER_V1.replace(
        "policy: {semver: {range: \">=1.0.0 <2.0.0\"}}",
        "policy: {}",
    );
    let (code, _, err) = select(&no_policy, "1.0.0\n", &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("given ImagePolicyChoice object is invalid"),
        "{err}"
    );
}

#[test]
fn explain_counts_every_tag_and_lists_runners_up() {
    let manifest =
        format!("{SEMVER_V1}  filterTags: {{pattern: '^v?(?P<v>.*)$', extract: '$v'}}\n");
    let tags = "1.0.0\nv1.2.0\n1.1.0\n2.0.0\nlatest\n1.5\n";
    let (code, out, _) = select(&manifest, tags, &["--explain", "--runners-up", "2"]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "elected: v1.2.0 (value 1.2.0)\ntags read: 6\ndropped by filterTags: 0\nskipped as unparsable: 2\n\
         outside the semver range: 1\ncandidates: 3\nrunner-up 1: 1.1.0\nrunner-up 2: 1.0.0\n"
    );

    let (code, out, _) = select(&manifest, tags, &["-o", "json"]);
    assert_eq!(code, 0);
    let x: serde_json::Value = serde_json::from_str(&out).expect("JSON output");
    assert_eq!(
        x["elected"],
        serde_json::json!({"tag": "v1.2.0", "value": "1.2.0"})
    );
    assert_eq!(
        (
            x["read"].as_u64(),
            x["unparsable"].as_u64(),
            x["candidates"].as_u64()
        ),
        (Some(6), Some(2), Some(3))
    );
    assert_eq!(x["runnersUp"].as_array().unwrap().len(), 2);
}

#[test]
fn explain_reports_why_nothing_was_elected() {
    let (code, out, err) = select(SEMVER_V1, "9.0.0\n", &["-o", "json"]);
    assert_eq!(code, 1);
    let x: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(x["elected"], serde_json::Value::Null);
    assert_eq!(
        x["error"],
        "unable to determine latest version from provided list"
    );
    assert!(err.contains("unable to determine"));
}
