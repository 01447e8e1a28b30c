//! `spec.verify.attestations` on attestations the real cosign v3 made (`cosign attest`: SLSA
//! provenance v1 and a vulnerability scan, kept as referrers beside the signatures): `scan` and
//! the controller on a real API server elect the signed tag whose provenance names the source
//! and whose scan is clean and fresh, and hold back the others naming the entry and the
//! condition; `cosign verify-attestation --type` judges "signed and of that type" as we do.

use super::judged::{InCluster, Judged, Scanned};
use crate::support::sigtools::{referrers_registry, Cosign, CosignKey};
use crate::support::write;
use std::collections::BTreeMap;

const SLSA: &str = "https://slsa.dev/provenance/v1";
const VULN: &str = "https://cosign.sigstore.dev/attestation/vuln/v1";

/// A SLSA provenance v1 predicate as GitHub's builder writes one, from `repository`.
fn provenance(repository: &str) -> String {
    serde_json::json!({
        "buildDefinition": {
            "buildType": "https://actions.github.io/buildtypes/workflow/v1",
            "externalParameters": {"workflow": {
                "repository": repository, "ref": "refs/tags/v1.1.0",
                "path": ".github/workflows/release.yml"}},
            "internalParameters": {}, "resolvedDependencies": []},
        "runDetails": {"builder": {"id": "https://github.com/actions/runner/github-hosted"},
                       "metadata": {}}})
    .to_string()
}

/// A cosign vuln predicate (Trivy's report in `scanner.result`), finished now, with one
/// finding of `severity`.
fn scan(severity: &str) -> String {
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    serde_json::json!({
        "invocation": {"uri": "", "event_id": "", "builder.id": ""},
        "scanner": {"uri": "pkg:github/aquasecurity/trivy@0.58.0", "version": "0.58.0",
            "result": {"Results": [
                {"Target": "app", "Vulnerabilities": [
                    {"VulnerabilityID": "CVE-2026-0001", "Severity": severity}]},
                {"Target": "os"}]}},
        "metadata": {"scanStartedOn": now, "scanFinishedOn": now}})
    .to_string()
}

fn manifests(image: &str, public: &str) -> String {
    let pem: String = public.lines().map(|l| format!("    {l}\n")).collect();
    let source = "predicate.buildDefinition.externalParameters.workflow.repository == \
                  'https://github.com/acme/app'";
    let fresh = "now - timestamp(predicate.metadata.scanFinishedOn) < duration('168h')";
    let clean = "!predicate.scanner.result.Results.exists(r, has(r.Vulnerabilities) && \
                 r.Vulnerabilities.exists(v, v.Severity == 'CRITICAL'))";
    let policy = |name: &str, range: &str, attestations: &str| {
        format!(
            "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: {name}, namespace: team}}\n\
             spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '{range}'}}}}\n  \
             verify:\n    provider: cosign\n    secretRef: {{name: keys}}\n    attestations:\n{attestations}"
        )
    };
    let released = format!(
        "    - name: provenance\n      predicateType: {SLSA}\n      conditions:\n      \
         - {{expression: \"{source}\", message: built from acme/app}}\n      \
         - expression: \"predicate.buildDefinition.externalParameters.workflow.ref.startsWith('refs/tags/')\"\n    \
         - name: scan\n      predicateType: {VULN}\n      conditions:\n      \
         - {{expression: \"{fresh}\", message: scanned within 7 days}}\n      \
         - {{expression: \"{clean}\", message: no critical vulnerability}}\n"
    );
    let any = format!("    - {{name: provenance, predicateType: '{SLSA}'}}\n");
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: keys, namespace: team}}\nstringData:\n  cosign.pub: |\n{pem}\
         ---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
         spec: {{image: {image}, interval: 5m}}\n{}{}{}{}",
        policy("released", ">=1.0.0", &released),
        policy("provenance-1-5", "=1.5.0", &any),
        policy("provenance-1-4", "=1.4.0", &any),
        policy("provenance-1-3", "=1.3.0", &any),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the signing tools and a cluster: make e2e-signatures"]
async fn attestations_the_real_cosign_made_are_required_at_selection() {
    let registry = referrers_registry();
    let cosign = Cosign::v3();
    let (trusted, other) = (cosign.key("trusted"), cosign.key("other"));
    let tags = [
        ("1.1.0", "a"),
        ("1.2.0", "b"),
        ("1.3.0", "c"),
        ("1.4.0", "d"),
        ("1.5.0", "e"),
        ("1.6.0", "f"),
    ];
    let digests = super::push_tags(&registry, "team/app", &tags).await;
    let image = format!("{}/team/app", registry.host);
    let at = |tag: &str| format!("{image}@{}", digests[tag]);
    let attest = |key: &CosignKey, tag: &str, kind: &str, predicate: &str| {
        cosign.attest(key, &at(tag), kind, predicate)
    };
    let good = provenance("https://github.com/acme/app");
    for tag in ["1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0"] {
        cosign.sign_bundle(&trusted, &at(tag));
    }
    attest(&trusted, "1.1.0", "slsaprovenance1", &good);
    attest(&trusted, "1.1.0", "vuln", &scan("HIGH"));
    attest(&trusted, "1.2.0", "slsaprovenance1", &good);
    attest(&trusted, "1.2.0", "vuln", &scan("CRITICAL"));
    attest(
        &trusted,
        "1.4.0",
        "slsaprovenance1",
        &provenance("https://github.com/evil/app"),
    );
    attest(&other, "1.5.0", "slsaprovenance1", &good);
    // Attested, never signed.
    attest(&trusted, "1.6.0", "slsaprovenance1", &good);
    attest(&trusted, "1.6.0", "vuln", &scan("LOW"));

    // cosign judges "signed by the key and of that type" as we do.
    let judged: BTreeMap<&str, bool> = ["1.3.0", "1.4.0", "1.5.0"]
        .into_iter()
        .map(|tag| {
            let public = cosign.file("trusted-judge.pub", &trusted.public);
            let args = [
                "verify-attestation",
                "--key",
                public.to_str().unwrap(),
                "--type",
                "slsaprovenance1",
                "--insecure-ignore-tlog=true",
                &at(tag),
            ];
            (tag, cosign.judge(&args).0)
        })
        .collect();
    assert_eq!(
        judged,
        BTreeMap::from([("1.3.0", false), ("1.4.0", true), ("1.5.0", false)])
    );

    let dir = tempfile::tempdir().unwrap();
    let objects = manifests(&image, &trusted.public);
    let file = write(dir.path(), "attested.yaml", &objects);
    let scan = Scanned::run(&file, &dir.path().join("store"));
    judge(&scan);
    let want = [
        ("released", "1.1.0"),
        ("provenance-1-5", ""),
        ("provenance-1-4", "1.4.0"),
        ("provenance-1-3", ""),
    ];
    judge(&InCluster::run(&objects, &want));
}

/// What `scan` and the controller must both have decided.
fn judge(run: &impl Judged) {
    run.assert_elected("released", "1.1.0", None);
    run.assert_held(
        "released",
        "1.6.0",
        "no signature (no cosign signature among its referrers, 2 attestations; no tag",
    );
    run.assert_held(
        "released",
        "1.5.0",
        &format!("attestation 'provenance' ({SLSA}): 1 attestation, not valid: signature does not verify with any trusted key"),
    );
    run.assert_held("released", "1.4.0", "built from acme/app (is false)");
    run.assert_held(
        "released",
        "1.3.0",
        &format!(
            "attestation 'provenance' ({SLSA}): no attestation of that type among its referrers"
        ),
    );
    run.assert_held(
        "released",
        "1.2.0",
        &format!("attestation 'scan' ({VULN}): no critical vulnerability (is false)"),
    );
    run.assert_elected("provenance-1-4", "1.4.0", None);
    run.assert_held(
        "provenance-1-5",
        "1.5.0",
        "does not verify with any trusted key",
    );
    run.assert_held("provenance-1-3", "1.3.0", "no attestation of that type");
}
