//! What a reconcile's failure line may cost the log: a registry's message is cut as an Event's
//! is (4 KiB, marked), and the same failure of the same object is written once per
//! [`REPEAT_INTERVAL`], the next line saying how many were left out. 4,564 failures of one
//! tenant's registry wrote 139 MB in 4.6 minutes (30 KB a line) before (issue 72).

use super::cut::cut_message;
use lru::LruCache;
use std::hash::BuildHasher;
use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long the same failure line of one object is written once.
pub const REPEAT_INTERVAL: Duration = Duration::from_secs(600);
/// Objects whose last failure line is remembered (the least recent forgotten first: a
/// forgotten one only logs once more).
const OBJECTS: usize = 4096;

/// The last failure line of each object: its hash, when it was written, how many identical
/// ones were left out since.
pub struct Repeats {
    lines: Mutex<LruCache<String, (u64, Instant, u32)>>,
    hasher: std::hash::RandomState,
}

impl Default for Repeats {
    fn default() -> Self {
        Repeats {
            lines: Mutex::new(LruCache::new(NonZeroUsize::new(OBJECTS).expect("not zero"))),
            hasher: std::hash::RandomState::new(),
        }
    }
}

impl Repeats {
    /// The line to write for `key`'s failure `message` at `now` (cut to 4 KiB), or `None`
    /// when the same line was written within [`REPEAT_INTERVAL`].
    pub fn admit(&self, key: &str, message: &str, now: Instant) -> Option<String> {
        let hash = self.hasher.hash_one(message);
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let left_out = match lines.get_mut(key) {
            Some((same, at, skipped))
                if *same == hash && now.saturating_duration_since(*at) < REPEAT_INTERVAL =>
            {
                *skipped += 1;
                return None;
            }
            Some((_, _, skipped)) => *skipped,
            None => 0,
        };
        lines.put(key.to_string(), (hash, now, 0));
        let line = cut_message(message);
        Some(match left_out {
            0 => line,
            n => format!("{line} ({n} identical lines left out before this one)"),
        })
    }

    /// Forgets `key`'s failure: its next failure is written whatever it says (after a success).
    pub fn clear(&self, key: &str) {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        lines.pop(key);
    }
}

/// The process's memory of failure lines: one log, one memory.
pub fn repeats() -> &'static Repeats {
    static REPEATS: std::sync::OnceLock<Repeats> = std::sync::OnceLock::new();
    REPEATS.get_or_init(Repeats::default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_failure_is_written_once_per_interval() {
        let repeats = Repeats::default();
        let t0 = Instant::now();
        let failing = "GET https://r.example/v2/: 500 Internal Server Error";
        assert_eq!(
            repeats.admit("ImageRepository/a/b", failing, t0),
            Some(failing.into())
        );
        for s in 1..5 {
            let at = t0 + Duration::from_secs(s);
            assert_eq!(repeats.admit("ImageRepository/a/b", failing, at), None);
        }
        // Another object, another message: written.
        assert!(repeats.admit("ImageRepository/a/c", failing, t0).is_some());
        let other = "another failure";
        let at = t0 + Duration::from_secs(10);
        assert_eq!(
            repeats.admit("ImageRepository/a/b", other, at),
            Some(format!(
                "{other} (4 identical lines left out before this one)"
            ))
        );
        // Once the interval is over, the same line again.
        let later = at + REPEAT_INTERVAL;
        assert_eq!(
            repeats.admit("ImageRepository/a/b", other, later),
            Some(other.into())
        );
        assert_eq!(repeats.admit("ImageRepository/a/b", other, later), None);
        // After a success the next failure is written.
        repeats.clear("ImageRepository/a/b");
        assert!(repeats.admit("ImageRepository/a/b", other, later).is_some());
    }

    #[test]
    fn a_long_message_is_cut_as_an_events() {
        let repeats = Repeats::default();
        let long = "x".repeat(30 << 10);
        let line = repeats.admit("k", &long, Instant::now()).unwrap();
        assert!(
            line.len() <= 4096 && line.ends_with("(cut)"),
            "{}",
            line.len()
        );
    }
}
