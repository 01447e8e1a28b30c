//! The heap's free pages given back once the process has settled (issue 49).
//!
//! glibc's malloc keeps what a burst freed (a cold start's lists and decisions, a round of
//! scans) for reuse and does not return it, so the resident set stays at the burst's peak while
//! the live heap is far below it. `malloc_trim(0)` returns the free whole pages of every arena;
//! it runs [`SETTLE_AFTER`] after the caches are loaded and then every [`TRIM_EVERY`].

use std::time::Duration;

/// How long after the caches are loaded the heap is first trimmed: the first full round of
/// reconciles runs in that time.
pub const SETTLE_AFTER: Duration = Duration::from_secs(60);

/// How often readiness is looked at until the caches are loaded.
const READY_POLL: Duration = Duration::from_millis(100);

/// How often the heap's free pages are given back after settling: a walk of malloc's free
/// lists, about a millisecond at 100 MB of heap.
pub const TRIM_EVERY: Duration = Duration::from_secs(300);

/// Once the caches are loaded (`readiness`) and [`SETTLE_AFTER`] has passed, gives the heap's
/// free pages back, then every [`TRIM_EVERY`]; logs what that did at debug level.
pub async fn trim_when_settled(readiness: super::http::Readiness) {
    while !readiness.is_ready() {
        tokio::time::sleep(READY_POLL).await;
    }
    tokio::time::sleep(SETTLE_AFTER).await;
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
