//! A set of objects kept by hash: what a process remembers of each object it has seen since
//! start (a policy's first reconcile, a repository's first scan), in 8 bytes rather than the
//! object's name and namespace (about 100 bytes an object in each set at 4,000;
//! docs/benchmarks-history.md). The hashes are keyed at random per process, so no tenant can pick
//! names that collide with another's; two names of one process collide with a chance of about
//! one in 10^11 at 10,000 objects.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hash, RandomState};

#[derive(Debug, Default)]
pub struct SeenSet {
    keys: RandomState,
    hashes: HashSet<u64>,
}

impl SeenSet {
    /// Adds `name`; whether it was new.
    pub fn insert(&mut self, name: &(impl Hash + ?Sized)) -> bool {
        self.hashes.insert(self.keys.hash_one(name))
    }

    pub fn contains(&self, name: &(impl Hash + ?Sized)) -> bool {
        self.hashes.contains(&self.keys.hash_one(name))
    }

    pub fn remove(&mut self, name: &(impl Hash + ?Sized)) -> bool {
        self.hashes.remove(&self.keys.hash_one(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kept_by_hash_alone() {
        let mut seen = SeenSet::default();
        assert!(seen.insert("ImagePolicy/team/app"));
        assert!(!seen.insert("ImagePolicy/team/app"), "seen already");
        assert!(seen.contains("ImagePolicy/team/app"));
        assert!(!seen.contains("ImagePolicy/team/other"));
        assert!(seen.remove("ImagePolicy/team/app"));
        assert!(seen.hashes.is_empty());
        // Keyed per set: another set hashes the same name otherwise.
        let other = SeenSet::default();
        let name = "ImagePolicy/team/app";
        assert_ne!(other.keys.hash_one(name), seen.keys.hash_one(name));
        seen.insert(name);
        assert_eq!(seen.hashes.len(), 1);
    }
}
