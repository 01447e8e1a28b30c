//! What one tenant's signatures cost the others (docs/security.md, "Gated election"): a
//! registry chooses how many signatures an image carries, and every signature is tried against
//! every trusted key. That CPU is spent on the blocking pool, so the async workers, which serve
//! every tenant's reconciles, go on serving them meanwhile.

use crate::support::distribution::{Distribution, Variant};
use crate::support::images::{key, payload, public_pem, sign};
use crate::support::policy_bench::{elected, held, policy, Bench};
use image_reflector::reference::ImageReference;
use image_reflector::verify::{Signed, SignedPayload, TrustedKeys};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// Trusted keys, and signatures per image by keys nobody trusts: each signature is tried
/// against each key.
const KEYS: u8 = 16;
const SIGNATURES: u8 = 8;
const TAGS: [&str; 3] = ["1.0.0", "1.1.0", "1.2.0"];

/// This thread's CPU time.
fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    let done = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(done, 0, "the thread's CPU clock reads");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// One async worker (a current-thread runtime) runs tenant A's reconcile, whose three images
/// each carry signatures no trusted key made, beside tenant B's reconcile of a policy without
/// gates. The worker's own CPU over both stays under what verifying one of A's images costs on
/// a thread, though three were verified: when verification ran on the workers, one tenant's
/// image held every other tenant's reconcile for as long as it took (40 s were seen).
#[test]
fn a_tenants_costly_signatures_are_verified_off_the_worker_that_serves_another() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let registry = Distribution::start(Variant::default());
        let repository = format!("{}/app", registry.host);
        let mut per_image = Vec::new();
        for (i, tag) in TAGS.iter().enumerate() {
            let digest = registry
                .push_dated("app", tag, "amd64", None, &format!("{i}"))
                .await;
            let signatures: Vec<_> = (0..SIGNATURES)
                .map(|s| sign(&key(100 + s), payload(&repository, &digest)))
                .collect();
            registry.push_signatures("app", &digest, &signatures).await;
            per_image.push((digest, signatures));
        }
        let mut bench = Bench::new(registry, &TAGS);
        let trusted: BTreeMap<String, String> = (0..KEYS)
            .map(|k| (format!("k{k}.pub"), public_pem(&key(1 + k))))
            .collect();
        bench.cluster.keys = trusted.clone();

        // What verifying one image's signatures costs, on this thread.
        let secret = trusted
            .iter()
            .map(|(name, pem)| (name.clone(), pem.clone().into_bytes()))
            .collect();
        let trust = TrustedKeys::from_secret(&secret, &[], true).unwrap();
        let (digest, signatures) = &per_image[0];
        let signed: Vec<Signed> = signatures
            .iter()
            .map(|(payload, signature)| {
                Signed::Simple(SignedPayload {
                    payload: payload.clone(),
                    signature: signature.clone(),
                    ..Default::default()
                })
            })
            .collect();
        let image = ImageReference::parse(&repository, false).unwrap();
        let started = thread_cpu();
        let verdict = trust.verify(&signed, &image, digest, SystemTime::now());
        let one_image = thread_cpu() - started;
        assert!(verdict.is_err(), "no trusted key made them");

        let mut a =
            policy(json!({"verify": {"provider": "cosign", "secretRef": {"name": "cosign-keys"}}}));
        let mut b = policy(json!({}));
        let now = Timestamp::now();
        let started = thread_cpu();
        tokio::join!(bench.reconcile(&mut a, now), bench.reconcile(&mut b, now));
        let worker = thread_cpu() - started;

        let held_back = held(&a);
        assert_eq!(held_back.len(), TAGS.len(), "{held_back:?}");
        for (_, gate, reason) in &held_back {
            assert_eq!(gate, "verify");
            assert!(
                reason.contains("does not verify with any trusted key"),
                "{reason}"
            );
        }
        assert_eq!(elected(&b).0, "1.2.0", "tenant B is served");
        assert!(
            worker < one_image,
            "the worker spent {worker:?} of CPU on both reconciles, while one image's \
             verification costs {one_image:?} and {} were verified",
            TAGS.len()
        );
    });
}
