//! The executable's start-up code, given back once the controller has settled (issue 49:
//! the idle process's resident memory is mostly pages of its own binary). Measured on an idle
//! controller: 10.8 MB of the executable's code and 3.2 MB of its read-only data were
//! resident, of which 0.4 and 0.1 MB were touched in 30 s of idleness; the rest ran once, at
//! start-up and in the first reconciles (clap, TLS set-up, the CRD check, the first LIST).
//! Those pages are clean and backed by the file, so `madvise(MADV_PAGEOUT)` on the binary's
//! read-only mappings lets the kernel reclaim them; whatever runs again is faulted back in from
//! the page cache (or the file) as it runs. Writable mappings (relocated data, `.bss`) are
//! never touched. Linux only; elsewhere, or on a kernel without `MADV_PAGEOUT` (before 5.4),
//! nothing happens.
//!
//! The heap too: glibc's malloc keeps what a burst freed (a cold start's lists and decisions,
//! a round of scans) for reuse and does not return it, so the resident set stays at the
//! burst's peak while the live heap is far below it. `malloc_trim(0)` returns the free whole
//! pages of every arena; it runs at settling and then every [`TRIM_EVERY`].

use std::time::Duration;

/// How long after the caches are loaded the start-up pages are given back: the first full
/// round of reconciles runs in that time.
pub const SETTLE_AFTER: Duration = Duration::from_secs(60);

/// How often the heap's free pages are given back after settling: a walk of malloc's free
/// lists, about a millisecond at 100 MB of heap.
pub const TRIM_EVERY: Duration = Duration::from_secs(300);

/// Once the caches are loaded (`readiness`) and [`SETTLE_AFTER`] has passed, gives the
/// executable's start-up pages back, once, and the heap's free pages then and every
/// [`TRIM_EVERY`]; logs what that did.
pub async fn give_back_when_settled(readiness: super::http::Readiness) {
    while !readiness.is_ready() {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    tokio::time::sleep(SETTLE_AFTER).await;
    let before = resident_bytes();
    let advised = tokio::task::spawn_blocking(page_out_executable)
        .await
        .unwrap_or(0);
    let after = resident_bytes();
    tracing::debug!(
        advised,
        ?before,
        ?after,
        "start-up pages of the executable given back"
    );
    loop {
        let before = resident_bytes();
        let trimmed = tokio::task::spawn_blocking(trim_heap)
            .await
            .unwrap_or(false);
        let after = resident_bytes();
        tracing::debug!(trimmed, ?before, ?after, "free heap pages given back");
        tokio::time::sleep(TRIM_EVERY).await;
    }
}

/// Returns the heap's free whole pages to the system; whether any were (glibc only).
pub fn trim_heap() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only releases memory malloc holds free; no live allocation moves.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Asks the kernel to reclaim the resident pages of the executable's read-only mappings;
/// returns the bytes advised (0 when nothing could be).
pub fn page_out_executable() -> usize {
    let Ok(exe) = std::fs::read_link("/proc/self/exe") else {
        return 0;
    };
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return 0;
    };
    let exe = exe.to_string_lossy();
    let mut advised = 0;
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        let path = fields.nth(3).unwrap_or_default();
        // Only the binary's own clean mappings: code and read-only data.
        if path != exe || perms.as_bytes().get(1) == Some(&b'w') {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (
            usize::from_str_radix(start, 16),
            usize::from_str_radix(end, 16),
        ) else {
            continue;
        };
        // SAFETY: the range is a whole mapping of this process, read from /proc/self/maps, and
        // not writable: MADV_PAGEOUT only asks the kernel to reclaim its clean, file-backed
        // pages, which are read back from the file when next accessed; no content changes.
        let done =
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_PAGEOUT) };
        if done == 0 {
            advised += end - start;
        }
    }
    advised
}

/// The resident set of this process, in bytes, from /proc/self/statm.
pub fn resident_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * usize::try_from(page).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test binary's own read-only mappings are advised, and it goes on running the code
    /// it paged out (this test's assertions run after). How much it saves is measured on the
    /// controller (docs/benchmarks.md), not here: other tests run in this process meanwhile.
    #[test]
    fn the_executables_clean_pages_are_given_back() {
        let advised = page_out_executable();
        assert!(
            advised > 1 << 20,
            "only {advised} bytes of the executable advised"
        );
        assert!(resident_bytes().unwrap() > 0);
    }

    /// What a burst freed goes back: 64 MiB in small blocks, freed, then trimmed.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn the_heaps_free_pages_are_given_back() {
        let blocks: Vec<Vec<u8>> = (0..16_384).map(|i| vec![i as u8; 4096]).collect();
        let held = resident_bytes().unwrap();
        // One in 64 stays, so the freed memory sits between live blocks, not at the top.
        let kept: Vec<Vec<u8>> = blocks.into_iter().step_by(64).collect();
        assert!(trim_heap(), "nothing was given back");
        let after = resident_bytes().unwrap();
        assert!(
            kept.len() == 256 && after + (32 << 20) < held,
            "{held} -> {after}"
        );
    }
}
