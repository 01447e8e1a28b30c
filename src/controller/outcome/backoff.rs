//! Per-object exponential backoff after failures, between `--min-retry-delay` and
//! `--max-retry-delay` (Flux's workqueue rate limiter: min × 2^failures), reset on success.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// Failure counts per object key.
#[derive(Debug)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    failures: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    pub fn new(min: Duration, max: Duration) -> Self {
        Backoff {
            min,
            max: max.max(min),
            failures: Mutex::default(),
        }
    }

    /// Counts a failure of `key` and returns how long to wait before the next try.
    pub fn next_delay(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().expect("backoff lock");
        let count = failures.entry(key.to_string()).or_insert(0);
        let delay = self
            .min
            .checked_mul(1u32.checked_shl(*count).unwrap_or(u32::MAX))
            .unwrap_or(self.max)
            .min(self.max);
        *count = count.saturating_add(1);
        delay
    }

    /// Forgets the failures of `key` (after a success, or when it is deleted).
    pub fn reset(&self, key: &str) {
        self.failures.lock().expect("backoff lock").remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_min_to_max_and_resets() {
        let b = Backoff::new(Duration::from_millis(750), Duration::from_secs(5));
        let delays: Vec<u128> = (0..6).map(|_| b.next_delay("a").as_millis()).collect();
        assert_eq!(delays, [750, 1500, 3000, 5000, 5000, 5000]);
        assert_eq!(b.next_delay("b").as_millis(), 750, "per object");
        b.reset("a");
        assert_eq!(b.next_delay("a").as_millis(), 750);
        for _ in 0..100 {
            b.next_delay("c");
        }
        assert_eq!(b.next_delay("c"), Duration::from_secs(5), "no overflow");
    }
}
