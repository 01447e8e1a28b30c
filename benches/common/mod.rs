//! Helpers shared by the `harness = false` benchmarks: timing and peak memory.

use std::time::{Duration, Instant};

/// Peak resident memory of this process so far (VmHWM), in KiB.
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(str::to_string)
        })
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// The median of `runs` timings of `f`.
pub fn timed(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// Runs every scenario in a child process of this benchmark (so each peak RSS is its own),
/// or, when called as such a child, the one scenario named on the command line.
/// The parent prints `header` (a table head) first.
pub fn run_scenarios(bench: &str, header: &str, scenarios: &[&str], run: impl Fn(&str)) {
    if let Some(name) = std::env::args().skip(1).find(|a| !a.starts_with('-')) {
        if name != bench {
            return run(&name);
        }
    }
    println!("{header}");
    for name in scenarios {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .arg(name)
            .status()
            .unwrap();
        assert!(status.success(), "scenario {name} failed");
    }
}

/// A reference tag list, `bench-tags-<size>.txt`, from the directory `BENCH_DATA` names
/// (`make bench` points it at the team's data beside the checkout); `None` when absent.
#[allow(dead_code)]
pub fn bench_tags(size: &str) -> Result<String, String> {
    let dir = std::env::var("BENCH_DATA")
        .unwrap_or_else(|_| format!("{}/../shared/data", env!("CARGO_MANIFEST_DIR")));
    let path = format!("{dir}/bench-tags-{size}.txt");
    std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e} (set BENCH_DATA)"))
}
