//! The allocator setting every subcommand runs with (docs/benchmarks-history.md measures it).
//!
//! glibc's malloc gives each thread that allocates under contention an arena of its own, up to
//! eight per core, and memory freed in one arena is not reused by another. The controller's
//! work moves between the runtime's workers and a blocking pool that grows to a dozen threads
//! in a burst (a restart reconciles every object at once), so freed memory piled up in many
//! arenas: on 1,000 repositories of 10,000 tags, two arenas took peak RSS from 55 to 47 MiB at
//! a cold start and idle RSS from 47 to 39 MiB, at no measurable cost in time.

/// The arenas allowed, unless `MALLOC_ARENA_MAX` says otherwise.
pub const MALLOC_ARENAS: i32 = 2;

/// Allocations from this size on are mapped on their own and returned to the system when freed:
/// a LIST page or a scrape's buffer then leaves no hole in an arena. glibc's default threshold
/// grows with every such free, up to 32 MiB, which stops doing that. 10,000 objects: a warm
/// restart peaked 2 MiB lower.
pub const MMAP_THRESHOLD: i32 = 256 * 1024;

/// Limits glibc's malloc arenas and fixes its mmap threshold; called first in `main`, before any
/// thread exists. An operator's `MALLOC_ARENA_MAX` or `MALLOC_MMAP_THRESHOLD_` (read by glibc
/// itself) wins.
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets an allocator parameter; no thread allocates concurrently
        // this early in main.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS) };
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        // SAFETY: as above.
        unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) };
    }
}
