//! Trust policies notation-go refuses are refused here, with what to fix; the levels and
//! overrides decide what is enforced.

use super::*;

fn policy(statements: serde_json::Value) -> Result<Vec<Statement>, String> {
    let document = serde_json::json!({"version": "1.0", "trustPolicies": statements});
    parse_policy(document.to_string().as_bytes())
}

fn statement(name: &str, scopes: &[&str], identity: &str) -> serde_json::Value {
    serde_json::json!({"name": name, "registryScopes": scopes,
        "signatureVerification": {"level": "strict"}, "trustStores": ["ca:x"],
        "trustedIdentities": [identity]})
}

/// What notation-go refuses, refused here too.
#[test]
fn trust_policies_are_validated_as_notation_go_validates_them() {
    let ok = "x509.subject: C=US, ST=WA, O=Example";
    assert!(policy(serde_json::json!([statement("a", &["*"], ok)])).is_ok());
    let err = policy(serde_json::json!([statement(
        "a",
        &["*"],
        "x509.subject: O=Example, CN=x"
    )]))
    .unwrap_err();
    assert!(
        err.contains("lacks the mandatory attributes C, ST"),
        "{err}"
    );
    let err = policy(serde_json::json!([statement(
        "a",
        &["*", "r.example/app"],
        ok
    )]))
    .unwrap_err();
    assert!(err.contains("mixes '*' with other scopes"), "{err}");
    let err = policy(serde_json::json!([
        statement("a", &["r.example/app"], ok),
        statement("b", &["r.example/app"], ok)
    ]))
    .unwrap_err();
    assert!(err.contains("'r.example/app' is in more than one"), "{err}");
    let err = policy(serde_json::json!([
        statement("a", &["*"], ok),
        statement("b", &["*"], ok)
    ]))
    .unwrap_err();
    assert!(err.contains("'*' is in more than one"), "{err}");
    let err = policy(serde_json::json!([statement("a", &[], ok)])).unwrap_err();
    assert!(err.contains("has no registryScopes"), "{err}");
}

/// notation-go's `validatePolicyCore` and document rules, each refused here too.
#[test]
fn statements_are_validated_as_notation_go_validates_them() {
    let ok = "x509.subject: C=US, ST=WA, O=Example";
    let refused = |document: serde_json::Value, why: &str| {
        let err = parse_policy(document.to_string().as_bytes()).unwrap_err();
        assert!(err.contains(why), "{err}, not {why}");
    };
    let one = |statement: serde_json::Value| serde_json::json!({"version": "1.0", "trustPolicies": [statement]});
    let base = statement("a", &["*"], ok);
    refused(
        serde_json::json!({"trustPolicies": [base.clone()]}),
        "has no version",
    );
    refused(
        serde_json::json!({"version": "2.0", "trustPolicies": [base.clone()]}),
        "the version '2.0'",
    );
    refused(
        serde_json::json!({"version": "1.0", "trustPolicies": [base.clone(), statement("a", &["r.example/x"], ok)]}),
        "two trust policy statements are named 'a'",
    );
    let with = |change: &dyn Fn(&mut serde_json::Value)| {
        let mut s = base.clone();
        change(&mut s);
        one(s)
    };
    refused(with(&|s| s["name"] = "".into()), "has no name");
    refused(
        with(&|s| s["trustStores"] = serde_json::json!([])),
        "both trustStores and trustedIdentities",
    );
    refused(
        with(&|s| s["trustedIdentities"] = serde_json::json!([])),
        "both trustStores and trustedIdentities",
    );
    refused(
        with(&|s| s["signatureVerification"]["level"] = "skip".into()),
        "level skip takes no",
    );
    refused(
        with(&|s| s["trustStores"] = serde_json::json!(["x509:a"])),
        "is not <ca|signingAuthority|tsa>",
    );
    refused(
        with(&|s| s["trustStores"] = serde_json::json!(["ca:a/b"])),
        "is not <ca|signingAuthority|tsa>",
    );
    refused(
        with(&|s| s["trustedIdentities"] = serde_json::json!(["*", ok])),
        "'*' cannot be listed with others",
    );
    refused(
        with(&|s| {
            s["trustedIdentities"] =
                serde_json::json!([ok, "x509.subject: C=US, ST=WA, O=Example, CN=x"])
        }),
        "overlap",
    );
    refused(
        with(&|s| s["signatureVerification"]["verifyTimestamp"] = "never".into()),
        "verifyTimestamp 'never'",
    );
    let overriding =
        |o: serde_json::Value| with(&move |s| s["signatureVerification"]["override"] = o.clone());
    refused(
        overriding(serde_json::json!({"integrity": "log"})),
        "integrity cannot be overridden",
    );
    refused(
        overriding(serde_json::json!({"expiry": "skip"})),
        "expiry cannot be skipped",
    );
    refused(
        overriding(serde_json::json!({"expiry": "maybe"})),
        "is not enforce, log or skip",
    );
    refused(
        overriding(serde_json::json!({"provenance": "log"})),
        "unknown check 'provenance'",
    );
    let parsed = |o: serde_json::Value| {
        parse_policy(overriding(o).to_string().as_bytes()).unwrap()[0].enforced
    };
    assert_eq!(
        parsed(serde_json::json!({"expiry": "log", "revocation": "skip"})),
        Enforced {
            authenticity: true,
            authentic_timestamp: true,
            expiry: false
        }
    );
    assert_eq!(
        parsed(serde_json::json!({"authenticity": "log", "authenticTimestamp": "log"})),
        Enforced {
            authenticity: false,
            authentic_timestamp: false,
            expiry: true
        }
    );
    let mut skip = serde_json::json!({"name": "s", "registryScopes": ["*"], "signatureVerification": {"level": "skip"}});
    assert_eq!(
        parse_policy(one(skip.clone()).to_string().as_bytes()).unwrap()[0].level,
        Level::Skip
    );
    skip["signatureVerification"]["override"] = serde_json::json!({"expiry": "log"});
    refused(one(skip), "level skip takes no override");
    let levels = ["strict", "permissive", "audit"].map(|l| {
        parse_policy(
            with(&|s| s["signatureVerification"]["level"] = l.into())
                .to_string()
                .as_bytes(),
        )
        .unwrap()[0]
            .enforced
    });
    let e = |a, t, x| Enforced {
        authenticity: a,
        authentic_timestamp: t,
        expiry: x,
    };
    assert_eq!(
        levels,
        [
            e(true, true, true),
            e(true, false, false),
            e(false, false, false)
        ]
    );
}

/// The edges: 32 statements are read; a skip statement with identities alone is refused; two
/// scopes without '*' are fine.
#[test]
fn policies_hold_at_their_edges() {
    let ok = "x509.subject: C=US, ST=WA, O=Example";
    let many: Vec<serde_json::Value> = (0..MAX_POLICIES)
        .map(|i| statement(&format!("s{i}"), &[&format!("r.example/app{i}")], ok))
        .collect();
    assert_eq!(policy(serde_json::json!(many)).unwrap().len(), 32);
    let skip = serde_json::json!([{"name": "s", "registryScopes": ["*"],
        "signatureVerification": {"level": "skip"}, "trustedIdentities": ["*"]}]);
    assert!(policy(skip).unwrap_err().contains("level skip takes no"));
    let two = statement("a", &["r.example/a", "r.example/b"], ok);
    assert_eq!(policy(serde_json::json!([two])).unwrap()[0].scopes.len(), 2);
}
