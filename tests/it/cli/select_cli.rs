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
    // The field and the fix, after Flux's words.
    assert!(
        err.contains("to follow the tag 'latest', use spec.policy.alphabetical with spec.filterTags.pattern '^latest$'"),
        "{err}"
    );

    let bad_regex = format!("{SEMVER_V1}  filterTags: {{pattern: '(x'}}\n");
    let (code, _, err) = select(&bad_regex, "1.0.0\n", &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("failed to filter tags: invalid regular expression pattern '(x'"),
        "{err}"
    );
    assert!(
        err.contains("spec.filterTags.pattern is a Go (RE2) regular expression"),
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
        err.contains(
            "given ImagePolicyChoice object is invalid\n\
             spec.policy sets none of semver, alphabetical or numerical; set one"
        ),
        "{err}"
    );

    // Flux's vague constraint error keeps its words and says which comparator, and why.
    let vague = SEMVER_V1.replace(">=1.0.0 <2.0.0", ">=1.0.0 <2x");
    let (code, _, err) = select(&vague, "1.0.0\n", &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains(
            "invalid policy: constraint parser error\n\"<2x\": major, minor and patch are \
             each a number, or x, X or * for any"
        ),
        "{err}"
    );

    // A pattern Go refuses, though the regex crate would take it.
    let nested = format!("{SEMVER_V1}  filterTags: {{pattern: '^v?(\\d+)++$'}}\n");
    let (code, _, err) = select(&nested, "1.0.0\n", &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains(
            "invalid regular expression pattern '^v?(\\d+)++$': error parsing regexp: \
             invalid nested repetition operator: `++`"
        ),
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
        "elected: v1.2.0 (value 1.2.0)\ntags read: 6\ndropped by filterTags: 0\nskipped as not a version: 2 (latest, 1.5)\n\
         outside the semver range: 1 (2.0.0)\ncollided (a byte-smaller tag extracted the same value): 0\n\
         candidates: 3\nrunner-up 1: 1.1.0\nrunner-up 2: 1.0.0\n"
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

#[test]
fn identical_extracted_values_keep_the_tag_flux_keeps() {
    // Flux's filter is a map from value to tag, filled in the store's descending byte order:
    // the last assignment, the byte-smallest tag, stays.
    let manifest = format!(
        "{SEMVER_V1}  filterTags: {{pattern: '^(\\d+\\.\\d+\\.\\d+)(-.*)?$', extract: '$1'}}\n"
    );
    let tags = "1.4.1-alpine\n1.4.1\n1.4.1-slim\n1.3.0\n";
    for order in [
        tags.to_string(),
        tags.lines().rev().collect::<Vec<_>>().join("\n"),
    ] {
        let (code, out, _) = select(&manifest, &order, &[]);
        assert_eq!((code, out.as_str()), (0, "1.4.1\n"));
    }
    let (code, out, _) = select(&manifest, tags, &["--explain"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("elected: 1.4.1\n"), "{out}");
    assert!(
        out.contains("collided (a byte-smaller tag extracted the same value): 2\n"),
        "{out}"
    );
    assert!(out.contains("candidates: 2\n"), "{out}");

    // Templates that expand to one string for every tag make every tag collide: a missing
    // group, a missing name, a constant. The byte-smallest tag is elected.
    for extract in ["$2", "${10}", "$v", "x"] {
        let alphabetical = format!(
            "{}  filterTags: {{pattern: '^(\\d+)\\.', extract: '{extract}'}}\n",
            SEMVER_V1.replace("semver: {range: \">=1.0.0 <2.0.0\"}", "alphabetical: {}")
        );
        let (code, out, _) = select(&alphabetical, "3.0\n1.0\n2.0\n", &["--explain"]);
        assert_eq!(code, 0, "{extract}");
        assert!(out.starts_with("elected: 1.0"), "{extract}: {out}");
        assert!(
            out.contains("collided (a byte-smaller tag extracted the same value): 2\n"),
            "{extract}: {out}"
        );
        assert!(
            !out.contains("version"),
            "alphabetical shows no semver lines: {out}"
        );
    }
}

#[test]
fn explain_shows_only_the_lines_of_the_policy_kind() {
    let numerical = SEMVER_V1.replace(
        "semver: {range: \">=1.0.0 <2.0.0\"}",
        "numerical: {order: asc}",
    );
    let (code, out, _) = select(&numerical, "3\n10\nlatest\n", &["--explain"]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "elected: 10\ntags read: 3\nskipped as not a number: 1 (latest)\ncandidates: 2\nrunner-up 1: 3\n"
    );
}

#[test]
fn multi_document_files_and_lists_name_the_policy_used() {
    let other = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n";
    let (code, out, err) = select(&format!("{other}---{SEMVER_V1}"), "1.2.0\n", &[]);
    assert_eq!((code, out.as_str()), (0, "1.2.0\n"), "{err}");
    assert!(
        err.contains("using ImagePolicy default/p (document 2 of "),
        "{err}"
    );

    // What `kubectl get imagepolicies -o yaml` prints.
    let indented: String = SEMVER_V1
        .trim()
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                format!("- {l}\n")
            } else {
                format!("  {l}\n")
            }
        })
        .collect();
    let list = format!("apiVersion: v1\nkind: List\nitems:\n{indented}");
    let (code, out, err) = select(&list, "1.2.0\n", &[]);
    assert_eq!((code, out.as_str()), (0, "1.2.0\n"), "{err}");

    let two = format!(
        "{SEMVER_V1}---{}",
        SEMVER_V1.replace("name: p,", "name: q,")
    );
    let (code, _, err) = select(&two, "1.2.0\n", &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("holds 2 ImagePolicies (default/p (document 1), default/q (document 2))"),
        "{err}"
    );
}

/// What docs/scan.md shows: `--tags-file` pointed at the store's compressed file of a large
/// list (written by the store, as `scan` and the controller write it), and at a corrupt one.
#[test]
fn reads_the_stores_compressed_file_as_it_is() {
    use image_reflector::store::{FsStore, RepoKey, TagList, TagStore};
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::open(dir.path(), 64 * 1024).unwrap();
    let key = RepoKey::new("demo", "app").unwrap();
    let tags = TagList::new((0..20_000).map(|j| format!("1.{}.{}", j / 100, j % 100))).unwrap();
    store.set(&key, &tags).unwrap();
    let file = dir.path().join("imagerepository/demo/app/tags.fc.gz");
    let m = write(dir.path(), "policy.yaml", SEMVER_V1);
    let out = run_bin(
        &["select", "-f", &m, "--tags-file", file.to_str().unwrap()],
        None,
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1.199.99\n");
    std::fs::write(&file, b"not gzip").unwrap();
    let out = run_bin(
        &["select", "-f", &m, "--tags-file", file.to_str().unwrap()],
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("tags.fc.gz") && err.contains("gzip"), "{err}");
}

/// `downgrade: Refuse` with the status the controller wrote (`kubectl get -o yaml`): select
/// prints the tag the controller keeps, and says why, whatever generation elected it.
#[test]
fn select_holds_where_the_downgrade_guard_holds() {
    let manifest = |generation: u32| {
        format!(
            r#"
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {{name: p, namespace: default, generation: {generation}}}
spec:
  imageRepositoryRef: {{name: repo}}
  policy: {{semver: {{range: ">=1.0.0"}}}}
  downgrade: Refuse
status:
  observedGeneration: 2
  latestRef: {{name: reg.example/app, tag: 1.5.0}}
"#
        )
    };
    let (code, out, err) = select(&manifest(2), "1.3.0\n1.4.0\n", &[]);
    assert_eq!((code, out.as_str()), (0, "1.5.0\n"), "{err}");
    assert!(
        err.contains("held at 1.5.0 (status.latestRef): 1.4.0 ranks below it"),
        "{err}"
    );
    let (_, out, _) = select(&manifest(2), "1.3.0\n1.4.0\n", &["--explain"]);
    assert!(out.starts_with("elected: 1.4.0\n"), "{out}");
    assert!(
        out.contains("downgrade refused); the controller keeps 1.5.0"),
        "{out}"
    );
    let (_, out, _) = select(&manifest(2), "1.4.0\n", &["-o", "json"]);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["downgradeRefused"]["heldAt"], "1.5.0");
    let (code, out, _) = select(&manifest(2), "1.4.0\n1.6.0\n", &[]);
    assert_eq!(
        (code, out.as_str()),
        (0, "1.6.0\n"),
        "a higher tag is elected"
    );
    let (code, out, _) = select(&manifest(3), "1.3.0\n1.4.0\n", &[]);
    assert_eq!(
        (code, out.as_str()),
        (0, "1.5.0\n"),
        "a new generation does not lift it"
    );
}

/// `select` says of a policy that can never move what the controller says, in each output.
#[test]
fn a_policy_that_can_never_move_is_said_so_in_every_output() {
    let frozen = r#"
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: p}
spec:
  imageRepositoryRef: {name: repo}
  policy: {alphabetical: {}}
  filterTags: {pattern: '^latest$'}
"#;
    let note =
        "the election can never change: spec.filterTags.pattern admits only the tag 'latest'";
    let (code, out, err) = select(frozen, "latest\n1.0.0\n", &[]);
    assert_eq!((code, out.as_str()), (0, "latest\n"));
    assert!(err.starts_with(&format!("note: {note}")), "{err}");
    let (_, out, _) = select(frozen, "latest\n", &["--explain"]);
    assert!(out.contains(&format!("\nnote: {note}")), "{out}");
    let (_, out, _) = select(frozen, "latest\n", &["-o", "json"]);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        json["cannotMove"].as_str().unwrap().starts_with(note),
        "{json}"
    );
    // Followed by digest: it can move.
    let followed = frozen.replace(
        "filterTags: {pattern: '^latest$'}",
        "filterTags: {pattern: '^latest$'}\n  digestReflectionPolicy: Always\n  interval: 5m",
    );
    let (_, _, err) = select(&followed, "latest\n", &[]);
    assert!(!err.contains("can never change"), "{err}");
}
