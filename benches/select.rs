//! Election benchmarks over the reference tag lists (`BENCH_DATA`), held in the store's order (descending
//! bytes), timing only `Policy::select_sorted` (policy and regex are built outside the timed loop).
//! Run: `cargo bench --bench select -- --output-format bencher`.

mod common;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use image_reflector::policy::{FilterSpec, Order, Policy, PolicyChoice};
use image_reflector::store::TagList;
use std::hint::black_box;

const SEMVER_PATTERN: &str =
    r"^v?(?P<v>[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?)(?:\+[0-9A-Za-z.-]+)?$";
const MAIN_PATTERN: &str = r"^main-[a-f0-9]+-(?P<ts>[0-9]+)$";

fn workloads() -> Vec<(&'static str, Policy)> {
    let semver = PolicyChoice {
        semver: Some(">=1.0.0".into()),
        ..Default::default()
    };
    let alphabetical = PolicyChoice {
        alphabetical: Some(Order::Asc),
        ..Default::default()
    };
    let numerical = PolicyChoice {
        numerical: Some(Order::Asc),
        ..Default::default()
    };
    let filter = |pattern: &str, extract: &str| FilterSpec {
        pattern: pattern.into(),
        extract: extract.into(),
    };
    let build = |c: &PolicyChoice, f: Option<FilterSpec>| {
        Policy::new(c, f.as_ref()).expect("benchmark policy is valid")
    };
    vec![
        ("semver", build(&semver, None)),
        (
            "semver+filter",
            build(&semver, Some(filter(SEMVER_PATTERN, "$v"))),
        ),
        ("alphabetical", build(&alphabetical, None)),
        (
            "alphabetical+filter",
            build(&alphabetical, Some(filter(MAIN_PATTERN, "$ts"))),
        ),
        (
            "numerical+filter",
            build(&numerical, Some(filter(MAIN_PATTERN, "$ts"))),
        ),
    ]
}

/// The tags as the controller holds them: a store `TagList` (one buffer, descending order).
fn load(size: &str) -> Option<TagList> {
    let text = match common::bench_tags(size) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("skipping {size}: {e}");
            return None;
        }
    };
    Some(TagList::new(text.lines().filter(|l| !l.is_empty())).expect("benchmark tags are valid"))
}

fn select(c: &mut Criterion) {
    let mut group = c.benchmark_group("select");
    for size in ["10k", "100k"] {
        let Some(tags) = load(size) else { continue };
        group.throughput(Throughput::Elements(tags.len() as u64));
        for (name, policy) in workloads() {
            group.bench_with_input(BenchmarkId::new(name, size), &tags, |b, tags| {
                b.iter(|| black_box(policy.select_sorted(black_box(tags).iter()).ok()))
            });
        }
        // The same election without using the store's order: the single pass `select` makes
        // over tags in any order (plain alphabetical is the only workload that differs).
        let (_, alphabetical) = workloads().swap_remove(2);
        group.bench_with_input(
            BenchmarkId::new("alphabetical-any-order", size),
            &tags,
            |b, tags| b.iter(|| black_box(alphabetical.select(black_box(tags).iter()).ok())),
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = select
}
criterion_main!(benches);
