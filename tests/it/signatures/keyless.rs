//! Keyless signatures in the shape Fulcio issues them, made offline by the real cosign with a
//! certificate from a CA made in the test (`--certificate`, `--certificate-chain`), checked
//! against a `trusted_root.json` the user supplies: the identity must match, the chain lead to
//! the root, the certificate be valid, and the signature be in the transparency log unless the
//! policy accepts that it is not.

use super::judged::{InCluster, Judged, Scanned};
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

/// `scan` and the controller on a real API server, given the same objects, judge the same way;
/// the scan then shows that a changed identity re-judges the verdicts it keeps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the signing tools and a cluster: make e2e-signatures"]
async fn scan_and_the_controller_check_keyless_identity_chain_validity_and_log() {
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
        // A v0.3 bundle carries the leaf alone: cosign v3 (and sigstore-go) refuse one with a
        // chain unless verified with --allow-certificate-chain, so only the legacy layout, whose
        // annotation keeps a chain, is signed with one.
        let mut flags = vec!["--certificate", cert.to_str().unwrap()];
        if !bundle {
            flags.extend(["--certificate-chain", chain.to_str().unwrap()]);
        }
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
    assert_eq!(
        scan.code,
        Some(3),
        "`logged` elects nothing:\n{}",
        scan.text()
    );
    judge(&scan);
    let want = [
        ("keyless", "1.1.0"),
        ("keyless-legacy", "2.0.0"),
        ("logged", ""),
    ];
    judge(&InCluster::run(&manifests, &want));

    // Another identity is another trust: the verdicts kept in the store are judged again.
    let changed = manifests.replace("dev@example", "other@example");
    write(dir.path(), "keyless.yaml", &changed);
    let again = Scanned::run(&file, &storage);
    assert_eq!(again.elected("keyless"), "1.2.0", "{}", again.text());
    let held = again.held("keyless-legacy", "2.0.0");
    assert!(
        held.contains("certificate identity mismatch"),
        "a valid verdict kept for the old identity is not taken: {held}"
    );
}

/// What `scan` and the controller must both have decided.
fn judge(run: &impl Judged) {
    run.assert_elected("keyless", "1.1.0", None);
    run.assert_held("keyless", "1.4.0", "does not chain to the trusted root");
    run.assert_held("keyless", "1.3.0", "the signing certificate expired at");
    let mismatch = format!(
        "certificate identity mismatch: got issuer {ISSUER}, subject other@example.com; want issuer ~ "
    );
    run.assert_held("keyless", "1.2.0", &mismatch);
    run.assert_elected("keyless-legacy", "2.0.0", None);
    assert!(
        run.status("logged")["latestRef"].is_null(),
        "{}",
        run.text()
    );
    run.assert_held("logged", "1.1.0", "not in the transparency log");
}
