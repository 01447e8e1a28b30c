//! Gated election benchmark: `cargo bench --bench gates`. Registry requests per ImagePolicy
//! reconcile with all three gates on (minAge, platforms, verify), against a real Distribution
//! registry (Debian's docker-registry, as in the tests), with the filesystem tag store:
//!
//! - cold: the first reconcile of each policy (nothing known);
//! - steady: the next reconciles, nothing moved (target: zero requests);
//! - recheck: a reconcile after the scan interval, when held-back candidates are looked at again;
//! - a policy without gates, for comparison (Flux's requests: none with `Never`).
//!
//! Each policy has its own repository of `TAGS` tags: the best is young (held back by minAge),
//! the next unsigned (held back by verify), the third amd64-only (held back by platforms), the
//! rest pass. Also reports the wall time of a steady reconcile.

// The tests' registry and image helpers (images.rs finds `super::distribution` here).
#[path = "gates/conditions.rs"]
mod conditions;
#[path = "../tests/it/support/distribution.rs"]
#[allow(dead_code)]
mod distribution;
#[path = "../tests/it/support/images.rs"]
#[allow(dead_code)]
mod images;
#[path = "../tests/it/support/policy_cluster.rs"]
#[allow(dead_code)]
mod policy_cluster;
#[path = "gates/roots.rs"]
mod roots;

use distribution::{Distribution, Variant};
use image_reflector::api::{ImagePolicy, ImageRepository};
use image_reflector::controller::image_policy::decide::{reconcile_policy, PolicyEnv};
use image_reflector::registry::Registries;
use image_reflector::store::{FsStore, RepoKey, TagList, TagStore};
use images::{key, payload, public_pem, sign, Arch};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use policy_cluster::{Cluster, KEYS_SECRET};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

const POLICIES: usize = 20;
const TAGS: usize = 8;
const STEADY_ROUNDS: usize = 5;

fn main() {
    // GATES_BENCH=roots: the verification costs alone, without a registry.
    if std::env::var("GATES_BENCH").as_deref() == Ok("conditions") {
        conditions::hostile_conditions();
        return;
    }
    if std::env::var("GATES_BENCH").as_deref() == Ok("roots") {
        hostile_verification();
        roots::hostile_roots();
        return;
    }
    if !std::path::Path::new("/usr/bin/docker-registry").exists() {
        eprintln!("gates: /usr/bin/docker-registry is missing: run `make deps`");
        std::process::exit(1);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}

async fn run() {
    let registry = Distribution::start(Variant::default());
    let now = Timestamp::now();
    let old = (now - SignedDuration::from_hours(30 * 24)).to_string();
    let young = (now - SignedDuration::from_hours(1)).to_string();
    let signer = key(5);
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn TagStore> = Arc::new(FsStore::open(dir.path(), 64 << 10).unwrap());
    let mut repositories = Vec::new();
    let mut gated = Vec::new();
    for p in 0..POLICIES {
        let name = format!("app{p}");
        let repository = format!("{}/{name}", registry.host);
        let mut tags = Vec::new();
        for t in 0..TAGS {
            let tag = format!("1.{}.0", TAGS - t);
            // t = 0: young; 1: unsigned; 2: amd64 only; the rest pass.
            let created = if t == 0 { &young } else { &old };
            let arm = Arch {
                architecture: "arm64",
                variant: None,
                created: Some(created),
            };
            let amd = Arch {
                architecture: "amd64",
                variant: None,
                created: Some(created),
            };
            let archs = if t == 2 { vec![amd] } else { vec![amd, arm] };
            let digest = registry.push_platforms(&name, &tag, &archs).await;
            if t != 1 {
                let signature = sign(&signer, payload(&repository, &digest));
                registry.push_signatures(&name, &digest, &[signature]).await;
            }
            tags.push(tag);
        }
        let names: Vec<&str> = tags.iter().map(String::as_str).collect();
        store
            .set(
                &RepoKey::new("bench", &name).unwrap(),
                &TagList::new(&names).unwrap(),
            )
            .unwrap();
        repositories.push(
            serde_json::from_value::<ImageRepository>(json!({
                "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
                "metadata": {"name": name, "namespace": "bench"},
                "spec": {"image": repository, "interval": "5m"},
                "status": {"lastScanResult": {"tagCount": TAGS, "scanTime": "2026-01-01T00:00:00Z"}},
            }))
            .unwrap(),
        );
        gated.push(policy(&name, true));
    }
    let mut plain: Vec<ImagePolicy> = (0..POLICIES)
        .map(|p| policy(&format!("app{p}"), false))
        .collect();
    let mut cluster = Cluster::new(repositories);
    cluster
        .keys
        .insert("cosign.pub".into(), public_pem(&signer));
    let registries = Registries::new(Default::default());
    // No mirror: the policies here verify with keys.
    let sigstore_root = std::sync::Arc::new(
        image_reflector::registry::sigstore_root::PublicGoodRoot::new(Default::default()),
    );
    let requests = || -> u64 { registries.scheduler().request_counts().values().sum() };
    let round = |policies: &mut Vec<ImagePolicy>, at: Timestamp| {
        let (cluster, registries, store, sigstore_root) =
            (&cluster, &registries, &store, &sigstore_root);
        let mut policies = std::mem::take(policies);
        async move {
            for policy in policies.iter_mut() {
                let scanned = |_: &RepoKey| true;
                let env = PolicyEnv {
                    reader: cluster,
                    registries,
                    store,
                    now: at,
                    workload_identity: Default::default(),
                    no_cross_namespace_refs: false,
                    requeue_dependency: Duration::from_secs(30),
                    repository_scanned: &scanned,
                    first_since_start: false,
                    sigstore_root,
                };
                let result = reconcile_policy(policy, &env).await;
                let tag = result.status.latest_ref.as_ref().map(|r| r.tag.clone());
                assert_eq!(
                    tag.as_deref(),
                    Some(if policy.spec.verify.is_some() {
                        "1.5.0"
                    } else {
                        "1.8.0"
                    }),
                    "{}",
                    result.summary
                );
                policy.status = Some(result.status);
            }
            policies
        }
    };
    let per = |n: u64, reconciles: usize| n as f64 / reconciles as f64;

    let before = requests();
    let started = Instant::now();
    gated = round(&mut gated, now).await;
    let cold = requests() - before;
    let cold_time = started.elapsed();

    let before = requests();
    let started = Instant::now();
    for i in 0..STEADY_ROUNDS {
        gated = round(&mut gated, now + SignedDuration::from_secs(10 + i as i64)).await;
    }
    let steady = requests() - before;
    let steady_time = started.elapsed() / (STEADY_ROUNDS * POLICIES) as u32;

    let before = requests();
    gated = round(&mut gated, now + SignedDuration::from_secs(301)).await;
    let recheck = requests() - before;
    let held = gated[0]
        .status
        .as_ref()
        .and_then(|s| s.held_back.as_ref())
        .map_or(0, Vec::len);

    let before = requests();
    plain = round(&mut plain, now).await;
    for i in 0..STEADY_ROUNDS {
        plain = round(&mut plain, now + SignedDuration::from_secs(10 + i as i64)).await;
    }
    let flux = requests() - before;
    assert_eq!(plain.len(), POLICIES);

    println!("gated election, {POLICIES} policies x {TAGS} tags (3 held back each: {held} listed), all three gates");
    println!("| reconcile | registry requests per policy | time per policy |");
    println!("|---|---|---|");
    println!(
        "| cold (nothing known) | {:.1} | {:.1} ms |",
        per(cold, POLICIES),
        cold_time.as_secs_f64() * 1e3 / POLICIES as f64
    );
    println!(
        "| steady, nothing moved ({STEADY_ROUNDS} rounds) | {:.1} | {:.2} ms |",
        per(steady, STEADY_ROUNDS * POLICIES),
        steady_time.as_secs_f64() * 1e3
    );
    println!(
        "| after the scan interval (held-back tags looked at again) | {:.1} | - |",
        per(recheck, POLICIES)
    );
    println!(
        "| no gates (Flux), first and steady | {:.1} | - |",
        per(flux, (STEADY_ROUNDS + 1) * POLICIES)
    );
    assert_eq!(steady, 0, "a steady state costs no request");
    hostile_verification();
    roots::hostile_roots();
    conditions::hostile_conditions();
}

/// The CPU one digest's signatures can cost at worst: 16 legacy signatures (the per-image
/// bound) over 64 KiB payloads (their bound), none by any of 16 trusted keys (the Secret's
/// bound), so every key is tried against every signature. Thread CPU time, not wall time.
fn hostile_verification() {
    use image_reflector::reference::ImageReference;
    use image_reflector::verify::{Signed, SignedPayload, TrustedKeys};
    let secret: std::collections::BTreeMap<String, Vec<u8>> = (0..16u8)
        .map(|i| (format!("k{i}.pub"), public_pem(&key(100 + i)).into_bytes()))
        .collect();
    let trust = TrustedKeys::from_secret(&secret, &[], true).unwrap();
    let image = ImageReference::parse("registry.example/team/app", false).unwrap();
    let digest = format!("sha256:{}", "1".repeat(64));
    let signatures: Vec<Signed> = (0..16u8)
        .map(|i| {
            let mut body = payload("registry.example/team/app", &digest);
            body.resize(64 << 10, b' ');
            let (payload, signature) = sign(&key(200 + i), body);
            Signed::Simple(SignedPayload {
                payload,
                signature,
                certificates: Vec::new(),
                log_entry: None,
            })
        })
        .collect();
    let cpu = || {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes the struct it is given.
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
        // SAFETY: initialised by getrusage above (zeroed before).
        let usage = unsafe { usage.assume_init() };
        Duration::from_secs(usage.ru_utime.tv_sec as u64)
            + Duration::from_micros(usage.ru_utime.tv_usec as u64)
    };
    let rounds = 10;
    let started = cpu();
    for _ in 0..rounds {
        let verdict = trust.verify(&signatures, &image, &digest, std::time::SystemTime::now());
        assert!(verdict.is_err(), "no trusted key signed them");
    }
    let each = (cpu() - started) / rounds;
    println!(
        "\nworst hostile digest: 16 signatures of 64 KiB, 16 trusted keys, none valid: {:.1} ms of CPU",
        each.as_secs_f64() * 1e3
    );
}

fn policy(repository: &str, gates: bool) -> ImagePolicy {
    let mut spec = json!({"imageRepositoryRef": {"name": repository},
                          "policy": {"semver": {"range": ">=1.0.0"}}});
    if gates {
        spec["filterTags"] = json!({"minAge": "168h"});
        spec["platforms"] = json!(["linux/amd64", "linux/arm64"]);
        spec["verify"] = json!({"provider": "cosign", "secretRef": {"name": KEYS_SECRET}});
        spec["digestReflectionPolicy"] = json!("IfNotPresent");
    }
    serde_json::from_value(json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy",
        "metadata": {"name": format!("p-{repository}"), "namespace": "bench", "generation": 1},
        "spec": spec,
    }))
    .unwrap()
}
