//! What a tenant's own trusted root can make one digest's keyless signatures cost (issue 70):
//! 16 bundles (the per-image bound), each with 32 RFC 3161 timestamps (sigstore-go's bound),
//! each token carrying its signer and 24 certificates that all bear its issuer's name and
//! issue each other. Judged under the root the bundles were made for (one Fulcio CA, one
//! timestamp authority naming its leaf, one log: the public-good root's shape), and under a
//! tenant's root of 16 certificate and 16 timestamp authorities, none naming a leaf, each with
//! 7 intermediates named as the signers' issuers, beside the same log. Thread CPU time.

#[path = "../../tests/it/support/same_named.rs"]
mod same_named;

use base64::Engine;
use image_reflector::reference::ImageReference;
use image_reflector::verify::{Signed, TrustedKeys, TRUSTED_ROOT};
use same_named::{anchor, carrying, same_named, Name};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

const BUNDLE: &str = include_str!("../../src/verify/fixtures/rekor-v2/bundle.json");
const ROOT: &str = include_str!("../../src/verify/fixtures/rekor-v2/trusted_root.json");
const DIGEST: &str = "sha256:6f98f6a265c80a24252daa443bad61ee68dce67eb5f1ee79a273ae73922500e0";
const CARRIED: usize = 24;
const AUTHORITIES: usize = 16;
const INTERMEDIATES: usize = 7;
const TIMESTAMPS: usize = 32;
const BUNDLES: usize = 16;

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

fn chain(certificates: impl IntoIterator<Item = Vec<u8>>) -> Value {
    let raw: Vec<Value> = certificates
        .into_iter()
        .map(|c| json!({"rawBytes": b64().encode(c)}))
        .collect();
    json!({"certificates": raw})
}

/// The tenant's root: the fixture's log, and authorities that vouch for nothing.
fn tenant_root(fixture: &Value) -> Value {
    let mut root = fixture.clone();
    let authorities = |name: Name, uri: bool| -> Vec<Value> {
        (0..AUTHORITIES)
            .map(|i| {
                let mut certificates = same_named(name, INTERMEDIATES);
                certificates.push(anchor(i));
                let mut authority = json!({"certChain": chain(certificates),
                    "validFor": {"start": "2020-01-01T00:00:00Z"}});
                if uri {
                    authority["uri"] = format!("https://tsa-{i}.example").into();
                }
                authority
            })
            .collect()
    };
    root["certificateAuthorities"] = authorities(Name::FulcioRoot, false).into();
    root["timestampAuthorities"] = authorities(Name::TsaIntermediate, true).into();
    root
}

pub fn thread_cpu() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    // SAFETY: initialised by getrusage above (zeroed before).
    let usage = unsafe { usage.assume_init() };
    Duration::from_secs(usage.ru_utime.tv_sec as u64)
        + Duration::from_micros(usage.ru_utime.tv_usec as u64)
}

/// The CPU one digest's `signed` costs under `root`, and the verdict.
fn measured(root: &Value, signed: &[Signed]) -> (Duration, Result<String, String>) {
    let data = BTreeMap::from([(TRUSTED_ROOT.to_string(), root.to_string().into_bytes())]);
    let identity = [(
        "^https://token\\.actions\\.githubusercontent\\.com$".to_string(),
        "^dev@example\\.com$".to_string(),
    )];
    let trust = TrustedKeys::from_secret(&data, &identity, true).unwrap();
    let image = ImageReference::parse("registry.example/team/app", false).unwrap();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(4_102_444_800);
    let rounds = 3;
    let started = thread_cpu();
    let mut verdict = Err(String::new());
    for _ in 0..rounds {
        verdict = trust
            .verify(signed, &image, DIGEST, now)
            .map_err(|r| r.to_string());
    }
    ((thread_cpu() - started) / rounds, verdict)
}

/// Prints both costs; fails when the tenant's root costs over twice the public shape's.
pub fn hostile_roots() {
    let fixture: Value = serde_json::from_str(ROOT).unwrap();
    let mut bundle: Value = serde_json::from_str(BUNDLE).unwrap();
    let stamps = "/verificationMaterial/timestampVerificationData/rfc3161Timestamps";
    let real = bundle.pointer(stamps).unwrap()[0]["signedTimestamp"].clone();
    let real = b64().decode(real.as_str().unwrap()).unwrap();
    let signer = fixture["timestampAuthorities"][0]["certChain"]["certificates"][0]["rawBytes"]
        .as_str()
        .unwrap();
    let mut carried = vec![b64().decode(signer).unwrap()];
    carried.extend(same_named(Name::TsaIntermediate, CARRIED));
    let token = b64().encode(carrying(&real, &carried));
    *bundle.pointer_mut(stamps).unwrap() =
        vec![json!({"signedTimestamp": token}); TIMESTAMPS].into();
    let signed = vec![Signed::Bundle(bundle.to_string().into_bytes()); BUNDLES];
    let (public, verdict) = measured(&fixture, &signed);
    assert!(
        verdict.is_ok(),
        "the public-shaped root elects: {verdict:?}"
    );
    let (tenant, verdict) = measured(&tenant_root(&fixture), &signed);
    assert!(verdict.is_err(), "the tenant's root vouches for nothing");
    println!(
        "\nhostile trusted root: {BUNDLES} bundles of {TIMESTAMPS} timestamps carrying {CARRIED} \
         same-named certificates; {AUTHORITIES} certificate and {AUTHORITIES} timestamp \
         authorities of {INTERMEDIATES} same-named intermediates: {:.1} ms of CPU per digest \
         (the public-good shape: {:.1} ms, x{:.2})",
        tenant.as_secs_f64() * 1e3,
        public.as_secs_f64() * 1e3,
        tenant.as_secs_f64() / public.as_secs_f64()
    );
    assert!(
        tenant <= public * 2,
        "a tenant's trusted root costs over twice the public-good shape's"
    );
}
