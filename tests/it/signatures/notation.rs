//! Images signed by the real notation CLI (JWS, its default, and COSE), through the referrers API,
//! elected through `spec.verify.provider: notation` with a trust policy and a trust store in
//! the Secret (Flux's OCIRepository shape); an untrusted CA, an identity the policy does not
//! trust and an unsigned image are held back with their reasons.

use super::scanned::Scanned;
use crate::support::sigtools::{referrers_registry, Notation};
use crate::support::write;

/// A policy over `range` whose trust policy trusts `identities`, with `ca` in the trust store.
fn policy(name: &str, range: &str, identities: &str, ca: &str) -> String {
    let trust = format!(
        r#"{{"version": "1.0", "trustPolicies": [{{"name": "{name}", "registryScopes": ["*"],
            "signatureVerification": {{"level": "strict"}}, "trustStores": ["ca:{name}"],
            "trustedIdentities": [{identities}]}}]}}"#
    );
    let indent = |text: &str| -> String { text.lines().map(|l| format!("    {l}\n")).collect() };
    format!(
        "---\napiVersion: v1\nkind: Secret\nmetadata: {{name: {name}, namespace: team}}\nstringData:\n  trustpolicy.json: |\n{}  ca.crt: |\n{}\
         ---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: {name}, namespace: team}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '{range}'}}}}\n  \
         digestReflectionPolicy: IfNotPresent\n  verify: {{provider: notation, secretRef: {{name: {name}}}}}\n",
        indent(&trust),
        indent(ca)
    )
}

#[tokio::test]
#[ignore = "needs the signing tools: make e2e-signatures"]
async fn scan_elects_what_the_real_notation_signed() {
    let registry = referrers_registry();
    let notation = Notation::new();
    let trusted = notation.test_key("test.example");
    notation.test_key("untrusted.example");
    let image = format!("{}/team/app", registry.host);
    let digests = super::push_tags(
        &registry,
        "team/app",
        &[
            ("1.1.0", "a"),
            ("1.2.0", "b"),
            ("1.3.0", "c"),
            ("2.0.0", "d"),
        ],
    )
    .await;
    notation.sign(
        "test.example",
        &format!("{image}@{}", digests["1.1.0"]),
        "jws",
    );
    notation.sign(
        "untrusted.example",
        &format!("{image}@{}", digests["1.3.0"]),
        "jws",
    );
    notation.sign(
        "test.example",
        &format!("{image}@{}", digests["2.0.0"]),
        "cose",
    );

    let dir = tempfile::tempdir().unwrap();
    let manifests = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
         spec: {{image: {image}, interval: 5m}}\n{}{}{}",
        policy("notation", ">=1.0.0 <2.0.0", r#""*""#, &trusted),
        policy("cose", "~2.0", r#""x509.subject: O=Notary, CN=test.example""#, &trusted),
        policy("someone-else", "~1.1", r#""x509.subject: C=US, O=Notary, CN=someone.else""#, &trusted),
    );
    let file = write(dir.path(), "notation.yaml", &manifests);
    let scan = Scanned::run(&file, &dir.path().join("store"));
    let (status, reason, stdout) = (
        |n: &str| scan.status(n),
        |n: &str, t: &str| scan.held(n, t),
        &scan.text,
    );
    let elected = status("notation");
    assert_eq!(elected["latestRef"]["tag"], "1.1.0", "{stdout}");
    assert_eq!(elected["latestRef"]["digest"], digests["1.1.0"].as_str());
    assert!(
        reason("notation", "1.3.0").contains("does not chain to the trust store"),
        "{stdout}"
    );
    assert!(
        reason("notation", "1.2.0").contains("no signature (no notation signature"),
        "{stdout}"
    );
    assert!(status("someone-else")["latestRef"].is_null(), "{stdout}");
    assert_eq!(
        status("cose")["latestRef"]["tag"],
        "2.0.0",
        "a COSE envelope: {}",
        status("cose")
    );
    let mismatch = reason("someone-else", "1.1.0");
    assert!(
        mismatch.contains("certificate identity mismatch: got x509.subject "),
        "{mismatch}"
    );
    assert!(mismatch.contains("CN=test.example"), "{mismatch}");
}

/// The controller on a real API server: notation's signature elects through the Secret's trust
/// policy and store, and one by a CA the store does not hold is held back, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the signing tools and a cluster: make e2e-signatures"]
async fn the_controller_elects_a_notation_signature_and_holds_back_an_untrusted_one() {
    let registry = referrers_registry();
    let notation = Notation::new();
    let trusted = notation.test_key("test.example");
    notation.test_key("untrusted.example");
    let good = registry
        .push_dated("signed/app", "1.0.0", "amd64", None, "a")
        .await;
    let bad = registry
        .push_dated("signed/app", "1.1.0", "amd64", None, "b")
        .await;
    let image = format!("{}/signed/app", registry.host);
    notation.sign("test.example", &format!("{image}@{good}"), "jws");
    notation.sign("untrusted.example", &format!("{image}@{bad}"), "jws");
    let objects = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
         spec: {{image: {image}, interval: 5m}}\n{}",
        policy("signed", ">=1.0.0", r#""*""#, &trusted)
    );
    let policy = super::elected_in_cluster(&objects, "signed", "1.0.0");
    assert_eq!(policy["status"]["latestRef"]["digest"], good.as_str());
    let held = &policy["status"]["heldBack"][0];
    assert_eq!(
        (held["tag"].as_str(), held["digest"].as_str()),
        (Some("1.1.0"), Some(bad.as_str()))
    );
    assert!(
        held["reason"]
            .as_str()
            .unwrap()
            .contains("the signing certificate does not chain to the trust store"),
        "{held}"
    );
}
