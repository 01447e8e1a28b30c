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

/// The keys' Secret, the repository, and the policies of the tags `<major>.x`.
fn manifests(image: &str, public: &str, major: u8) -> String {
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
    // The attestation alone, as GitHub's artifact attestations come (no image signature).
    let alone = format!(
        "    - name: provenance\n      predicateType: {SLSA}\n      conditions:\n      \
         - {{expression: \"{source}\", message: built from acme/app}}\n    imageSignature: NotRequired\n"
    );
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: keys, namespace: team}}\nstringData:\n  cosign.pub: |\n{pem}\
         ---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
         spec: {{image: {image}, interval: 5m}}\n{}{}{}{}{}",
        policy("released", &format!(">={major}.0.0"), &released),
        policy("attested-only", &format!(">={major}.0.0"), &alone),
        policy(&format!("provenance-{major}-5"), &format!("={major}.5.0"), &any),
        policy(&format!("provenance-{major}-4"), &format!("={major}.4.0"), &any),
        policy(&format!("provenance-{major}-3"), &format!("={major}.3.0"), &any),
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
    let public = cosign.file("trusted-judge.pub", &trusted.public);
    let judged = verify_attestation(&cosign, &public, &["1.3.0", "1.4.0", "1.5.0"], at);
    assert_eq!(
        judged,
        BTreeMap::from([("1.3.0", false), ("1.4.0", true), ("1.5.0", false)])
    );

    let dir = tempfile::tempdir().unwrap();
    let objects = manifests(&image, &trusted.public, 1);
    let file = write(dir.path(), "attested.yaml", &objects);
    let scan = Scanned::run(&file, &dir.path().join("store"));
    judge(&scan);
    let want = [
        ("released", "1.1.0"),
        ("attested-only", "1.6.0"),
        ("provenance-1-5", ""),
        ("provenance-1-4", "1.4.0"),
        ("provenance-1-3", ""),
    ];
    judge(&InCluster::run(&objects, &want));
}

/// `cosign verify-attestation --type slsaprovenance1` with the key `public` of each tag's
/// digest (`at`): whether it passed.
fn verify_attestation<'a>(
    cosign: &Cosign,
    public: &std::path::Path,
    tags: &[&'a str],
    at: impl Fn(&str) -> String,
) -> BTreeMap<&'a str, bool> {
    let judged = |tag: &str| {
        let args = [
            "verify-attestation",
            "--key",
            public.to_str().unwrap(),
            "--type",
            "slsaprovenance1",
            "--insecure-ignore-tlog=true",
            &at(tag),
        ];
        cosign.judge(&args).0
    };
    tags.iter().map(|tag| (*tag, judged(tag))).collect()
}

/// What `scan` and the controller must both have decided.
fn judge(run: &impl Judged) {
    run.assert_elected("released", "1.1.0", None);
    // imageSignature: NotRequired: 1.6.0, attested and never signed, is elected on its
    // provenance alone.
    run.assert_elected("attested-only", "1.6.0", None);
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
            "attestation 'provenance' ({SLSA}): no attestation of that type among its referrers or its .att tag"
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

/// cosign v2's attestations (`cosign attest`, its default: the `sha256-<hex>.att` tag) count
/// as v3's referrers do: a clean one elects, another signer's is not valid, and a failing one
/// under the tag beside a passing bundle holds the tag (every attestation of the type must
/// satisfy, whichever layout keeps it); `cosign verify-attestation` (v2) agrees on what is
/// signed and of that type.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the signing tools and a cluster: make e2e-signatures"]
async fn attestations_cosign_v2_kept_under_its_att_tag_count() {
    let registry = referrers_registry();
    let (v2, v3) = (Cosign::v2(), Cosign::v3());
    // One key for both: cosign's own key files are encrypted, a PKCS#8 key imports into each.
    let pem = rcgen::KeyPair::generate().unwrap().serialize_pem();
    let (trusted, trusted_v3) = (
        v2.import_key("trusted", &pem),
        v3.import_key("trusted", &pem),
    );
    let other = v2.key("other");
    let tags = [
        ("2.1.0", "a"),
        ("2.2.0", "b"),
        ("2.3.0", "c"),
        ("2.4.0", "d"),
    ];
    let digests = super::push_tags(&registry, "team/app", &tags).await;
    let image = format!("{}/team/app", registry.host);
    let at = |tag: &str| format!("{image}@{}", digests[tag]);
    let (good, evil) = (
        provenance("https://github.com/acme/app"),
        provenance("https://github.com/evil/app"),
    );
    for tag in ["2.1.0", "2.2.0", "2.3.0", "2.4.0"] {
        v2.sign_legacy(&trusted, &at(tag));
    }
    v2.attest_legacy(&trusted, &at("2.1.0"), "slsaprovenance1", &good);
    v2.attest_legacy(&trusted, &at("2.1.0"), "vuln", &scan("LOW"));
    v2.attest_legacy(&trusted, &at("2.2.0"), "slsaprovenance1", &evil);
    v3.attest(&trusted_v3, &at("2.3.0"), "slsaprovenance1", &good);
    v2.attest_legacy(&trusted, &at("2.3.0"), "slsaprovenance1", &evil);
    v2.attest_legacy(&other, &at("2.4.0"), "slsaprovenance1", &good);

    let public = v2.file("trusted-judge.pub", &trusted.public);
    let judged = verify_attestation(&v2, &public, &["2.1.0", "2.4.0"], at);
    assert_eq!(judged, BTreeMap::from([("2.1.0", true), ("2.4.0", false)]));

    let dir = tempfile::tempdir().unwrap();
    let objects = manifests(&image, &trusted.public, 2);
    let file = write(dir.path(), "attested-v2.yaml", &objects);
    let want = [
        ("released", "2.1.0"),
        ("attested-only", "2.1.0"),
        ("provenance-2-4", ""),
        ("provenance-2-3", "2.3.0"),
    ];
    judge_v2(&Scanned::run(&file, &dir.path().join("store")));
    judge_v2(&InCluster::run(&objects, &want));
}

/// What `scan` and the controller must both have decided of cosign v2's attestations.
fn judge_v2(run: &impl Judged) {
    run.assert_elected("released", "2.1.0", None);
    run.assert_elected("attested-only", "2.1.0", None);
    run.assert_held(
        "attested-only",
        "2.4.0",
        "1 attestation, not valid: signature does not verify with any trusted key",
    );
    run.assert_held("released", "2.2.0", "built from acme/app (is false)");
    run.assert_held(
        "released",
        "2.3.0",
        "attestation 2 of 2: built from acme/app (is false)",
    );
    run.assert_held(
        "released",
        "2.4.0",
        "1 attestation, not valid: signature does not verify with any trusted key",
    );
    // No conditions: the bundle and the layer of 2.3.0 both verify, and that is enough.
    run.assert_elected("provenance-2-3", "2.3.0", None);
    run.assert_held(
        "provenance-2-4",
        "2.4.0",
        "does not verify with any trusted key",
    );
}
