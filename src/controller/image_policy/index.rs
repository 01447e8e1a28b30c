//! Which policies refer to which repository, kept from the policies' watch: a repository's
//! change re-triggers its policies, a namespace's label change its cross-namespace policies,
//! and the start-up order scans referenced repositories first.

use crate::api::{ImagePolicy, ImageRepository};
use crate::store::RepoKey;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::ResourceExt;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

/// Which policies refer to which repository, kept from the policies' watch.
#[derive(Clone, Default)]
pub struct PolicyIndex(Arc<RwLock<IndexMaps>>);

#[derive(Default)]
struct IndexMaps {
    repository_of: HashMap<ObjectRef<ImagePolicy>, (String, String)>,
    policies_of: HashMap<(String, String), HashSet<ObjectRef<ImagePolicy>>>,
}

impl PolicyIndex {
    /// Follows one event of the policies' watch.
    pub fn observe(&self, event: &watcher::Event<ImagePolicy>) {
        match event {
            watcher::Event::Apply(policy) | watcher::Event::InitApply(policy) => self.apply(policy),
            watcher::Event::Delete(policy) => self.remove(&ObjectRef::from_obj(policy)),
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }

    fn apply(&self, policy: &ImagePolicy) {
        // Name and namespace only: an ObjectRef's uid and resourceVersion take no part in its
        // equality, and kept twice for every policy they were about 2 MB at 10,000.
        let mut key = ObjectRef::new(&policy.name_any());
        if let Some(namespace) = policy.metadata.namespace.as_deref() {
            key = key.within(namespace);
        }
        let repository = (
            policy.repository_namespace(),
            policy.spec.image_repository_ref.name.clone(),
        );
        self.remove(&key);
        let mut maps = self.0.write().expect("policy index lock");
        maps.policies_of
            .entry(repository.clone())
            .or_default()
            .insert(key.clone());
        maps.repository_of.insert(key, repository);
    }

    fn remove(&self, key: &ObjectRef<ImagePolicy>) {
        let mut maps = self.0.write().expect("policy index lock");
        if let Some(repository) = maps.repository_of.remove(key) {
            if let Some(set) = maps.policies_of.get_mut(&repository) {
                set.remove(key);
                if set.is_empty() {
                    maps.policies_of.remove(&repository);
                }
            }
        }
    }

    /// Every repository some policy refers to.
    pub fn referenced_repositories(&self) -> Vec<RepoKey> {
        let maps = self.0.read().expect("policy index lock");
        maps.policies_of
            .keys()
            .filter_map(|(namespace, name)| RepoKey::new(namespace.as_str(), name.as_str()).ok())
            .collect()
    }

    /// The policies in `namespace` that refer to a repository in another namespace: what
    /// that namespace's labels decide (the repository's `accessFrom`).
    pub fn cross_namespace_policies_in(&self, namespace: &str) -> Vec<ObjectRef<ImagePolicy>> {
        let maps = self.0.read().expect("policy index lock");
        maps.repository_of
            .iter()
            .filter(|(policy, (repo_ns, _))| {
                policy.namespace.as_deref() == Some(namespace) && repo_ns != namespace
            })
            .map(|(policy, _)| policy.clone())
            .collect()
    }

    /// The policies that refer to `repository`.
    pub fn policies_for(&self, repository: &ImageRepository) -> Vec<ObjectRef<ImagePolicy>> {
        let key = (
            repository.namespace().unwrap_or_default(),
            repository.name_any(),
        );
        let maps = self.0.read().expect("policy index lock");
        maps.policies_of
            .get(&key)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ImagePolicySpec, NamespacedObjectReference};

    fn policy(ns: &str, name: &str, repo_ns: Option<&str>, repo: &str) -> ImagePolicy {
        let mut p = ImagePolicy::new(
            name,
            ImagePolicySpec {
                image_repository_ref: NamespacedObjectReference {
                    name: repo.into(),
                    namespace: repo_ns.map(String::from),
                },
                policy: Default::default(),
                filter_tags: None,
                digest_reflection_policy: None,
                interval: None,
                suspend: None,
                platforms: None,
                verify: None,
                downgrade: None,
            },
        );
        p.metadata.namespace = Some(ns.into());
        p
    }

    fn repository(ns: &str, name: &str) -> ImageRepository {
        let mut r: ImageRepository = serde_json::from_value(serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"image": "a/b", "interval": "5m"}
        }))
        .unwrap();
        r.metadata.namespace = Some(ns.into());
        r
    }

    fn names(refs: Vec<ObjectRef<ImagePolicy>>) -> Vec<String> {
        let mut names: Vec<String> = refs
            .into_iter()
            .map(|r| format!("{}/{}", r.namespace.unwrap(), r.name))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_index_maps_repositories_to_their_policies() {
        let index = PolicyIndex::default();
        index.observe(&watcher::Event::InitApply(policy(
            "apps", "p1", None, "app",
        )));
        index.observe(&watcher::Event::Apply(policy(
            "team",
            "p2",
            Some("apps"),
            "app",
        )));
        index.observe(&watcher::Event::Apply(policy(
            "apps",
            "p3",
            Some(""),
            "other",
        )));
        assert_eq!(
            names(index.policies_for(&repository("apps", "app"))),
            ["apps/p1", "team/p2"]
        );
        assert_eq!(
            names(index.policies_for(&repository("apps", "other"))),
            ["apps/p3"]
        );
        // A policy that moves to another repository, and one deleted.
        index.observe(&watcher::Event::Apply(policy("apps", "p1", None, "other")));
        index.observe(&watcher::Event::Delete(policy(
            "team",
            "p2",
            Some("apps"),
            "app",
        )));
        assert!(index.policies_for(&repository("apps", "app")).is_empty());
        assert_eq!(
            names(index.policies_for(&repository("apps", "other"))),
            ["apps/p1", "apps/p3"]
        );
    }
}
