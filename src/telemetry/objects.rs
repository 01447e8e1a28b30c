//! The series of each ImageRepository and ImagePolicy, kept as one record per object and
//! encoded at scrape time: Flux's `gotk_reconcile_duration_seconds{kind,name,namespace}`,
//! `image_reflector_ready`, the repository's tags and last scan time, and the policy's info
//! series.
//!
//! One record instead of one prometheus-client `Family` per metric: each family kept its own
//! copy of the labels and a boxed metric per object, and a `Histogram` carries native-histogram
//! state besides its buckets; at 10,000 objects of each kind that was 23 MB, a record is a
//! third of it (docs/benchmarks-history.md). Updates of an existing record take the read lock and
//! atomics, as a family's did; only a new or deleted object takes the write lock.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};

mod encode;
mod records;
use records::Records;

/// Flux's 10 exponential buckets from 10 ms to 1800 s, as Go's
/// `prometheus.ExponentialBucketsRange(0.01, 1800, 10)`.
const BUCKETS: usize = 10;

fn upper_bounds() -> [f64; BUCKETS] {
    let (min, max) = (0.01_f64, 1800.0_f64);
    let factor = (max / min).powf(1.0 / (BUCKETS as f64 - 1.0));
    // `min × factor^i` with a float power, as Go computes it: the bounds print as Flux's do.
    std::array::from_fn(|i| min * factor.powf(i as f64))
}

/// Which object: its kind (`ImageRepository`, `ImagePolicy`), namespace and name.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Key {
    kind: Cow<'static, str>,
    namespace: Box<str>,
    name: Box<str>,
}

/// What a policy elects now: the labels of its info series.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Elected {
    pub image: String,
    pub tag: String,
    pub digest: String,
}

const UNSET: u8 = 0;

/// The `kind`, `name` and `namespace` labels.
fn object(k: &Key) -> [(&'static str, &str); 3] {
    [
        ("kind", k.kind.as_ref()),
        ("name", &k.name),
        ("namespace", &k.namespace),
    ]
}

/// A repository's series carry `name` and `namespace` only, as Flux's did.
fn repository(k: &Key) -> [(&'static str, &str); 2] {
    [("name", &k.name), ("namespace", &k.namespace)]
}

/// One object's series. Counts and values are atomics, so a reconcile updates them under the
/// map's read lock.
#[derive(Default)]
struct Record {
    /// Per bucket (not cumulative); the `+Inf` bucket is `count` minus their sum. 32 bits: a
    /// reconcile a second would take 136 years to wrap one, and every object keeps ten.
    buckets: [AtomicU32; BUCKETS],
    /// Seconds, as `f64` bits.
    sum: AtomicU64,
    count: AtomicU64,
    /// `UNSET`, 1 (not Ready) or 2 (Ready).
    ready: AtomicU8,
    /// The last successful scan: `UNSET` until there is one.
    scanned: AtomicU8,
    tags: AtomicU64,
    /// Unix seconds, as `f64` bits.
    last_scan: AtomicU64,
    elected: Mutex<Option<Box<Elected>>>,
    /// How many tags each of [`GATES`] holds back now (status.heldBack lists at most 10).
    held: [AtomicU8; GATES.len()],
}

/// The gates that hold tags back, as `status.heldBack` names them: the `gate` label's values.
pub const GATES: [&str; 5] = ["minAge", "platforms", "verify", "downgrade", "served"];

/// Every object's record.
#[derive(Clone, Default)]
pub struct ObjectSeries {
    records: Arc<RwLock<Records<Key, Record>>>,
    bounds: Arc<[f64; BUCKETS]>,
}

impl std::fmt::Debug for ObjectSeries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ObjectSeries")
    }
}

impl ObjectSeries {
    pub fn new() -> Self {
        ObjectSeries {
            records: Arc::default(),
            bounds: Arc::new(upper_bounds()),
        }
    }

    /// Runs `update` on the object's record, creating it first if needed.
    fn with(
        &self,
        kind: Cow<'static, str>,
        namespace: &str,
        name: &str,
        update: impl FnOnce(&Record),
    ) {
        let key = Key {
            kind,
            namespace: namespace.into(),
            name: name.into(),
        };
        if let Some(record) = self.read().get(&key) {
            return update(record);
        }
        let mut records = self.records.write().unwrap_or_else(|e| e.into_inner());
        update(records.get_or_insert(key));
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Records<Key, Record>> {
        // A panic elsewhere cannot leave a record half-written: every field is one atomic.
        self.records.read().unwrap_or_else(|e| e.into_inner())
    }

    /// One reconcile of the object took `seconds`.
    pub fn observe(&self, kind: Cow<'static, str>, namespace: &str, name: &str, seconds: f64) {
        let bucket = self.bounds.iter().position(|b| seconds <= *b);
        self.with(kind, namespace, name, |r| {
            if let Some(i) = bucket {
                r.buckets[i].fetch_add(1, Ordering::Relaxed);
            }
            let _ = r
                .sum
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                    Some((f64::from_bits(bits) + seconds).to_bits())
                });
            r.count.fetch_add(1, Ordering::Relaxed);
        });
    }

    /// Whether the object's Ready condition is True.
    pub fn set_ready(&self, kind: Cow<'static, str>, namespace: &str, name: &str, ready: bool) {
        self.with(kind, namespace, name, |r| {
            r.ready.store(1 + u8::from(ready), Ordering::Relaxed)
        });
    }

    /// An ImageRepository's last successful scan.
    pub fn set_scan(&self, namespace: &str, name: &str, tags: u64, scanned_at_unix: f64) {
        self.with(Cow::Borrowed("ImageRepository"), namespace, name, |r| {
            r.tags.store(tags, Ordering::Relaxed);
            r.last_scan
                .store(scanned_at_unix.to_bits(), Ordering::Relaxed);
            r.scanned.store(1, Ordering::Relaxed);
        });
    }

    /// What an ImagePolicy elects now; `None` removes its info series.
    pub fn set_elected(&self, namespace: &str, name: &str, elected: Option<Elected>) {
        self.with(Cow::Borrowed("ImagePolicy"), namespace, name, |r| {
            let mut current = r.elected.lock().unwrap_or_else(|e| e.into_inner());
            // Kept when unchanged: a copy made at every reconcile outlived the reconcile's
            // buffers around it, which the heap then could not reuse whole.
            if current.as_deref() != elected.as_ref() {
                *current = elected.map(Box::new);
            }
        });
    }

    /// How many tags an ImagePolicy's gates hold back now, one name per tag.
    pub fn set_held(&self, namespace: &str, name: &str, gates: &mut dyn Iterator<Item = &str>) {
        let mut counts = [0u8; GATES.len()];
        for gate in gates {
            if let Some(i) = GATES.iter().position(|g| *g == gate) {
                counts[i] = counts[i].saturating_add(1);
            }
        }
        self.with(Cow::Borrowed("ImagePolicy"), namespace, name, |r| {
            for (held, count) in r.held.iter().zip(counts) {
                held.store(count, Ordering::Relaxed);
            }
        });
    }

    /// Drops every series of a deleted object.
    pub fn forget(&self, kind: &str, namespace: &str, name: &str) {
        let key = Key {
            kind: Cow::Owned(kind.to_string()),
            namespace: namespace.into(),
            name: name.into(),
        };
        self.records
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `r/app` at `tag`.
    fn elected(tag: &str) -> Elected {
        Elected {
            image: "r/app".into(),
            tag: tag.into(),
            digest: "sha256:0".into(),
        }
    }

    #[test]
    fn an_unchanged_election_keeps_its_copy() {
        let s = ObjectSeries::new();
        let key = Key {
            kind: Cow::Borrowed("ImagePolicy"),
            namespace: "team".into(),
            name: "app".into(),
        };
        let held = |s: &ObjectSeries| {
            let records = s.read();
            let guard = records.get(&key).unwrap().elected.lock().unwrap();
            guard
                .as_deref()
                .map(|e| (e as *const Elected, e.tag.clone()))
        };
        s.set_elected("team", "app", Some(elected("1.0.0")));
        let (first, _) = held(&s).unwrap();
        s.set_elected("team", "app", Some(elected("1.0.0")));
        assert_eq!(held(&s).unwrap().0, first, "the same copy, not a new one");
        s.set_elected("team", "app", Some(elected("1.1.0")));
        assert_eq!(held(&s).unwrap().1, "1.1.0");
        s.set_elected("team", "app", None);
        assert!(held(&s).is_none());
        assert!(
            !text(&s).contains("image_reflector_policy_info{"),
            "{}",
            text(&s)
        );
    }

    #[test]
    fn a_table_slot_is_a_key_and_an_index() {
        // The table keeps up to twice as many slots as records: a record inline in each made
        // the table 3.2 MB at 4,000 repositories and policies.
        assert_eq!(std::mem::size_of::<(Key, usize)>(), 64);
        assert!(std::mem::size_of::<Record>() > 64);
    }

    #[test]
    fn the_buckets_are_fluxs() {
        let b = upper_bounds();
        assert!(
            (b[0] - 0.01).abs() < 1e-12 && (b[9] - 1800.0).abs() < 1e-9,
            "{b:?}"
        );
        assert!(b.windows(2).all(|w| w[0] < w[1]));
    }

    fn text(series: &ObjectSeries) -> String {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(series.clone()));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        text
    }

    #[test]
    fn durations_are_cumulative_buckets_with_inf_sum_and_count() {
        let s = ObjectSeries::new();
        for seconds in [0.005, 5.0, 5000.0] {
            s.observe("ImagePolicy".into(), "team", "app", seconds);
        }
        let text = text(&s);
        let labels = "kind=\"ImagePolicy\",name=\"app\",namespace=\"team\"";
        for line in [
            format!("gotk_reconcile_duration_seconds_sum{{{labels}}} 5005.005"),
            format!("gotk_reconcile_duration_seconds_count{{{labels}}} 3"),
            format!("gotk_reconcile_duration_seconds_bucket{{le=\"0.01\",{labels}}} 1"),
            // The last finite bound, 1800 as Go's float power computes it.
            format!(
                "gotk_reconcile_duration_seconds_bucket{{le=\"1799.9999999999982\",{labels}}} 2"
            ),
            format!("gotk_reconcile_duration_seconds_bucket{{le=\"+Inf\",{labels}}} 3"),
        ] {
            assert!(text.contains(&line), "{line} in\n{text}");
        }
        // Nothing else was set: no Ready, scan or info series.
        assert!(!text.contains("image_reflector_"), "{text}");
    }

    #[test]
    fn a_new_election_replaces_the_info_series_and_forget_drops_the_record() {
        let s = ObjectSeries::new();
        s.set_elected("team", "app", Some(elected("1.0.0")));
        s.set_ready("ImagePolicy".into(), "team", "app", false);
        s.set_elected("team", "app", Some(elected("1.1.0")));
        let text = text(&s);
        assert_eq!(
            text.matches("image_reflector_policy_info{").count(),
            1,
            "{text}"
        );
        assert!(text.contains("tag=\"1.1.0\""), "{text}");
        assert!(
            text.contains(
                "image_reflector_ready{kind=\"ImagePolicy\",name=\"app\",namespace=\"team\"} 0"
            ),
            "{text}"
        );
        s.forget("ImagePolicy", "team", "app");
        assert!(!self::text(&s).contains("app"), "{}", self::text(&s));
    }

    /// Held-back tags per gate, only for the gates that hold one; a gate not named is not
    /// counted (the label's values are bounded).
    #[test]
    fn held_tags_are_counted_by_gate() {
        let s = ObjectSeries::new();
        let gates = ["verify", "minAge", "verify", "undeclared"];
        s.set_held("team", "app", &mut gates.into_iter());
        let text = text(&s);
        let line = |gate: &str, n: u8| {
            format!("image_reflector_held_back_tags{{gate=\"{gate}\",name=\"app\",namespace=\"team\"}} {n}")
        };
        assert!(text.contains(&line("verify", 2)), "{text}");
        assert!(text.contains(&line("minAge", 1)), "{text}");
        assert!(
            !text.contains("platforms") && !text.contains("undeclared"),
            "{text}"
        );
        s.set_held("team", "app", &mut std::iter::empty());
        assert!(!self::text(&s).contains("held_back"), "{}", self::text(&s));
    }

    #[test]
    fn a_record_is_a_fraction_of_a_family_entry() {
        // What the records hold per object, beside the key: the point of this file.
        assert!(
            std::mem::size_of::<Record>() <= 96,
            "{}",
            std::mem::size_of::<Record>()
        );
    }
}
