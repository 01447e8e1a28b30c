//! Images signed by the real notation CLI (JWS, its default, and COSE), through the referrers API,
//! elected through `spec.verify.provider: notation` with a trust policy and a trust store in
//! the Secret (Flux's OCIRepository shape); an untrusted CA, an identity the policy does not
//! trust and an unsigned image are held back with their reasons.

use super::judged::{InCluster, Judged, Scanned};
use crate::support::sigtools::{referrers_registry, Notation};
use crate::support::write;
use std::collections::BTreeMap;

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

/// `scan` and the controller on a real API server, given the same objects, elect notation's JWS
/// and COSE signatures and hold back the same tags with the same reasons.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the signing tools and a cluster: make e2e-signatures"]
async fn scan_and_the_controller_elect_what_the_real_notation_signed() {
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

    // notation-go judges the envelopes the real notation made, as the library fetches them (with
    // the manifest's descriptor), as we do, under each policy's trust.
    let trust = |identities: &str| {
        format!(
            r#"{{"version": "1.0", "trustPolicies": [{{"name": "p", "registryScopes": ["*"],
            "signatureVerification": {{"level": "strict"}}, "trustStores": ["ca:p"],
            "trustedIdentities": [{identities}]}}]}}"#
        )
    };
    let store = [trusted.clone()];
    let mut cases = Vec::new();
    let signed = [
        ("1.1.0", r#""*""#),
        ("1.3.0", r#""*""#),
        (
            "2.0.0",
            r#""x509.subject: C=US, ST=WA, O=Notary, CN=test.example""#,
        ),
        (
            "1.1.0",
            r#""x509.subject: C=US, ST=WA, O=Notary, CN=someone.else""#,
        ),
    ];
    for (n, (tag, identities)) in signed.iter().enumerate() {
        let found = fetched_envelopes(&image, &digests[tag]).await;
        assert_eq!(found.len(), 1, "{tag}: one signature");
        let id = format!("notation {tag} #{n}");
        let policy = trust(identities);
        let case = (image.as_str(), digests[tag].as_str());
        cases.push(super::oracle::real_notation(
            &id, &found[0], &policy, &store, case,
        ));
    }
    let valid = super::oracle::agreeing(&cases);
    assert_eq!(valid, ["notation 1.1.0 #0", "notation 2.0.0 #2"]);

    let dir = tempfile::tempdir().unwrap();
    let manifests = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
         spec: {{image: {image}, interval: 5m}}\n{}{}{}",
        policy("notation", ">=1.0.0 <2.0.0", r#""*""#, &trusted),
        policy("cose", "~2.0", r#""x509.subject: C=US, ST=WA, O=Notary, CN=test.example""#, &trusted),
        policy("someone-else", "~1.1", r#""x509.subject: C=US, ST=WA, O=Notary, CN=someone.else""#, &trusted),
    );
    let file = write(dir.path(), "notation.yaml", &manifests);
    let scan = Scanned::run(&file, &dir.path().join("store"));
    judge(&scan, &digests);
    let want = [
        ("notation", "1.1.0"),
        ("cose", "2.0.0"),
        ("someone-else", ""),
    ];
    judge(&InCluster::run(&manifests, &want), &digests);
}

/// What `scan` and the controller must both have decided.
fn judge(run: &impl Judged, digests: &BTreeMap<&str, String>) {
    run.assert_elected("notation", "1.1.0", Some(&digests["1.1.0"]));
    let untrusted = "the signing certificate does not chain to the trust store";
    run.assert_held("notation", "1.3.0", untrusted);
    run.assert_held("notation", "1.2.0", "no signature (no notation signature");
    run.assert_elected("cose", "2.0.0", Some(&digests["2.0.0"]));
    assert!(
        run.status("someone-else")["latestRef"].is_null(),
        "{}",
        run.text()
    );
    let mismatch = "certificate identity mismatch: got x509.subject ";
    run.assert_held("someone-else", "1.1.0", mismatch);
    run.assert_held("someone-else", "1.1.0", "CN=test.example");
}

/// The notation signatures attached to `digest` of `image`, as the controller fetches them.
async fn fetched_envelopes(image: &str, digest: &str) -> Vec<image_reflector::verify::Signed> {
    use image_reflector::reference::ImageReference;
    use image_reflector::registry::{ClientOptions, Registries, RegistryClient};
    let client = RegistryClient::new(
        ClientOptions::default(),
        Registries::new(Default::default()),
    )
    .unwrap();
    let image = ImageReference::parse(image, true).unwrap();
    client.notation_signatures(&image, digest).await.unwrap()
}
