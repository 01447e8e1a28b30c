//! `image-reflector conditions` through the binary (issue 90, item 3): a policy's attestation
//! conditions on GitHub's provenance as sigstore-conformance's bundle holds it, read from the
//! bundle, its statement or its predicate alone; exit 0 when every condition is true, 1 when
//! one is not (saying which and why), 2 for what cannot be judged.

use crate::support::{run_bin, write};

const BUNDLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/sigstore-conformance/bundle-verify/happy-path-intoto-in-dsse-v3/bundle.sigstore.json"
);
const SOURCE: &str = "https://github.com/loosebazooka/aa-test";

fn policy(dir: &std::path::Path, conditions: &str) -> String {
    let text = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: p}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n  \
         verify:\n    provider: cosign\n    secretRef: {{name: keys}}\n    attestations:\n    \
         - name: provenance\n      predicateType: https://slsa.dev/provenance/v1\n      \
         conditions:\n{conditions}"
    );
    write(dir, "policy.yaml", &text)
}

fn conditions(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["conditions"];
    all.extend(args);
    let out = run_bin(&all, None);
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
    (
        out.status.code().unwrap(),
        text(&out.stdout),
        text(&out.stderr),
    )
}

#[test]
fn conditions_are_judged_on_a_bundle_a_statement_or_a_predicate() {
    let dir = tempfile::tempdir().unwrap();
    let right = format!(
        "      - expression: \"predicate.buildDefinition.externalParameters.workflow.repository == '{SOURCE}'\"\n      \
         - expression: \"predicate.buildDefinition.externalParameters.workflow.ref.startsWith('refs/heads/')\"\n"
    );
    let file = policy(dir.path(), &right);
    let (code, out, _) = conditions(&["-f", &file, "--statement", BUNDLE]);
    assert_eq!(
        (code, out.as_str()),
        (
            0,
            "provenance.conditions[0]: true\nprovenance.conditions[1]: true\n"
        )
    );
    // The statement itself, and its predicate alone, are judged the same.
    let bundle: serde_json::Value =
        serde_json::from_slice(&std::fs::read(BUNDLE).unwrap()).unwrap();
    use base64::Engine;
    let payload = bundle["dsseEnvelope"]["payload"].as_str().unwrap();
    let statement = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .unwrap();
    let statement: serde_json::Value = serde_json::from_slice(&statement).unwrap();
    let as_statement = write(dir.path(), "statement.json", &statement.to_string());
    let as_predicate = write(
        dir.path(),
        "predicate.json",
        &statement["predicate"].to_string(),
    );
    for input in [
        ["--statement", &as_statement],
        ["--predicate", &as_predicate],
    ] {
        let (code, again, err) = conditions(&["-f", &file, input[0], input[1]]);
        assert_eq!(
            (code, again.as_str()),
            (0, out.as_str()),
            "{input:?}: {err}"
        );
    }
}

#[test]
fn a_condition_not_true_says_why_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let typo = "      - expression: \"predicate.buildDefinition.externalParameter.workflow.ref == 'x'\"\n        \
                message: built from main\n      \
                - expression: \"predicate.buildDefinition.buildType == 'x'\"\n";
    let file = policy(dir.path(), typo);
    let (code, out, _) = conditions(&["-f", &file, "--statement", BUNDLE]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out,
        "provenance.conditions[0]: built from main (failed: reads \
         predicate.buildDefinition.externalParameter, which this attestation does not have (no \
         such key))\nprovenance.conditions[1]: condition 'predicate.buildDefinition.buildType == \
         'x'' is false\n"
    );
    let (code, json, _) = conditions(&["-f", &file, "--statement", BUNDLE, "-o", "json"]);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (code, &json[1]["holds"], &json[1]["condition"]),
        (1, &false.into(), &1.into())
    );
}

#[test]
fn what_cannot_be_judged_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let broken = policy(dir.path(), "      - expression: \"predicate.a === 'x'\"\n");
    let (code, _, err) = conditions(&["-f", &broken, "--statement", BUNDLE]);
    assert_eq!(code, 2);
    assert!(
        err.contains("does not parse: unexpected character '=' at column 15\n  predicate.a === 'x'\n                ^"),
        "{err}"
    );
    let fine = policy(dir.path(), "      - expression: \"true\"\n");
    let not_json = write(dir.path(), "x.json", "{");
    let (code, _, err) = conditions(&["-f", &fine, "--statement", &not_json]);
    assert!(code == 2 && err.contains("not JSON"), "{err}");
    let other = write(
        dir.path(),
        "s.json",
        r#"{"predicateType": "https://spdx.dev/Document", "predicate": {}}"#,
    );
    let (code, _, err) = conditions(&["-f", &fine, "--statement", &other]);
    assert_eq!(code, 2);
    assert!(err.contains("no spec.verify.attestations entry is of the statement's type 'https://spdx.dev/Document' (the policy lists: provenance)"), "{err}");
    let (code, _, err) = conditions(&["-f", &fine, "--statement", BUNDLE, "--attestation", "scan"]);
    assert!(code == 2 && err.contains("is named 'scan'"), "{err}");
}
