//! The process's own series, as every Prometheus client exports them (Flux's dashboards chart
//! CPU and memory from these): `process_cpu_seconds_total`, `process_resident_memory_bytes`,
//! `process_virtual_memory_bytes`, `process_open_fds`, `process_max_fds`,
//! `process_start_time_seconds`, read from `/proc/self` at scrape time; and
//! `image_reflector_build_info{version, commit}`.

use super::collect::{Kind, Series, Source};

/// The process and build series.
pub struct ProcessSource;

impl Source for ProcessSource {
    fn series(&self) -> Vec<Series> {
        let mut out = vec![Series::new(
            "image_reflector_build_info",
            "The running build (value 1)",
            Kind::Gauge,
        )
        .sample(
            vec![
                ("version", super::build::VERSION.to_string()),
                ("commit", super::build::COMMIT.to_string()),
            ],
            1.0,
        )];
        let Some(stat) = read_stat() else {
            return out;
        };
        let gauge =
            |name, help, value: f64| Series::new(name, help, Kind::Gauge).sample(vec![], value);
        out.push(
            Series::new(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                Kind::Seconds,
            )
            .sample(vec![], stat.cpu_seconds),
        );
        out.push(gauge(
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            stat.rss_bytes,
        ));
        out.push(gauge(
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes",
            stat.vsize_bytes,
        ));
        out.push(gauge(
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds",
            stat.start_time,
        ));
        if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
            out.push(gauge(
                "process_open_fds",
                "Number of open file descriptors",
                fds.count() as f64,
            ));
        }
        if let Some(max) = max_open_files() {
            out.push(gauge(
                "process_max_fds",
                "Maximum number of open file descriptors",
                max,
            ));
        }
        out
    }
}

struct Stat {
    cpu_seconds: f64,
    rss_bytes: f64,
    vsize_bytes: f64,
    start_time: f64,
}

fn read_stat() -> Option<Stat> {
    // SAFETY: sysconf only reads configuration values.
    let (ticks, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let (ticks, page) = (ticks.max(1) as f64, page.max(1) as f64);
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_stat(&text, ticks, page, boot_time()?)
}

/// `/proc/self/stat`: the fields after the command name (which may hold spaces), counted from
/// 3 as proc(5) numbers them: utime 14, stime 15, starttime 22, vsize 23, rss 24.
fn parse_stat(text: &str, ticks: f64, page: f64, boot_time: f64) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<f64>().ok();
    Some(Stat {
        cpu_seconds: (field(14)? + field(15)?) / ticks,
        start_time: boot_time + field(22)? / ticks,
        vsize_bytes: field(23)?,
        rss_bytes: field(24)? * page,
    })
}

fn boot_time() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

fn max_open_files() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_past_a_command_with_spaces() {
        let text = "42 (image (reflector)) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 1000 123456789 2048 18446744073709551615";
        let stat = parse_stat(text, 100.0, 4096.0, 1_700_000_000.0).unwrap();
        assert_eq!(stat.cpu_seconds, 3.0);
        assert_eq!(stat.start_time, 1_700_000_010.0);
        assert_eq!(stat.vsize_bytes, 123_456_789.0);
        assert_eq!(stat.rss_bytes, 2048.0 * 4096.0);
    }

    #[test]
    fn this_process_has_its_series() {
        let names: Vec<&str> = ProcessSource.series().iter().map(|s| s.name).collect();
        for name in [
            "image_reflector_build_info",
            "process_cpu_seconds",
            "process_resident_memory_bytes",
            "process_virtual_memory_bytes",
            "process_start_time_seconds",
            "process_open_fds",
            "process_max_fds",
        ] {
            assert!(names.contains(&name), "{name}: {names:?}");
        }
    }
}
