//! sigstore-go v1.3 (tests/sigtools/judge) judges the suite's 70 cases on their artifacts, as
//! the bundle verifier does ([`super::artifacts`]): its verdict must be the suite's, and ours.

use super::artifacts::ours;
use super::{Case, Verdict};
use base64::Engine;
use serde_json::json;

#[test]
#[ignore = "needs the reference verifiers' judge: make e2e-signatures"]
fn sigstore_go_gives_every_case_the_suites_verdict_and_ours() {
    let cases = Case::all();
    let lines = cases.iter().map(|case| {
        let (issuer, subject) = case.identity_expressions();
        let keys: Vec<String> =
            case.key.iter().map(|k| String::from_utf8_lossy(k).into_owned()).collect();
        let cosign = json!({
            "bundle": String::from_utf8_lossy(&case.bundle),
            "trustedRoot": String::from_utf8_lossy(&case.trusted_root),
            "keys": keys,
            "identities": if case.key.is_some() { json!([]) } else { json!([{"issuer": issuer, "subject": subject}]) },
            "requireTlog": true,
            "digest": case.digest(),
            "artifact": base64::engine::general_purpose::STANDARD.encode(&case.artifact),
        });
        json!({"id": case.name, "cosign": cosign}).to_string()
    });
    let theirs = crate::support::sigtools::judge_lines("signature-judge", lines.collect());
    assert_eq!(theirs.len(), 70, "one verdict per case");
    let mut wrong = Vec::new();
    for case in &cases {
        let (valid, reason) = &theirs[&case.name];
        let (verdict, why) = ours(case);
        if *valid != case.valid() || (verdict == Verdict::Valid) != *valid {
            wrong.push(format!(
                "{}: the suite {}, sigstore-go {valid} ({reason}), ours {verdict:?} ({why})",
                case.name,
                case.valid()
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} cases:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
