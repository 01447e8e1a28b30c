//! Which watched objects are news to a reconcile: kube's `predicate_filter`, with a compact
//! memory. kube remembers each object under copies of its name, namespace and UID (three
//! strings: with its table share, about 380 bytes an object per filter, and a policy and its
//! repository pass three filters; docs/benchmarks-history.md). Here an object is remembered under a
//! hash of the three, keyed at random per process so that no tenant can pick names that
//! collide with another's, in 24 bytes. The rule is kube's: an object passes when its property
//! differs from the one last seen for the same object (a new UID is a new object), when that
//! was seen longer than [`TTL`] ago, or when it has no property.

use futures::{future, Stream, TryStreamExt};
use kube::api::ObjectMeta;
use kube::Resource;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

/// How long a property seen is remembered: kube's default.
pub const TTL: Duration = Duration::from_secs(3600);

/// Passes on the objects of `stream` whose `property` changed (see the module's rule).
pub fn changed<K: Resource, E>(
    stream: impl Stream<Item = Result<K, E>>,
    property: impl Fn(&K) -> Option<u64>,
) -> impl Stream<Item = Result<K, E>> {
    let mut seen = Seen::new(Instant::now());
    stream.try_filter(move |obj| {
        let news = seen.news(obj.meta(), property(obj), Instant::now());
        future::ready(news)
    })
}

/// The property last seen of each object, and when.
struct Seen {
    keys: RandomState,
    by_object: HashMap<u64, Entry>,
    /// What `Entry::at` counts from.
    start: Instant,
    /// When entries older than [`TTL`] were last dropped.
    swept: Instant,
}

/// One object's property, and when it was seen (seconds from the start).
#[derive(Clone, Copy)]
struct Entry {
    property: u64,
    at: u32,
}

impl Seen {
    fn new(start: Instant) -> Seen {
        Seen {
            keys: RandomState::new(),
            by_object: HashMap::new(),
            start,
            swept: start,
        }
    }

    /// Whether an object with `meta` and `property` seen at `now` is news, remembering it.
    fn news(&mut self, meta: &ObjectMeta, property: Option<u64>, now: Instant) -> bool {
        let at = now.saturating_duration_since(self.start).as_secs();
        let at = u32::try_from(at).unwrap_or(u32::MAX);
        let ttl = TTL.as_secs() as u32;
        if now.saturating_duration_since(self.swept) >= TTL {
            // Objects deleted or not seen for the TTL: memory only, the rule below holds anyway.
            self.by_object.retain(|_, e| at.saturating_sub(e.at) < ttl);
            self.swept = now;
        }
        let Some(property) = property else {
            return true;
        };
        let object = (&meta.namespace, &meta.name, &meta.uid);
        let entry = Entry { property, at };
        match self.by_object.insert(self.keys.hash_one(object), entry) {
            Some(last) => last.property != property || at.saturating_sub(last.at) >= ttl,
            None => true,
        }
    }

    /// Objects remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_object.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(name: &str, uid: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some("team".into()),
            uid: Some(uid.into()),
            ..Default::default()
        }
    }

    #[test]
    fn an_object_passes_when_its_property_changes_and_not_when_it_repeats() {
        let start = Instant::now();
        let mut seen = Seen::new(start);
        let (a, b) = (meta("a", "1"), meta("b", "2"));
        assert!(seen.news(&a, Some(1), start));
        assert!(
            seen.news(&b, Some(1), start),
            "another object's property is not this one's"
        );
        assert!(!seen.news(&a, Some(1), start));
        assert!(seen.news(&a, Some(2), start));
        assert!(!seen.news(&a, Some(2), start));
        // Recreated under the same name: a new object.
        assert!(seen.news(&meta("a", "3"), Some(2), start));
        // No property: always news, and not remembered.
        assert!(seen.news(&meta("c", "4"), None, start));
        assert!(seen.news(&meta("c", "4"), None, start));
        assert_eq!(seen.len(), 3);
    }

    #[test]
    fn a_property_seen_longer_than_the_ttl_ago_is_news_again_and_forgotten_objects_go() {
        let start = Instant::now();
        let mut seen = Seen::new(start);
        let a = meta("a", "1");
        assert!(seen.news(&a, Some(1), start));
        let almost = start + TTL - Duration::from_secs(1);
        assert!(!seen.news(&a, Some(1), almost));
        assert!(seen.news(&a, Some(1), almost + TTL));
        // An object not seen for the TTL is dropped at the next sweep.
        for i in 0..100 {
            seen.news(&meta(&format!("gone-{i}"), "x"), Some(1), almost + TTL);
        }
        assert_eq!(seen.len(), 101);
        let later = almost + TTL + TTL + Duration::from_secs(1);
        assert!(!seen.news(&a, Some(1), later - Duration::from_secs(2)));
        seen.news(&a, Some(1), later);
        assert_eq!(seen.len(), 1);
    }

    #[test]
    fn an_object_is_remembered_in_24_bytes() {
        assert_eq!(std::mem::size_of::<(u64, Entry)>(), 24);
    }

    #[tokio::test]
    async fn the_stream_passes_news_and_errors() {
        use futures::StreamExt;
        use k8s_openapi::api::core::v1::ConfigMap;
        let object = |name, uid| ConfigMap {
            metadata: meta(name, uid),
            ..Default::default()
        };
        let events: Vec<Result<ConfigMap, &str>> = vec![
            Ok(object("a", "1")),
            Ok(object("a", "1")),
            Err("watch failed"),
            Ok(object("b", "2")),
        ];
        let passed: Vec<_> = changed(futures::stream::iter(events), |_| Some(7))
            .collect()
            .await;
        let names: Vec<_> = passed
            .iter()
            .map(|r| r.as_ref().map(|m| m.metadata.name.clone().unwrap()))
            .collect();
        assert_eq!(
            names,
            [Ok("a".into()), Err(&"watch failed"), Ok("b".into())]
        );
    }
}
