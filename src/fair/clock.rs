//! The time one piece of work spent waiting for fair slots (and a host's backoff) rather than
//! for a registry's answers.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The time one piece of work (a scan) spent waiting for slots and backoff rather than for a
/// registry's answers: a scan that only waits is not slow (controller/image_repository/
/// running_scans.rs), or one tenant's queue would make a host "slow" for everyone.
#[derive(Debug, Clone, Default)]
pub struct WaitClock(Arc<Mutex<Waits>>);

#[derive(Debug, Default)]
struct Waits {
    waited: Duration,
    /// Waits going on now, and since when the first began.
    now: usize,
    since: Option<Instant>,
}

/// One wait going on; it ends when dropped.
#[derive(Debug)]
pub struct Waiting(WaitClock);

impl WaitClock {
    fn lock(&self) -> std::sync::MutexGuard<'_, Waits> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A wait begins now.
    pub fn start(&self) -> Waiting {
        let mut waits = self.lock();
        if waits.now == 0 {
            waits.since = Some(Instant::now());
        }
        waits.now += 1;
        Waiting(self.clone())
    }

    /// A clock whose one wait began at `since` (tests of what waited long).
    #[doc(hidden)]
    pub fn waiting_since(since: Instant) -> (WaitClock, Waiting) {
        let clock = WaitClock::default();
        let waiting = clock.start();
        clock.lock().since = Some(since);
        (clock, waiting)
    }

    /// The time spent waiting until `now` (waits at once counted once).
    pub fn waited(&self, now: Instant) -> Duration {
        let waits = self.lock();
        let current = waits
            .since
            .filter(|_| waits.now > 0)
            .map_or(Duration::ZERO, |since| now.saturating_duration_since(since));
        waits.waited + current
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut waits = self.0.lock();
        waits.now -= 1;
        if waits.now == 0 {
            if let Some(since) = waits.since.take() {
                waits.waited += since.elapsed();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits at once count once; a finished wait keeps its time.
    #[test]
    fn a_wait_clock_counts_overlapping_waits_once() {
        let clock = WaitClock::default();
        let start = Instant::now();
        let first = clock.start();
        let second = clock.start();
        std::thread::sleep(Duration::from_millis(30));
        drop(first);
        std::thread::sleep(Duration::from_millis(30));
        drop(second);
        let waited = clock.waited(Instant::now());
        assert!(waited >= Duration::from_millis(60), "{waited:?}");
        assert!(waited <= start.elapsed(), "{waited:?}");
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(clock.waited(Instant::now()), waited, "no wait goes on");
    }
}
