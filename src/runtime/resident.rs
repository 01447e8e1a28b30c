//! What the process gives back once it has started and once it has settled (issue 49).
//!
//! The executable's start-up code: measured on an idle controller, 10.8 MB of the executable's
//! code and 3.2 MB of its read-only data were resident, of which 0.4 and 0.1 MB were touched
//! in 30 s of idleness; the rest ran once, at start-up and in the first reconciles (clap, TLS
//! set-up, the CRD check, the first LIST). It is given back (`exe_pages`) as the controllers
//! start, before the caches load (a restarted process's peak was there: the start-up's 17.5
//! MiB of pages under the caches' first decode), again as soon as the caches are loaded, before
//! the first round of reconciles, whose peak it would add to, and once that round has settled;
//! whatever runs again is mapped back in as it runs.
//!
//! The heap too: glibc's malloc keeps what a burst freed (a cold start's lists and decisions,
//! a round of scans) for reuse and does not return it, so the resident set stays at the
//! burst's peak while the live heap is far below it. `malloc_trim(0)` returns the free whole
//! pages of every arena; it runs at settling and then every [`TRIM_EVERY`].

use std::time::Duration;

/// How long after the caches are loaded the start-up pages are given back: the first full
/// round of reconciles runs in that time.
pub const SETTLE_AFTER: Duration = Duration::from_secs(60);

/// How often readiness is looked at until the caches are loaded: the first round of
/// reconciles starts then, and each of its seconds maps more code back in.
const READY_POLL: Duration = Duration::from_millis(100);

/// How often the heap's free pages are given back after settling: a walk of malloc's free
/// lists, about a millisecond at 100 MB of heap.
pub const TRIM_EVERY: Duration = Duration::from_secs(300);

/// Gives the executable's start-up pages back as the controllers start and once the caches
/// are loaded (`readiness`); once [`SETTLE_AFTER`] has passed, those of the first reconciles,
/// and the heap's free pages then and every [`TRIM_EVERY`]; logs what that did.
pub async fn give_back_when_settled(readiness: super::http::Readiness) {
    give_back_executable("the controllers are set up").await;
    while !readiness.is_ready() {
        tokio::time::sleep(READY_POLL).await;
    }
    give_back_executable("the caches are loaded").await;
    tokio::time::sleep(SETTLE_AFTER).await;
    give_back_executable("the first reconciles have settled").await;
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

/// At debug level: a line logged at info right after would map the logging code back in, about
/// 2.3 MB of it (measured on an idle controller: 9.4 against 7.1 MB).
async fn give_back_executable(when: &str) {
    match tokio::task::spawn_blocking(super::exe_pages::give_back).await {
        Ok(Some(given)) => tracing::debug!(
            resident_before_kib = given.before_kib,
            resident_after_kib = given.after_kib,
            "{when}: the executable's pages given back"
        ),
        _ => tracing::debug!("{when}: the executable's pages could not be read"),
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
