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
//! - **messages cut** to [`MAX_EVENT_MESSAGE`] bytes (a condition keeps up to 32 KiB).
//!
//! Flux notifications keep their own rules (the repeat interval, the notification-controller's
//! own rate limit): this decides only what is written to the API server.

use lru::LruCache;
use std::collections::HashMap;
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
/// The longest Event message written.
pub const MAX_EVENT_MESSAGE: usize = 4096;
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

#[derive(Debug)]
struct Similar {
    /// When each Event of the window was noted (at most [`SIMILAR_AFTER`] kept).
    times: Vec<Instant>,
    /// The merged Event's name and count, once there is one.
    merged: Option<(Option<String>, i32)>,
}

#[derive(Debug)]
struct History {
    tokens: f64,
    refilled: Instant,
    /// Per (type, reason).
    similar: HashMap<(String, String), Similar>,
}

/// The Event history of every object, bounded.
pub struct EventLimits {
    objects: Mutex<LruCache<String, History>>,
}

impl Default for EventLimits {
    fn default() -> Self {
        EventLimits {
            objects: Mutex::new(LruCache::new(
                NonZeroUsize::new(MAX_OBJECTS).expect("a bound above zero"),
            )),
        }
    }
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
        let mut objects = self.objects.lock().unwrap_or_else(|p| p.into_inner());
        let history = objects.get_or_insert_mut(key.to_string(), || History {
            tokens: f64::from(BURST),
            refilled: now,
            similar: HashMap::new(),
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
        history.similar.retain(|_, s| {
            s.times
                .last()
                .is_some_and(|t| now.saturating_duration_since(*t) < SIMILAR_WINDOW)
        });
        let similar = history
            .similar
            .entry((type_.to_string(), reason.to_string()))
            .or_insert_with(|| Similar {
                times: Vec::new(),
                merged: None,
            });
        similar
            .times
            .retain(|t| now.saturating_duration_since(*t) < SIMILAR_WINDOW);
        if similar.times.len() >= SIMILAR_AFTER as usize {
            similar.times.remove(0);
        }
        similar.times.push(now);
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
        let mut objects = self.objects.lock().unwrap_or_else(|p| p.into_inner());
        let merged = objects
            .get_mut(key)
            .and_then(|h| h.similar.get_mut(&(type_.to_string(), reason.to_string())))
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
            .pop(key);
    }
}

/// `message` within [`MAX_EVENT_MESSAGE`] bytes, cut at a character boundary and marked.
pub fn cut_message(message: &str) -> String {
    if message.len() <= MAX_EVENT_MESSAGE {
        return message.to_string();
    }
    const MARK: &str = " … (cut)";
    let mut end = MAX_EVENT_MESSAGE - MARK.len();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{MARK}", &message[..end])
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
