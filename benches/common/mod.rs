//! Helpers shared by the `harness = false` benchmarks: timing and peak memory.
// Each benchmark uses some of these helpers.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// Peak resident memory of this process so far (VmHWM), in KiB.
pub fn peak_rss_kib() -> u64 {
    hwm_kib("/proc/self/status").unwrap_or(0)
}

fn hwm_kib(status: &str) -> Option<u64> {
    std::fs::read_to_string(status).ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
    })
}

/// How a child process ended and what it used.
pub struct ChildUsage {
    pub exit_code: i32,
    /// User plus system CPU time, in seconds.
    pub cpu_seconds: f64,
    /// The child's own peak resident memory (VmHWM), in KiB.
    pub peak_rss_kib: u64,
}

/// Waits for `child`, reading its peak memory while it runs. Not wait4's `ru_maxrss`: Linux
/// folds the parent's resident set into a child's figure at exec (a vfork child runs in the
/// parent's memory until then), so it reports the benchmark's own pages. VmHWM is the child's
/// own peak; it only grows, so the last reading before exit is it.
pub fn wait_measured(child: &std::process::Child) -> ChildUsage {
    let pid = child.id() as i32;
    let status_path = format!("/proc/{pid}/status");
    let mut peak = 0;
    // A zombie has no memory map: the line is gone once it exited.
    while let Some(kib) = hwm_kib(&status_path) {
        peak = peak.max(kib);
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is a child of this process that has not been waited for.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4");
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    ChildUsage {
        exit_code: libc::WEXITSTATUS(status),
        cpu_seconds: seconds(usage.ru_utime) + seconds(usage.ru_stime),
        peak_rss_kib: peak,
    }
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
