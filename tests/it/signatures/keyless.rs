//! Keyless signatures in the shape Fulcio issues them, made offline by the real cosign with a
//! certificate from a CA made in the test (`--certificate`, `--certificate-chain`), checked
//! against a `trusted_root.json` the user supplies: the identity must match, the chain lead to
//! the root, the certificate be valid, and the signature be in the transparency log unless the
//! policy accepts that it is not.

use super::scanned::Scanned;
use crate::support::fulcio::Fulcio;
use crate::support::sigtools::{referrers_registry, Cosign};
use crate::support::write;

const ISSUER: &str = "https://token.actions.githubusercontent.com";

/// A policy verifying keyless signatures of `dev@example.com` by [`ISSUER`].
fn policy(name: &str, range: &str, tlog: &str) -> String {
    format!(
        "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: {name}, namespace: team}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '{range}'}}}}\n  \
         verify:\n    provider: cosign\n    secretRef: {{name: sigstore}}\n    transparencyLog: {tlog}\n    \
         matchOIDCIdentity:\n    - {{issuer: '^https://token\\.actions\\.githubusercontent\\.com$', subject: '^dev@example\\.com$'}}\n"
    )
}

#[tokio::test]
#[ignore = "needs the signing tools: make e2e-signatures"]
async fn scan_checks_keyless_identity_chain_validity_and_log() {
    let registry = referrers_registry();
    let trusted = Fulcio::new("trusted test fulcio");
    let untrusted = Fulcio::new("another ca");
    let cosign = Cosign::v3();
    let legacy = Cosign::v2();
    let image = format!("{}/team/app", registry.host);
    let chain = cosign.file("chain.pem", &trusted.ca_pem());
    let other_chain = cosign.file("other-chain.pem", &untrusted.ca_pem());
    let digests = super::push_tags(
        &registry,
        "team/app",
        &[
            ("1.1.0", "a"),
            ("1.2.0", "b"),
            ("1.3.0", "c"),
            ("1.4.0", "d"),
            ("2.0.0", "e"),
        ],
    )
    .await;
    // Signs `tag` with a fresh key and a certificate for it: the bundle (v3) or legacy (v2).
    let sign = |tag: &str,
                ca: &Fulcio,
                email: &str,
                expired: bool,
                chain: &std::path::Path,
                bundle: bool| {
        let signer = ca.signer(ISSUER, email, expired);
        let tool = if bundle { &cosign } else { &legacy };
        let key = tool.import_key(&format!("k{tag}"), &signer.key_pem);
        let cert = tool.file(&format!("{tag}.crt"), &signer.cert_pem);
        let flags = [
            "--certificate",
            cert.to_str().unwrap(),
            "--certificate-chain",
            chain.to_str().unwrap(),
        ];
        let reference = format!("{image}@{}", digests[tag]);
        match bundle {
            true => tool.sign_bundle_with(&key, &reference, &flags),
            false => tool.sign_legacy_with(&key, &reference, &flags),
        }
    };
    sign("1.1.0", &trusted, "dev@example.com", false, &chain, true);
    sign("1.2.0", &trusted, "other@example.com", false, &chain, true);
    sign("1.3.0", &trusted, "dev@example.com", true, &chain, true);
    sign(
        "1.4.0",
        &untrusted,
        "dev@example.com",
        false,
        &other_chain,
        true,
    );
    let legacy_chain = legacy.file("chain.pem", &trusted.ca_pem());
    sign(
        "2.0.0",
        &trusted,
        "dev@example.com",
        false,
        &legacy_chain,
        false,
    );

    let dir = tempfile::tempdir().unwrap();
    let manifests = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: sigstore, namespace: team}}\nstringData:\n  trusted_root.json: '{}'\n\
         ---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
         spec: {{image: {image}, interval: 5m}}\n{}{}{}",
        trusted.trusted_root(),
        policy("keyless", ">=1.0.0 <2.0.0", "Optional"),
        policy("keyless-legacy", "~2.0", "Optional"),
        policy("logged", "~1.1", "Required"),
    );
    let file = write(dir.path(), "keyless.yaml", &manifests);
    let storage = dir.path().join("store");
    let scan = Scanned::run(&file, &storage);
    let (status, reason, stdout) = (
        |n: &str| scan.status(n),
        |n: &str, t: &str| scan.held(n, t),
        &scan.text,
    );
    let keyless = status("keyless");
    assert_eq!(keyless["latestRef"]["tag"], "1.1.0", "{stdout}");
    assert!(
        reason("keyless", "1.4.0").contains("does not chain to the trusted root"),
        "{stdout}"
    );
    assert!(
        reason("keyless", "1.3.0").contains("the signing certificate expired at"),
        "{stdout}"
    );
    let mismatch = reason("keyless", "1.2.0");
    assert!(
        mismatch.contains(&format!(
            "certificate identity mismatch: got issuer {ISSUER}, subject other@example.com"
        )),
        "{mismatch}"
    );
    assert_eq!(
        status("keyless-legacy")["latestRef"]["tag"],
        "2.0.0",
        "cosign v2's legacy layout, keyless"
    );
    assert!(status("logged")["latestRef"].is_null(), "{stdout}");
    assert!(
        reason("logged", "1.1.0").contains("not in the transparency log"),
        "{stdout}"
    );
    assert_eq!(scan.code, Some(3), "`logged` elects nothing:\n{stdout}");

    // Another identity is another trust: the verdicts kept in the store are judged again.
    let changed = manifests.replace("dev@example", "other@example");
    write(dir.path(), "keyless.yaml", &changed);
    let again = Scanned::run(&file, &storage);
    assert_eq!(again.elected("keyless"), "1.2.0", "{}", again.text);
    let held = again.held("keyless-legacy", "2.0.0");
    assert!(
        held.contains("certificate identity mismatch"),
        "a valid verdict kept for the old identity is not taken: {held}"
    );
}

/// The controller on a real API server: a keyless bundle by the trusted identity elects; one by
/// another identity is held back, and status names both identities.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the signing tools and a cluster: make e2e-signatures"]
async fn the_controller_elects_a_keyless_signature_by_the_trusted_identity() {
    let registry = referrers_registry();
    let fulcio = Fulcio::new("trusted test fulcio");
    let cosign = Cosign::v3();
    let chain = cosign.file("chain.pem", &fulcio.ca_pem());
    let image = format!("{}/signed/app", registry.host);
    let good = registry
        .push_dated("signed/app", "1.0.0", "amd64", None, "a")
        .await;
    let other = registry
        .push_dated("signed/app", "1.1.0", "amd64", None, "b")
        .await;
    for (digest, email) in [(&good, "dev@example.com"), (&other, "other@example.com")] {
        let signer = fulcio.signer(ISSUER, email, false);
        let key = cosign.import_key(&format!("k{}", &digest[7..15]), &signer.key_pem);
        let cert = cosign.file(&format!("{}.crt", &digest[7..15]), &signer.cert_pem);
        let flags = [
            "--certificate",
            cert.to_str().unwrap(),
            "--certificate-chain",
            chain.to_str().unwrap(),
        ];
        cosign.sign_bundle_with(&key, &format!("{image}@{digest}"), &flags);
    }
    let objects = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: sigstore, namespace: team}}\nstringData:\n  trusted_root.json: '{}'\n\
         ---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
         spec: {{image: {image}, interval: 5m}}\n{}",
        fulcio.trusted_root(),
        policy("keyless", ">=1.0.0", "Optional"),
    );
    let policy = super::elected_in_cluster(&objects, "keyless", "1.0.0");
    let held = &policy["status"]["heldBack"][0];
    assert_eq!(
        (held["tag"].as_str(), held["digest"].as_str()),
        (Some("1.1.0"), Some(other.as_str()))
    );
    let reason = held["reason"].as_str().unwrap();
    let want = format!(
        "certificate identity mismatch: got issuer {ISSUER}, subject other@example.com; want issuer ~ "
    );
    assert!(reason.contains(&want), "{reason}");
}
