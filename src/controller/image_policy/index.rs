//! Which policies refer to which repository and which Secrets they trust, kept from the
//! policies' watch: a repository's change re-triggers its policies, a namespace's label change
//! its cross-namespace policies, a trusted Secret's change the policies that verify with it,
//! and the start-up order scans referenced repositories first.

use crate::api::{ImagePolicy, ImageRepository};
use crate::store::RepoKey;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::ResourceExt;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Which policies refer to which repository, kept from the policies' watch.
#[derive(Clone, Default)]
pub struct PolicyIndex(Arc<RwLock<IndexMaps>>);

/// A namespace and a name. Each string is allocated once and shared by both maps: at 4,000
/// policies, `ObjectRef`s (four strings each) and a set per repository took about 1 KiB a
/// policy (docs/benchmarks-history.md).
type Name = (Arc<str>, Arc<str>);

#[derive(Default)]
struct IndexMaps {
    /// Each policy and the repository it refers to.
    repository_of: HashMap<Name, Name>,
    /// Each repository some policy refers to, and those policies (mostly one: a list).
    policies_of: HashMap<Name, Vec<Name>>,
    /// Each policy with `spec.verify`, and what it trusts.
    trusts: HashMap<Name, Trusted>,
}

/// What a policy's `spec.verify` trusts: Secrets of its namespace (`secretRef`,
/// `trustedRootSecretRef`) and, keyless, Sigstore's public-good root (unless its Secret has a
/// `trusted_root.json`, which only a read would tell: such a policy is judged again for
/// nothing when the public-good root changes).
#[derive(PartialEq, Eq)]
struct Trusted {
    secrets: Vec<Arc<str>>,
    public_good: bool,
}

fn name(namespace: &str, name: &str) -> Name {
    (Arc::from(namespace), Arc::from(name))
}

fn policy_ref((namespace, name): &Name) -> ObjectRef<ImagePolicy> {
    ObjectRef::new(name).within(namespace)
}

impl PolicyIndex {
    /// Follows one event of the policies' watch.
    pub fn observe(&self, event: &watcher::Event<ImagePolicy>) {
        match event {
            watcher::Event::Apply(policy) | watcher::Event::InitApply(policy) => self.apply(policy),
            watcher::Event::Delete(policy) => {
                let mut maps = self.0.write().expect("policy index lock");
                let key = policy_name(policy);
                maps.trusts.remove(&key);
                maps.remove(&key);
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }

    fn apply(&self, policy: &ImagePolicy) {
        let key = policy_name(policy);
        let repository = name(
            &policy.repository_namespace(),
            &policy.spec.image_repository_ref.name,
        );
        let mut maps = self.0.write().expect("policy index lock");
        match trusted(policy) {
            None => {
                maps.trusts.remove(&key);
            }
            Some(trusted) if maps.trusts.get(&key) != Some(&trusted) => {
                maps.trusts.insert(key.clone(), trusted);
            }
            Some(_) => {}
        }
        if maps.repository_of.get(&key) == Some(&repository) {
            return;
        }
        maps.remove(&key);
        // The repository's strings are shared with the policies that already refer to it.
        let repository = match maps.policies_of.get_key_value(&repository) {
            Some((known, _)) => known.clone(),
            None => repository,
        };
        maps.policies_of
            .entry(repository.clone())
            .or_default()
            .push(key.clone());
        maps.repository_of.insert(key, repository);
    }

    /// Every repository some policy refers to.
    pub fn referenced_repositories(&self) -> Vec<RepoKey> {
        let maps = self.0.read().expect("policy index lock");
        maps.policies_of
            .keys()
            .filter_map(|(namespace, name)| RepoKey::new(&**namespace, &**name).ok())
            .collect()
    }

    /// The policies in `namespace` that refer to a repository in another namespace: what
    /// that namespace's labels decide (the repository's `accessFrom`).
    pub fn cross_namespace_policies_in(&self, namespace: &str) -> Vec<ObjectRef<ImagePolicy>> {
        let maps = self.0.read().expect("policy index lock");
        maps.repository_of
            .iter()
            .filter(|((ns, _), (repo_ns, _))| &**ns == namespace && &**repo_ns != namespace)
            .map(|(policy, _)| policy_ref(policy))
            .collect()
    }

    /// The policies that refer to `repository`.
    pub fn policies_for(&self, repository: &ImageRepository) -> Vec<ObjectRef<ImagePolicy>> {
        let key = name(
            &repository.namespace().unwrap_or_default(),
            &repository.name_any(),
        );
        let maps = self.0.read().expect("policy index lock");
        maps.policies_of
            .get(&key)
            .map(|policies| policies.iter().map(policy_ref).collect())
            .unwrap_or_default()
    }
}

impl PolicyIndex {
    /// Whether some policy in `namespace` trusts the Secret `secret`: asked of every Secret
    /// event the watch sees, so nothing is allocated.
    pub fn is_trusted(&self, namespace: &str, secret: &str) -> bool {
        let maps = self.0.read().expect("policy index lock");
        maps.trusts
            .iter()
            .any(|(p, t)| t.trusts(p, namespace, secret))
    }

    /// The policies in `namespace` that trust the Secret `secret`: a change to it (a key
    /// rotated or revoked, a trusted root replaced) must be judged at once.
    pub fn trusting(&self, namespace: &str, secret: &str) -> Vec<ObjectRef<ImagePolicy>> {
        let maps = self.0.read().expect("policy index lock");
        maps.trusts
            .iter()
            .filter(|(p, t)| t.trusts(p, namespace, secret))
            .map(|(policy, _)| policy_ref(policy))
            .collect()
    }

    /// The keyless policies: what Sigstore's public-good root judges, when it changes.
    pub fn keyless(&self) -> Vec<ObjectRef<ImagePolicy>> {
        let maps = self.0.read().expect("policy index lock");
        maps.trusts
            .iter()
            .filter(|(_, trusted)| trusted.public_good)
            .map(|(policy, _)| policy_ref(policy))
            .collect()
    }
}

impl Trusted {
    /// Whether the policy `(policy_namespace, _)` that trusts this trusts `secret` of
    /// `namespace`.
    fn trusts(&self, (policy_namespace, _): &Name, namespace: &str, secret: &str) -> bool {
        &**policy_namespace == namespace && self.secrets.iter().any(|s| &**s == secret)
    }
}

/// What a policy's `spec.verify` trusts (`None`: it verifies nothing).
fn trusted(policy: &ImagePolicy) -> Option<Trusted> {
    let verify = policy.spec.verify.as_ref()?;
    let refs = [&verify.secret_ref, &verify.trusted_root_secret_ref];
    let secrets = refs.into_iter().flatten();
    Some(Trusted {
        secrets: secrets.map(|r| Arc::from(r.name.as_str())).collect(),
        public_good: verify.keyless(),
    })
}

impl IndexMaps {
    fn remove(&mut self, key: &Name) {
        let Some(repository) = self.repository_of.remove(key) else {
            return;
        };
        if let Some(policies) = self.policies_of.get_mut(&repository) {
            policies.retain(|p| p != key);
            if policies.is_empty() {
                self.policies_of.remove(&repository);
            }
        }
    }
}

fn policy_name(policy: &ImagePolicy) -> Name {
    name(
        policy.metadata.namespace.as_deref().unwrap_or_default(),
        &policy.name_any(),
    )
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
        let p3 = policy("apps", "p3", Some(""), "other");
        index.observe(&watcher::Event::Apply(p3.clone()));
        assert_eq!(
            names(index.policies_for(&repository("apps", "app"))),
            ["apps/p1", "team/p2"]
        );
        // Seen again unchanged (a status update): listed once.
        for _ in 0..2 {
            assert_eq!(
                names(index.policies_for(&repository("apps", "other"))),
                ["apps/p3"]
            );
            index.observe(&watcher::Event::Apply(p3.clone()));
        }
        assert_eq!(
            names(index.cross_namespace_policies_in("team")),
            ["team/p2"]
        );
        assert!(index.cross_namespace_policies_in("apps").is_empty());
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

    /// The Secrets a policy trusts (`secretRef`, `trustedRootSecretRef`), in its namespace, as
    /// its spec changes; a deleted policy or one without `verify` trusts none.
    #[test]
    fn the_index_maps_trusted_secrets_to_their_policies() {
        use crate::api::{ImageVerification, LocalObjectReference};
        let verifying = |ns: &str, name: &str, keys: &str, root: Option<&str>| {
            let mut p = policy(ns, name, None, "app");
            let reference = |name: &str| LocalObjectReference { name: name.into() };
            let mut verify: ImageVerification =
                serde_json::from_value(serde_json::json!({"provider": "cosign"})).unwrap();
            verify.secret_ref = Some(reference(keys));
            verify.trusted_root_secret_ref = root.map(reference);
            p.spec.verify = Some(Box::new(verify));
            p
        };
        let index = PolicyIndex::default();
        index.observe(&watcher::Event::InitApply(verifying(
            "a", "p1", "keys", None,
        )));
        index.observe(&watcher::Event::Apply(verifying(
            "a",
            "p2",
            "keys",
            Some("root"),
        )));
        index.observe(&watcher::Event::Apply(verifying("b", "p3", "keys", None)));
        index.observe(&watcher::Event::Apply(policy("a", "p4", None, "app")));
        assert_eq!(names(index.trusting("a", "keys")), ["a/p1", "a/p2"]);
        assert_eq!(names(index.trusting("a", "root")), ["a/p2"]);
        assert_eq!(names(index.trusting("b", "keys")), ["b/p3"]);
        assert!(!index.is_trusted("b", "root") && !index.is_trusted("c", "keys"));
        // The same repository, another Secret; verify dropped; deleted.
        index.observe(&watcher::Event::Apply(verifying("a", "p1", "other", None)));
        index.observe(&watcher::Event::Apply(policy("a", "p2", None, "app")));
        index.observe(&watcher::Event::Delete(verifying("b", "p3", "keys", None)));
        assert_eq!(names(index.trusting("a", "other")), ["a/p1"]);
        assert!(index.trusting("a", "keys").is_empty());
        assert!(!index.is_trusted("a", "root") && !index.is_trusted("b", "keys"));
        assert!(index.keyless().is_empty());
        let mut keyless = verifying("c", "p5", "keys", None);
        let identity = serde_json::json!([{"issuer": "^i$", "subject": "^s$"}]);
        let verify = keyless.spec.verify.as_mut().unwrap();
        verify.match_oidc_identity = Some(serde_json::from_value(identity).unwrap());
        index.observe(&watcher::Event::Apply(keyless));
        assert_eq!(names(index.keyless()), ["c/p5"]);
    }
}
