//! The election gates through the binary: `scan` checks them against a real Distribution
//! registry (a dated image, a young one, a cosign signature made here, the keys' Secret in the
//! manifests) and lists what was held back; `select` says which gates it cannot check offline.

use crate::support::distribution::{Distribution, Variant};
use crate::support::images::{key, payload, public_pem_block, sign};
use crate::support::{held_until, run_bin, scan_yaml, write};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

#[tokio::test]
async fn scan_elects_through_the_gates_and_lists_the_tags_held_back() {
    let registry = Distribution::start(Variant::default());
    let now = Timestamp::now();
    let month_ago = (now - SignedDuration::from_hours(30 * 24)).to_string();
    let five_hours_ago = now - SignedDuration::from_hours(5);
    let hours_ago = five_hours_ago.to_string();
    let old = registry
        .push_dated("team/app", "1.0.0", "amd64", Some(&month_ago), "a")
        .await;
    let young = registry
        .push_dated("team/app", "1.1.0", "amd64", Some(&hours_ago), "b")
        .await;
    let unsigned = registry
        .push_dated("team/app", "0.9.0", "amd64", Some(&month_ago), "c")
        .await;
    let host = &registry.host;
    let repository = format!("{host}/team/app");
    for digest in [&old, &young] {
        let signature = sign(&key(7), payload(&repository, digest));
        registry
            .push_signatures("team/app", digest, &[signature])
            .await;
    }
    let pem = public_pem_block(&key(7));
    let dir = tempfile::tempdir().unwrap();
    let manifests = write(
        dir.path(),
        "gated.yaml",
        &format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
             spec: {{image: {repository}, interval: 5m}}\n---\n\
             apiVersion: v1\nkind: Secret\nmetadata: {{name: cosign-keys, namespace: team}}\nstringData:\n  cosign.pub: |\n{pem}---\n\
             apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: vetted, namespace: team}}\n\
             spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=0.1.0'}}}}\n  \
             filterTags: {{minAge: 168h}}\n  digestReflectionPolicy: IfNotPresent\n  \
             verify: {{provider: cosign, secretRef: {{name: cosign-keys}}}}\n---\n\
             apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: old-line, namespace: team}}\n\
             spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '<1.0.0'}}}}\n  \
             verify: {{provider: cosign, secretRef: {{name: cosign-keys}}}}\n"
        ),
    );
    let storage = dir.path().join("store");
    let args = [
        "scan",
        "-f",
        &manifests,
        "--storage-path",
        storage.to_str().unwrap(),
    ];
    let out = run_bin(&args, None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "old-line elects nothing: {stdout}{stderr}"
    );
    let row = |needle: &str| {
        stdout
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle}:\n{stdout}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let vetted = row("vetted   ");
    assert_eq!(
        vetted[3..6],
        ["1.0.0".to_string(), old.clone(), "True".into()],
        "{stdout}"
    );
    let young_reason = held_until("minAge 168h", 168, "its creation", five_hours_ago);
    assert!(
        stdout.contains(&format!("; 1.1.0 held back: {young_reason}")),
        "{stdout}"
    );
    assert!(
        stdout.contains("NAMESPACE   POLICY     HELD BACK   GATE     REASON"),
        "{stdout}"
    );
    let held = row("vetted     1.1.0");
    assert_eq!(held[3], "minAge");
    let refused = row("old-line   0.9.0");
    assert_eq!(refused[3], "verify");
    assert!(
        stdout.contains("no signature (no cosign bundle among its referrers, no tag sha256-"),
        "{stdout}"
    );
    assert!(stderr.contains("ImagePolicy team/old-line"), "{stderr}");

    // The same as the status the controller writes.
    let out = run_bin(&[&args[..], &["-o", "yaml"]].concat(), None);
    let docs =
        serde_saphyr::from_multiple::<serde_json::Value>(&String::from_utf8_lossy(&out.stdout))
            .unwrap();
    let named = |name: &str| {
        docs.iter()
            .find(|d| d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("the {name} policy"))
            .clone()
    };
    let yaml = named("vetted");
    let held = &yaml["status"]["heldBack"][0];
    assert_eq!(
        (
            held["tag"].as_str(),
            held["digest"].as_str(),
            held["gate"].as_str()
        ),
        (Some("1.1.0"), Some(young.as_str()), Some("minAge"))
    );
    let old_line = named("old-line");
    assert_eq!(
        old_line["status"]["heldBack"][0]["digest"].as_str(),
        Some(unsigned.as_str()),
        "the unsigned image's own digest"
    );
    assert!(
        old_line["status"].get("latestRef").is_none(),
        "nothing elected"
    );
    assert_eq!(
        yaml["status"]["latestRef"]["digest"].as_str(),
        Some(old.as_str())
    );
}

#[test]
fn select_names_the_gates_it_cannot_check_offline() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = write(
        dir.path(),
        "p.yaml",
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: p}\n\
         spec:\n  imageRepositoryRef: {name: app}\n  policy: {semver: {range: '>=1.0.0'}}\n  \
         filterTags: {minAge: 72h}\n  platforms: [linux/arm64]\n  \
         verify: {provider: cosign, secretRef: {name: keys}}\n\
         status:\n  heldBack: [{tag: 1.2.0, gate: verify, reason: no signature, \
         alsoHeldBy: [{gate: minAge, reason: 'until 2026-12-10T10:00:00Z: minAge 72h'}]}]\n",
    );
    let out = run_bin(
        &["select", "-f", &manifest, "--tags-file", "-"],
        Some("1.0.0\n1.2.0\n"),
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1.2.0\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the gates (platforms linux/arm64/v8, minAge 72h, verify cosign) are not checked offline"),
        "{stderr}"
    );
    let out = run_bin(
        &["select", "-f", &manifest, "--tags-file", "-", "--explain"],
        Some("1.0.0\n1.2.0\n"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("elected: 1.2.0\n"), "{stdout}");
    assert!(stdout.contains("runner-up 1: 1.0.0\n"), "{stdout}");
    assert!(
        stdout.contains("gates: platforms linux/arm64/v8; minAge 72h; verify cosign\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "held back (status.heldBack): 1.2.0 by verify: no signature\n\
             held back (status.heldBack): 1.2.0 by minAge: until 2026-12-10T10:00:00Z: minAge 72h\n"
        ),
        "what the controller last found, every gate, from `kubectl get -o yaml`: {stdout}"
    );
    let bad = write(
        dir.path(),
        "bad.yaml",
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: p}\n\
         spec:\n  imageRepositoryRef: {name: app}\n  policy: {alphabetical: {}}\n  platforms: [linux]\n",
    );
    let out = run_bin(&["select", "-f", &bad, "--tags-file", "-"], Some("a\n"));
    assert_eq!(
        out.status.code(),
        Some(2),
        "an invalid gate is an invalid policy"
    );
}

/// Issue 69's reproduction through the binary: `scan` of a `verify` policy carrying
/// `reconcile.fluxcd.io/requestedAt` (what `flux reconcile image policy` sets). 2.0.0 is
/// unsigned, 1.9.0 signed by an untrusted key, 1.8.0 by the trusted one: with or without the
/// annotation 1.8.0 is elected, the two above it held back by verify. Before the fix the
/// annotation elected 2.0.0 with nothing held back.
#[tokio::test]
async fn scan_with_a_requested_reconcile_elects_only_what_verify_passes() {
    let registry = Distribution::start(Variant::default());
    let repository = format!("{}/team/app", registry.host);
    let mut digests = Vec::new();
    for tag in ["1.8.0", "1.9.0", "2.0.0"] {
        let digest = registry
            .push_image_variant("team/app", &[tag.to_string()], tag)
            .await;
        digests.push(digest);
    }
    for (digest, seed) in [(&digests[0], 7), (&digests[1], 8)] {
        let signature = sign(&key(seed), payload(&repository, digest));
        registry
            .push_signatures("team/app", digest, &[signature])
            .await;
    }
    let pem = public_pem_block(&key(7));
    let dir = tempfile::tempdir().unwrap();
    for annotations in [
        "{}",
        "{reconcile.fluxcd.io/requestedAt: '2026-12-01T21:00:00Z'}",
    ] {
        let manifests = write(
            dir.path(),
            "requested.yaml",
            &format!(
                "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
                 spec: {{image: {repository}, interval: 5m}}\n---\n\
                 apiVersion: v1\nkind: Secret\nmetadata: {{name: cosign-keys, namespace: team}}\nstringData:\n  cosign.pub: |\n{pem}---\n\
                 apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n\
                 metadata: {{name: app, namespace: team, annotations: {annotations}}}\n\
                 spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n  \
                 verify: {{provider: cosign, secretRef: {{name: cosign-keys}}}}\n"
            ),
        );
        // A fresh store each time: the annotation, not a kept verdict, decides.
        let storage = tempfile::tempdir().unwrap();
        let args = [
            "scan",
            "-f",
            &manifests,
            "--storage-path",
            storage.path().to_str().unwrap(),
            "-o",
            "yaml",
        ];
        let out = run_bin(&args, None);
        let text = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{annotations}: {text}{stderr}");
        let docs = serde_saphyr::from_multiple::<serde_json::Value>(&text).unwrap();
        let policy = docs
            .iter()
            .find(|d| d["kind"] == "ImagePolicy")
            .unwrap_or_else(|| panic!("{text}"));
        assert_eq!(
            policy["status"]["latestRef"]["tag"], "1.8.0",
            "{annotations}: {policy}"
        );
        let held: Vec<(&str, &str)> = policy["status"]["heldBack"]
            .as_array()
            .unwrap_or_else(|| panic!("{annotations}: {policy}"))
            .iter()
            .map(|h| (h["tag"].as_str().unwrap(), h["gate"].as_str().unwrap()))
            .collect();
        assert_eq!(
            held,
            [("2.0.0", "verify"), ("1.9.0", "verify")],
            "{annotations}"
        );
    }
}

/// `minAgeByBump` through the binary (issue 74, item 2): `scan` of a policy whose status
/// records 1.4.2 elects the day-old patch and holds the minor and the major by their own ages;
/// `select --explain` lists every age.
#[tokio::test]
async fn scan_waits_each_bump_its_own_age_from_the_recorded_election() {
    let registry = Distribution::start(Variant::default());
    let now = Timestamp::now();
    let at = |days: i64| now - SignedDuration::from_hours(days * 24);
    let ago = |days: i64| at(days).to_string();
    for (tag, days, content) in [
        ("1.4.2", 60, "a"),
        ("1.4.3", 2, "b"),
        ("1.5.0", 5, "c"),
        ("2.0.0", 10, "d"),
    ] {
        registry
            .push_dated("team/app", tag, "amd64", Some(&ago(days)), content)
            .await;
    }
    let repository = format!("{}/team/app", registry.host);
    let policy = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: cooled, namespace: team}}\n\
         spec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n  \
         filterTags:\n    minAge: 1440h\n    minAgeByBump: {{major: 720h, minor: 168h, patch: 24h}}\n\
         status:\n  latestRef: {{name: {repository}, tag: 1.4.2}}\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let manifests = write(
        dir.path(),
        "cooled.yaml",
        &format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: team}}\n\
             spec: {{image: {repository}, interval: 5m}}\n---\n{policy}"
        ),
    );
    let scanned = scan_yaml(&manifests, &dir.path().join("store"));
    let (status, stdout) = (&scanned.policy_status, &scanned.output);
    assert_eq!(scanned.code, Some(0), "{stdout}");
    assert_eq!(
        status["latestRef"]["tag"].as_str(),
        Some("1.4.3"),
        "{stdout}"
    );
    let held: Vec<&str> = status["heldBack"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        held,
        [
            held_until(
                "minAgeByBump.major 720h (a major bump)",
                720,
                "its creation",
                at(10)
            ),
            held_until(
                "minAgeByBump.minor 168h (a minor bump)",
                168,
                "its creation",
                at(5)
            )
        ]
    );
    let file = write(dir.path(), "policy.yaml", &policy);
    let out = run_bin(
        &["select", "-f", &file, "--tags-file", "-", "--explain"],
        Some("1.4.2\n1.4.3\n2.0.0\n"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("gates: minAge 1440h, major 720h, minor 168h, patch 24h\n"),
        "{stdout}"
    );
}

/// `select` says which bumps wait nothing (issue 90, item 4): in its notes, with `--explain`,
/// and under `bumpsWaitingNothing` in JSON.
#[test]
fn select_says_which_bumps_wait_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = write(
        dir.path(),
        "p.yaml",
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: p}\n\
         spec:\n  imageRepositoryRef: {name: app}\n  policy: {semver: {range: '>=1.0.0'}}\n  \
         filterTags: {minAgeByBump: {major: 72h, patch: 1h}}\n",
    );
    let note = "note: spec.filterTags.minAgeByBump leaves minor unset and filterTags.minAge is \
                not set: minor bumps wait nothing";
    let select = |extra: &[&str]| {
        let mut args = vec!["select", "-f", &manifest, "--tags-file", "-"];
        args.extend(extra);
        let out = run_bin(&args, Some("1.4.2\n1.5.0\n"));
        assert_eq!(out.status.code(), Some(0));
        let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
        (text(&out.stdout), text(&out.stderr))
    };
    let (elected, said) = select(&[]);
    assert_eq!(elected, "1.5.0\n");
    assert!(said.contains(note), "{said}");
    let (explained, _) = select(&["--explain"]);
    assert!(explained.contains(note), "{explained}");
    let (json, _) = select(&["-o", "json"]);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let unwaited = json["bumpsWaitingNothing"].as_str().unwrap_or_default();
    assert!(unwaited.starts_with(&note["note: ".len()..]), "{json}");
}
