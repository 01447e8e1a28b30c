//! Keyless signatures as cosign v3 makes them against a Sigstore instance with Rekor v2: the
//! real cosign signs through a real Rekor v2 log and a real timestamp authority
//! ([`SigstoreStack`], built from their Go modules), with certificates in Fulcio's shape from a
//! CA made in the test; `scan` and the controller on a real API server elect what the trusted
//! root and the identity vouch for, and sigstore-go judges the same bundles the same way.

use super::judged::{InCluster, Judged, Scanned};
use crate::support::fulcio::Fulcio;
use crate::support::oidc::OidcIssuer;
use crate::support::sigstack::SigstoreStack;
use crate::support::sigtools::{referrers_registry, Cosign};
use crate::support::write;
use std::path::Path;

const ISSUER: &str = "https://token.actions.githubusercontent.com";
const ISSUER_RE: &str = "^https://token\\.actions\\.githubusercontent\\.com$";

/// A policy of `range` verifying keyless signatures of `subject` (an anchored expression) with
/// the trusted root of the Secret `secret`, the log required.
fn policy(name: &str, range: &str, secret: &str, subject: &str) -> String {
    format!(
        "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: {name}, namespace: team}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '{range}'}}}}\n  \
         verify:\n    provider: cosign\n    secretRef: {{name: {secret}}}\n    \
         matchOIDCIdentity:\n    - {{issuer: '{ISSUER_RE}', subject: '{subject}'}}\n"
    )
}

/// The same policy, its trusted root named by source-controller's `trustedRootSecretRef`
/// alone (no `secretRef`).
fn rooted_policy(name: &str, range: &str, secret: &str, subject: &str) -> String {
    policy(name, range, secret, subject).replace("secretRef:", "trustedRootSecretRef:")
}

fn secret(name: &str, root: &serde_json::Value) -> String {
    format!(
        "---\napiVersion: v1\nkind: Secret\nmetadata: {{name: {name}, namespace: team}}\n\
         stringData:\n  trusted_root.json: '{root}'\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the signing tools, Sigstore's services and a cluster: make e2e-signatures"]
async fn signatures_logged_in_rekor_v2_and_timestamped_are_elected_under_their_identity() {
    let stack = SigstoreStack::start();
    let registry = referrers_registry();
    let fulcio = Fulcio::new("trusted test fulcio");
    let cosign = Cosign::v3();
    let config = cosign.file("rekor-v2.json", &stack.signing_config());
    let image = format!("{}/team/app", registry.host);
    let tags = [("1.1.0", "a"), ("1.2.0", "b"), ("1.3.0", "c")];
    let digests = super::push_tags(&registry, "team/app", &tags).await;
    // Signs `tag` through the log and the authority with a fresh key and a certificate for
    // `email` (one that expired in 2021 when `expired`).
    let sign = |tag: &str, email: &str, expired: bool| {
        let signer = fulcio.signer(ISSUER, email, expired);
        let key = cosign.import_key(&format!("k{tag}"), &signer.key_pem);
        let cert = cosign.file(&format!("{tag}.crt"), &signer.cert_pem);
        let reference = format!("{image}@{}", digests[tag]);
        let (key, cert) = (key.private.to_str().unwrap(), cert.to_str().unwrap());
        let config = config.to_str().unwrap();
        cosign.run(&[
            "sign",
            "--key",
            key,
            "--certificate",
            cert,
            "--signing-config",
            config,
            "--yes",
            &reference,
        ]);
    };
    sign("1.1.0", "dev@example.com", false);
    sign("1.2.0", "ops@example.com", false);
    sign("1.3.0", "dev@example.com", true);

    let mut root: serde_json::Value = serde_json::from_str(&fulcio.trusted_root()).unwrap();
    root["tlogs"] = serde_json::json!([stack.tlog()]);
    root["timestampAuthorities"] = serde_json::json!([stack.timestamp_authority()]);
    let mut untimed = root.clone();
    untimed["timestampAuthorities"] = serde_json::json!([]);
    let manifests = format!(
        "{}{}---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
         spec: {{image: {image}, interval: 5m}}\n{}{}{}{}",
        secret("sigstore", &root),
        secret("untimed", &untimed),
        policy("dev", ">=1.0.0", "sigstore", "^dev@example\\.com$"),
        policy("ops", ">=1.0.0", "sigstore", "^ops@example\\.com$"),
        policy("untimed", ">=1.0.0", "untimed", "^dev@example\\.com$"),
        rooted_policy("rooted", ">=1.0.0", "sigstore", "^dev@example\\.com$"),
    );
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "rekor-v2.yaml", &manifests);
    let scan = Scanned::run(&file, &dir.path().join("store"));
    assert_eq!(
        scan.code,
        Some(3),
        "`untimed` elects nothing:\n{}",
        scan.text()
    );
    judge(&scan);
    let want = [
        ("dev", "1.1.0"),
        ("ops", "1.2.0"),
        ("untimed", ""),
        ("rooted", "1.1.0"),
    ];
    judge(&InCluster::run(&manifests, &want));

    // sigstore-go judges the same bundles, as the library fetched them, as we do.
    let root = root.to_string();
    let dev = [(ISSUER_RE.to_string(), "^dev@example\\.com$".to_string())];
    let mut cases = Vec::new();
    for (tag, _) in tags {
        let bundles = super::cosign::fetched_bundles(&image, &digests[tag]).await;
        assert_eq!(bundles.len(), 1, "{tag}: one bundle");
        let signed = (image.as_str(), digests[tag].as_str());
        let id = format!("rekor-v2-{tag}");
        cases.push(super::oracle::real_keyless(
            &id,
            &bundles[0],
            &root,
            &dev,
            signed,
        ));
    }
    assert_eq!(super::oracle::agreeing(&cases), ["rekor-v2-1.1.0"]);
}

/// What `scan` and the controller must both have decided.
fn judge(run: &impl Judged) {
    run.assert_elected("dev", "1.1.0", None);
    let mismatch =
        format!("certificate identity mismatch: got issuer {ISSUER}, subject ops@example.com");
    run.assert_held("dev", "1.2.0", &mismatch);
    // Timestamped now, with a certificate that expired in 2021.
    run.assert_held("dev", "1.3.0", "at its timestamp's time");
    run.assert_held("dev", "1.3.0", "the signing certificate expired at");
    run.assert_elected("ops", "1.2.0", None);
    // trustedRootSecretRef alone: the same root, the same verdicts.
    run.assert_elected("rooted", "1.1.0", None);
    run.assert_held("rooted", "1.2.0", &mismatch);
    assert!(
        run.status("untimed")["latestRef"].is_null(),
        "{}",
        run.text()
    );
    run.assert_held(
        "untimed",
        "1.1.0",
        "no integrated time, and no timestamp verifies with a timestamp authority of trusted_root.json",
    );
}

/// Signs `reference` keyless as a user does: an ID token of `issuer` for `email` (in a file:
/// cosign stats the value first, and a token is longer than a file name may be), a certificate
/// from the stack's Fulcio, through what `config` names.
fn sign_keyless(cosign: &Cosign, issuer: &OidcIssuer, config: &Path, reference: &str, email: &str) {
    let token = cosign.file(&format!("{email}.jwt"), &issuer.token(email));
    let (token, config) = (token.to_str().unwrap(), config.to_str().unwrap());
    cosign.run(&[
        "sign",
        "--identity-token",
        token,
        "--signing-config",
        config,
        "--yes",
        reference,
    ]);
}

/// A trusted root of the stack's Fulcio and Rekor v1, or Rekor v2 and its timestamp authority.
fn stack_root(stack: &SigstoreStack, rekor_v1: bool) -> serde_json::Value {
    let (tlog, authorities) = match rekor_v1 {
        true => (stack.tlog_v1(), serde_json::json!([])),
        false => (
            stack.tlog(),
            serde_json::json!([stack.timestamp_authority()]),
        ),
    };
    serde_json::json!({
        "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
        "certificateAuthorities": [stack.certificate_authority()],
        "tlogs": [tlog], "ctlogs": [], "timestampAuthorities": authorities})
}

/// Keyless as cosign v3 signs it against a whole Sigstore instance: an ID token of an OIDC
/// issuer (the tests' own), a certificate from the real Fulcio, the entry in the real Rekor v2,
/// the real timestamp authority's timestamp; no certificate or key made by the test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the signing tools, Sigstore's services and a cluster: make e2e-signatures"]
async fn keyless_through_fulcio_rekor_v2_and_a_timestamp_authority() {
    keyless_through_fulcio(false).await;
}

/// Keyless as the public-good instance signed before Rekor v2: a certificate from the real
/// Fulcio, the entry in the real Rekor v1 (its promise, integrated time and inclusion proof), no
/// timestamp authority; elected under its identity, held back under another, judged so by
/// sigstore-go too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the signing tools, Sigstore's services and a cluster: make e2e-signatures"]
async fn keyless_through_fulcio_and_rekor_v1() {
    keyless_through_fulcio(true).await;
}

/// Two images signed keyless through the stack (Rekor v1, or Rekor v2 with a timestamp), one by
/// `dev`, one by `ops`: each policy elects its own and holds back the other's, in `scan` and in
/// the controller, and sigstore-go judges both bundles as we do.
async fn keyless_through_fulcio(rekor_v1: bool) {
    let issuer = OidcIssuer::start();
    let mut stack = SigstoreStack::start().with_fulcio(&issuer.url);
    let (config, log, version) = match rekor_v1 {
        true => {
            stack = stack.with_rekor_v1();
            (stack.signing_config_v1(), "rekor-v1", "0.0.1")
        }
        false => (stack.signing_config(), "rekor-v2", "0.0.2"),
    };
    let registry = referrers_registry();
    let cosign = Cosign::v3();
    let config = cosign.file("sigstore.json", &config);
    let image = format!("{}/team/app", registry.host);
    let tags = [("1.1.0", "a"), ("1.2.0", "b")];
    let digests = super::push_tags(&registry, "team/app", &tags).await;
    for (tag, email) in [("1.1.0", "dev@example.com"), ("1.2.0", "ops@example.com")] {
        let reference = format!("{image}@{}", digests[tag]);
        sign_keyless(&cosign, &issuer, &config, &reference, email);
    }
    let issuer_re = format!("^{}$", regex_escape(&issuer.url));
    let root = stack_root(&stack, rekor_v1);
    let policy = |name: &str, subject: &str| {
        policy(name, ">=1.0.0", "sigstore", subject).replace(ISSUER_RE, &issuer_re)
    };
    let manifests = format!(
        "{}---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
         spec: {{image: {image}, interval: 5m}}\n{}{}",
        secret("sigstore", &root),
        policy("dev", "^dev@example\\.com$"),
        policy("ops", "^ops@example\\.com$"),
    );
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "keyless.yaml", &manifests);
    let scan = Scanned::run(&file, &dir.path().join("store"));
    assert_eq!(scan.code, Some(0), "{}", scan.text());
    let want = [("dev", "1.1.0"), ("ops", "1.2.0")];
    let cluster = InCluster::run(&manifests, &want);
    for run in [&scan as &dyn Judged, &cluster] {
        for (name, tag) in want {
            assert_eq!(run.elected(name), tag, "{}", run.text());
        }
        run.assert_held("dev", "1.2.0", "certificate identity mismatch");
    }

    // sigstore-go finds the same, of entries of the log they were made in.
    let root = root.to_string();
    let dev = [(issuer_re.clone(), "^dev@example\\.com$".to_string())];
    let mut cases = Vec::new();
    for (tag, _) in tags {
        let bundles = super::cosign::fetched_bundles(&image, &digests[tag]).await;
        let entry = &serde_json::from_slice::<serde_json::Value>(&bundles[0]).unwrap()
            ["verificationMaterial"]["tlogEntries"][0];
        assert_eq!(entry["kindVersion"]["version"], version, "{entry}");
        let signed = (image.as_str(), digests[tag].as_str());
        let id = format!("{log}-{tag}");
        cases.push(super::oracle::real_keyless(
            &id,
            &bundles[0],
            &root,
            &dev,
            signed,
        ));
    }
    assert_eq!(super::oracle::agreeing(&cases), [format!("{log}-1.1.0")]);
}

/// `text` with the characters a regular expression reads escaped.
fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c {
            '.' | '/' | ':' => vec!['\\', c],
            c => vec![c],
        })
        .collect()
}

/// Keyless with no Secret: the policy names no `secretRef`, and the root comes from a TUF
/// mirror (go-tuf's repository on loopback, `--sigstore-tuf-mirror`, trusted through
/// `--sigstore-tuf-root`) whose target is the trusted root of the stack that signed. Without a
/// mirror, the embedded public-good root is used, which trusts nothing of this stack: nothing is
/// elected, and the conditions say which root was used and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the signing tools, Sigstore's services and a cluster: make e2e-signatures"]
async fn keyless_with_no_secret_reads_the_trusted_root_through_tuf() {
    let issuer = OidcIssuer::start();
    let stack = SigstoreStack::start().with_fulcio(&issuer.url);
    let registry = referrers_registry();
    let cosign = Cosign::v3();
    let config = cosign.file("sigstore.json", &stack.signing_config());
    let image = format!("{}/team/app", registry.host);
    let digests = super::push_tags(&registry, "team/app", &[("1.1.0", "a")]).await;
    let reference = format!("{image}@{}", digests["1.1.0"]);
    sign_keyless(&cosign, &issuer, &config, &reference, "dev@example.com");
    let root = stack_root(&stack, false);
    let repo = tempfile::tempdir().unwrap();
    let mirror = super::public_good::Mirror::serving(repo.path(), root.to_string().as_bytes(), &[]);
    let anchor = repo.path().join("anchor.json");
    let flags = [
        "--sigstore-tuf-mirror",
        &mirror.url,
        "--sigstore-tuf-root",
        anchor.to_str().unwrap(),
    ];
    let issuer_re = format!("^{}$", regex_escape(&issuer.url));
    let manifests = format!(
        "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
         spec: {{image: {image}, interval: 5m}}\n\
         ---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: dev, namespace: team}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n  \
         verify:\n    provider: cosign\n    \
         matchOIDCIdentity:\n    - {{issuer: '{issuer_re}', subject: '^dev@example\\.com$'}}\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "public-good.yaml", &manifests);
    let scan = Scanned::run_with(&file, &dir.path().join("store"), &flags);
    assert_eq!(scan.elected("dev"), "1.1.0", "{}", scan.text());
    // The root was read and kept in the store.
    let kept = std::fs::read(dir.path().join("store/sigstore/trusted_root.json")).unwrap();
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&kept).unwrap(),
        root
    );
    let cluster = InCluster::run_with(&manifests, &[("dev", "1.1.0")], &flags);
    assert_eq!(cluster.elected("dev"), "1.1.0");

    // No mirror, no kept root: the embedded public-good root, which the stack is not.
    let offline = Scanned::run_with(
        &file,
        &dir.path().join("offline"),
        &["--sigstore-tuf-mirror", ""],
    );
    assert_eq!(offline.elected("dev"), "", "{}", offline.text());
    let ready = offline.status("dev")["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        ready.ends_with("keyless signatures are checked with Sigstore's public-good trusted root: no TUF mirror is set (--sigstore-tuf-mirror); the root embedded in the binary is in use"),
        "{ready}"
    );
    offline.assert_held("dev", "1.1.0", "its log is not one of the trusted root's");

    // The mirror then serves what TUF refuses (a freeze: its timestamp expired): nothing it
    // served is trusted, the root kept in the store included, and the policy waits, saying
    // which mirror refused what.
    mirror.remake(repo.path(), &["expired-timestamp"]);
    let refused = Scanned::run_with(&file, &dir.path().join("store"), &flags);
    assert_eq!(refused.elected("dev"), "", "{}", refused.text());
    let ready = refused.status("dev")["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()
        .clone();
    assert_eq!(ready["reason"], "GateCheckFailed", "{ready}");
    let message = ready["message"].as_str().unwrap();
    let expected = format!(
        "keyless signatures cannot be checked with Sigstore's public-good trusted root: the TUF \
         mirror {}/ served what TUF refuses (",
        mirror.url
    );
    assert!(message.starts_with(&expected), "{message}");
    assert!(!dir.path().join("store/sigstore/trusted_root.json").exists());
}

/// The signing time as `minAge`'s third clock (issue 74): an image dated 2020, signed now
/// through Rekor v2 and the timestamp authority. With a fresh store (a lost one: the first scan
/// counts every tag as seen long ago), the creation time and the first sighting pass `minAge:
/// 1h`; the time the authority vouches for holds it, in `scan` and in the controller. Without
/// `spec.verify` the same tag is elected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the signing tools, Sigstore's services and a cluster: make e2e-signatures"]
async fn a_fresh_signature_holds_min_age_after_a_store_loss() {
    let stack = SigstoreStack::start();
    let registry = referrers_registry();
    let fulcio = Fulcio::new("trusted test fulcio");
    let cosign = Cosign::v3();
    let config = cosign.file("rekor-v2.json", &stack.signing_config());
    let digest = registry
        .push_dated(
            "team/app",
            "1.0.0",
            "amd64",
            Some("2020-01-01T00:00:00Z"),
            "old",
        )
        .await;
    let image = format!("{}/team/app", registry.host);
    let signer = fulcio.signer(ISSUER, "dev@example.com", false);
    let key = cosign.import_key("k", &signer.key_pem);
    let cert = cosign.file("dev.crt", &signer.cert_pem);
    let reference = format!("{image}@{digest}");
    cosign.run(&[
        "sign",
        "--key",
        key.private.to_str().unwrap(),
        "--certificate",
        cert.to_str().unwrap(),
        "--signing-config",
        config.to_str().unwrap(),
        "--yes",
        &reference,
    ]);
    let mut root: serde_json::Value = serde_json::from_str(&fulcio.trusted_root()).unwrap();
    root["tlogs"] = serde_json::json!([stack.tlog()]);
    root["timestampAuthorities"] = serde_json::json!([stack.timestamp_authority()]);
    let aged = policy("aged", ">=1.0.0", "sigstore", "^dev@example\\.com$")
        .replace("  verify:", "  filterTags: {minAge: 1h}\n  verify:");
    let unverified = "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: unverified, namespace: team}\n\
         spec:\n  imageRepositoryRef: {name: app}\n  policy: {semver: {range: '>=1.0.0'}}\n  filterTags: {minAge: 1h}\n";
    let manifests = format!(
        "{}---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
         spec: {{image: {image}, interval: 5m}}\n{aged}{unverified}",
        secret("sigstore", &root),
    );
    assert!(aged.contains("minAge: 1h"), "{aged}");
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "aged.yaml", &manifests);
    let judge_aged = |run: &dyn Fn(&str) -> (String, String)| {
        let (elected, held) = run("aged");
        assert_eq!(elected, "", "held by the signing time");
        assert!(
            held.starts_with("until ")
                && held.contains(": minAge 1h after it was signed (")
                && held.ends_with(", as its transparency log or timestamp authority says)"),
            "{held}"
        );
        assert_eq!(run("unverified").0, "1.0.0");
    };
    let scan = Scanned::run(&file, &dir.path().join("store"));
    judge_aged(&|name| (scan.elected(name), held_or_empty(&scan, name)));
    let cluster = InCluster::run(&manifests, &[("aged", ""), ("unverified", "1.0.0")]);
    judge_aged(&|name| (cluster.elected(name), held_or_empty(&cluster, name)));
}

/// Why `name` held 1.0.0 back, or nothing.
fn held_or_empty(run: &impl Judged, name: &str) -> String {
    run.status(name)["heldBack"]
        .as_array()
        .and_then(|h| h.first())
        .and_then(|h| h["reason"].as_str())
        .unwrap_or_default()
        .to_string()
}
