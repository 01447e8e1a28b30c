//! What the offline tools know of first sightings (docs/scan.md, "The controller's clocks"):
//! `scan` on a store that has never listed a repository makes a first scan, where every tag
//! counts as seen long ago; a policy that reads first sightings (`minAge`, `newest`) then
//! elects on creation times alone, which may not be the controller's election. Said, with the
//! fix: the controller's own store, archived from its Pod (`store archive`), as
//! `--storage-path`.

use crate::api::ImagePolicy;
use crate::store::{RepoKey, TagStore};
use kube::ResourceExt;

/// The repositories (namespace, name) of `keys` whose tags `store` has never listed.
pub fn unlisted(store: &dyn TagStore, keys: impl IntoIterator<Item = RepoKey>) -> Vec<RepoKey> {
    keys.into_iter()
        .filter(|key| store.get(key).is_ok_and(|(tags, _)| tags.is_empty()))
        .collect()
}

/// The note for `policy` when it reads first sightings of a repository in `unlisted`.
pub fn note(policy: &ImagePolicy, unlisted: &[RepoKey]) -> Option<String> {
    let spec = &policy.spec;
    let reads = match (&spec.policy.newest, &spec.filter_tags) {
        (Some(_), _) => "spec.policy.newest orders tags first listed at one scan by creation time",
        (None, Some(f)) if f.min_age.is_some() || f.min_age_by_bump.is_some() => {
            "minAge judges by creation time alone"
        }
        _ => return None,
    };
    let namespace = policy.namespace().unwrap_or_default();
    let reference = &spec.image_repository_ref;
    let repo_namespace = reference.namespace.as_deref().unwrap_or(&namespace);
    let key = RepoKey::new(repo_namespace, &reference.name).ok()?;
    unlisted.contains(&key).then(|| {
        format!(
            "ImagePolicy {namespace}/{}: the first sightings of {key} are unknown here (this \
             store never listed it): every tag counts as seen long ago, so {reads}; for the \
             controller's own clocks, archive its store (kubectl exec -n <namespace> <pod> -- \
             image-reflector store archive > data.tar), extract it (mkdir data && tar -xf \
             data.tar -C data) and pass --storage-path data",
            policy.name_any()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{MemoryStore, TagList};

    fn policy(spec: serde_json::Value) -> ImagePolicy {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy",
            "metadata": {"name": "p", "namespace": "team"}, "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn only_a_policy_that_reads_sightings_of_an_unlisted_repository_is_told() {
        let store = MemoryStore::default();
        let (app, seen) = (
            RepoKey::new("team", "app").unwrap(),
            RepoKey::new("team", "seen").unwrap(),
        );
        store.set(&seen, &TagList::new(["1.0.0"]).unwrap()).unwrap();
        let unlisted = unlisted(&store, [app.clone(), seen]);
        assert_eq!(unlisted, [app]);
        let reference = |name: &str| serde_json::json!({"name": name});
        let aged = policy(serde_json::json!({"imageRepositoryRef": reference("app"),
            "policy": {"semver": {"range": "1.x"}}, "filterTags": {"minAge": "1h"}}));
        let note = note(&aged, &unlisted).unwrap();
        assert!(
            note.starts_with("ImagePolicy team/p: the first sightings of team/app are unknown"),
            "{note}"
        );
        assert!(
            note.contains("minAge judges by creation time alone")
                && note.ends_with("--storage-path data")
        );
        let newest = policy(
            serde_json::json!({"imageRepositoryRef": reference("app"), "policy": {"newest": {}}}),
        );
        assert!(super::note(&newest, &unlisted)
            .unwrap()
            .contains("spec.policy.newest orders"));
        let plain = policy(
            serde_json::json!({"imageRepositoryRef": reference("app"), "policy": {"semver": {"range": "1.x"}}}),
        );
        assert_eq!(
            super::note(&plain, &unlisted),
            None,
            "Flux's orders read no sighting"
        );
        let listed = policy(
            serde_json::json!({"imageRepositoryRef": reference("seen"), "policy": {"newest": {}}}),
        );
        assert_eq!(super::note(&listed, &unlisted), None, "the store listed it");
    }
}
