//! How many Event objects one object may cause, as client-go's recorder (which Flux's
//! controllers use) limits them: a registry alternating success and 400 with a fresh 30 KB
//! message each time made 290 Events and 4.4 MB of messages in 3 minutes from 10
//! repositories. Per object:
//! - **a burst, then a slow refill**: at most [`BURST`] Events, then one per [`REFILL_EVERY`]
//!   (client-go's spam filter: 25, then one per 5 minutes); what is over is not written (the
//!   log and the status still say it);
//! - **similar events merged**: from the [`SIMILAR_AFTER`]th Event of one type and reason
//!   within [`SIMILAR_WINDOW`] on, whatever their messages, one Event is updated (its count
//!   and last time) with the message `(combined from similar events): <latest>` (client-go's
//!   aggregator: 10 within 10 minutes);
//! - **messages cut** to 4 KiB (`outcome/cut.rs`; a condition keeps up to 32 KiB).
//!
//! Flux notifications keep their own rules (the repeat interval, the notification-controller's
//! own rate limit): this decides only what is written to the API server.

use lru::LruCache;
use std::hash::{BuildHasher, RandomState};
use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Events one object may cause at once.
pub const BURST: u32 = 25;
/// Then one more every this long.
pub const REFILL_EVERY: Duration = Duration::from_secs(5 * 60);
/// Events of one type and reason within [`SIMILAR_WINDOW`] from which on they are merged.
pub const SIMILAR_AFTER: u32 = 10;
pub const SIMILAR_WINDOW: Duration = Duration::from_secs(10 * 60);
// Event messages are cut as log lines are (`outcome/cut.rs`).
use crate::controller::outcome::cut::cut_message;
/// Objects whose Event history is kept; past that the least recently noted goes (it starts a
/// fresh burst, as after a restart).
pub const MAX_OBJECTS: usize = 8192;

/// The prefix of a merged Event's message, client-go's.
pub const COMBINED: &str = "(combined from similar events): ";

/// What to do with one Event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Over the object's rate: not written.
    Drop,
    /// Write a new Event with this message.
    Create(String),
    /// Update the merged Event `name` (or create it, `None`: the first merged one) to `count`
    /// with this message.
    Combine {
        name: Option<String>,
        count: i32,
        message: String,
    },
}

/// The Events of one type and reason within the window. Each object has one of these per
/// (type, reason) noted in the last [`SIMILAR_WINDOW`], most often one: the history is kept
/// small because a cold start notes the first Event of every object at once (it was about 680
/// bytes an object with a map per object and strings for its keys; docs/benchmarks-history.md).
#[derive(Debug)]
struct Similar {
    /// The hash of the type and reason.
    of: u64,
    /// When each Event of the window was noted (at most [`SIMILAR_AFTER`] kept).
    times: Vec<Instant>,
    /// The merged Event's name and count, once there is one.
    merged: Option<(Option<String>, i32)>,
}

#[derive(Debug)]
struct History {
    tokens: f64,
    refilled: Instant,
    similar: Vec<Similar>,
}

/// The Event history of every object, bounded. Objects and (type, reason) pairs are known by
/// hashes, keyed at random per process so that no tenant can pick names that collide with
/// another's.
pub struct EventLimits {
    keys: RandomState,
    objects: Mutex<LruCache<u64, History>>,
}

impl Default for EventLimits {
    fn default() -> Self {
        EventLimits {
            keys: RandomState::new(),
            objects: Mutex::new(LruCache::new(
                NonZeroUsize::new(MAX_OBJECTS).expect("a bound above zero"),
            )),
        }
    }
}

/// Pushes without the spare room `Vec` leaves (its first push makes room for four).
fn push_exact<T>(list: &mut Vec<T>, item: T) {
    list.reserve_exact(1);
    list.push(item);
}

impl EventLimits {
    /// What to do with an Event of `type_` and `reason` about the object `key` at `now`.
    pub fn note(
        &self,
        key: &str,
        type_: &str,
        reason: &str,
        message: &str,
        now: Instant,
    ) -> Verdict {
        let of = self.keys.hash_one((type_, reason));
        let mut objects = self.objects.lock().unwrap_or_else(|p| p.into_inner());
        let history = objects.get_or_insert_mut(self.keys.hash_one(key), || History {
            tokens: f64::from(BURST),
            refilled: now,
            similar: Vec::new(),
        });
        let refill = now
            .saturating_duration_since(history.refilled)
            .as_secs_f64()
            / REFILL_EVERY.as_secs_f64();
        history.tokens = (history.tokens + refill).min(f64::from(BURST));
        history.refilled = now;
        if history.tokens < 1.0 {
            return Verdict::Drop;
        }
        history.tokens -= 1.0;
        history.similar.retain(|s| {
            s.times
                .last()
                .is_some_and(|t| now.saturating_duration_since(*t) < SIMILAR_WINDOW)
        });
        let at = match history.similar.iter().position(|s| s.of == of) {
            Some(at) => at,
            None => {
                let similar = Similar {
                    of,
                    times: Vec::new(),
                    merged: None,
                };
                push_exact(&mut history.similar, similar);
                history.similar.len() - 1
            }
        };
        let similar = &mut history.similar[at];
        similar
            .times
            .retain(|t| now.saturating_duration_since(*t) < SIMILAR_WINDOW);
        if similar.times.len() >= SIMILAR_AFTER as usize {
            similar.times.remove(0);
        }
        push_exact(&mut similar.times, now);
        if similar.times.len() < SIMILAR_AFTER as usize && similar.merged.is_none() {
            return Verdict::Create(cut_message(message));
        }
        let (name, count) = similar.merged.get_or_insert((None, 0));
        *count += 1;
        Verdict::Combine {
            name: name.clone(),
            count: *count,
            message: cut_message(&format!("{COMBINED}{message}")),
        }
    }

    /// The merged Event of `key`'s `type_` and `reason` was written as `name`.
    pub fn merged_as(&self, key: &str, type_: &str, reason: &str, name: String) {
        let of = self.keys.hash_one((type_, reason));
        let mut objects = self.objects.lock().unwrap_or_else(|p| p.into_inner());
        let merged = objects
            .get_mut(&self.keys.hash_one(key))
            .and_then(|h| h.similar.iter_mut().find(|s| s.of == of))
            .and_then(|s| s.merged.as_mut());
        if let Some((written, _)) = merged {
            *written = Some(name);
        }
    }

    /// Forgets a deleted object.
    pub fn forget(&self, key: &str) {
        self.objects
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop(&self.keys.hash_one(key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The documented numbers (docs/security.md), written out: 25 at once, then one per five
    /// minutes; from the tenth similar Event in ten minutes on, one merged Event; 4 KiB.
    #[test]
    fn a_burst_then_one_every_five_minutes() {
        let limits = EventLimits::default();
        let t0 = Instant::now();
        let mut written = 0;
        for i in 0..100 {
            // Alternating reasons, fresh messages: 290 Events in 3 minutes before.
            let reason = if i % 2 == 0 { "Succeeded" } else { "Failed" };
            if limits.note("r/ns/a", "Normal", reason, &format!("m{i}"), t0) != Verdict::Drop {
                written += 1;
            }
        }
        assert_eq!(written, 25);
        let later = t0 + Duration::from_secs(5 * 60);
        assert_ne!(
            limits.note("r/ns/a", "Warning", "Failed", "m", later),
            Verdict::Drop
        );
        assert_eq!(
            limits.note("r/ns/a", "Warning", "Failed", "m", later),
            Verdict::Drop
        );
        assert_ne!(
            limits.note("r/ns/b", "Warning", "Failed", "m", t0),
            Verdict::Drop,
            "per object"
        );
    }

    #[test]
    fn similar_events_are_merged_from_the_tenth_on() {
        let limits = EventLimits::default();
        let t0 = Instant::now();
        for i in 0..9 {
            let at = t0 + Duration::from_secs(i);
            let verdict = limits.note("k", "Warning", "Failed", &format!("m{i}"), at);
            assert_eq!(verdict, Verdict::Create(format!("m{i}")));
        }
        let tenth = limits.note("k", "Warning", "Failed", "m9", t0 + Duration::from_secs(9));
        assert_eq!(
            tenth,
            Verdict::Combine {
                name: None,
                count: 1,
                message: "(combined from similar events): m9".into()
            }
        );
        limits.merged_as("k", "Warning", "Failed", "app.1".into());
        let next = limits.note(
            "k",
            "Warning",
            "Failed",
            "m10",
            t0 + Duration::from_secs(10),
        );
        assert!(
            matches!(&next, Verdict::Combine { name: Some(n), count: 2, .. } if n == "app.1"),
            "{next:?}"
        );
        // Another reason is not similar; after ten quiet minutes the merging ends.
        assert_eq!(
            limits.note(
                "k",
                "Normal",
                "Succeeded",
                "ok",
                t0 + Duration::from_secs(11)
            ),
            Verdict::Create("ok".into())
        );
        let quiet = t0 + Duration::from_secs(11 + 600);
        assert_eq!(
            limits.note("k", "Warning", "Failed", "again", quiet),
            Verdict::Create("again".into())
        );
    }

    #[test]
    fn messages_are_cut_to_four_kib() {
        let long = "é".repeat(30_000);
        let cut = cut_message(&long);
        assert!(cut.len() <= 4096 && cut.ends_with("(cut)"), "{}", cut.len());
        assert_eq!(cut_message("short"), "short");
    }

    /// A cold start notes every object's first Event at once: each history is one entry with
    /// one time, without spare room.
    #[test]
    fn a_first_event_is_kept_in_little() {
        let limits = EventLimits::default();
        let t0 = Instant::now();
        limits.note("ImagePolicy/team/app", "Normal", "Succeeded", "m", t0);
        {
            let mut objects = limits.objects.lock().unwrap();
            let (_, history) = objects.peek_lru().unwrap();
            assert_eq!(history.similar.capacity(), 1);
            assert_eq!(history.similar[0].times.capacity(), 1);
            assert_eq!(std::mem::size_of::<(u64, History)>(), 56);
            drop(objects.pop_lru());
        }
        limits.note("ImagePolicy/team/app", "Normal", "Succeeded", "m", t0);
        limits.forget("ImagePolicy/team/app");
        assert_eq!(
            limits.objects.lock().unwrap().len(),
            0,
            "forgotten by its key"
        );
    }

    #[test]
    fn histories_are_bounded() {
        let limits = EventLimits::default();
        let t0 = Instant::now();
        for i in 0..8192 + 100 {
            limits.note(&format!("o{i}"), "Normal", "Succeeded", "m", t0);
        }
        assert_eq!(limits.objects.lock().unwrap().len(), 8192);
    }
}
