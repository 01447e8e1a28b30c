//! The spec each object was last confirmed at by a fresh read (frame/confirm.rs): one read
//! per object and spec, whatever the schema.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// The spec each object (`Kind/namespace/name`) was last confirmed at, as [`spec_version`].
#[derive(Default)]
pub struct ConfirmedSpecs(Mutex<HashMap<String, u64>>);

impl ConfirmedSpecs {
    pub fn holds(&self, key: &str, version: u64) -> bool {
        self.lock().get(key) == Some(&version)
    }

    pub fn record(&self, key: String, version: u64) {
        self.lock().insert(key, version);
    }

    /// Forgets a deleted object.
    pub fn forget(&self, key: &str) {
        self.lock().remove(key);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ImagePolicy;
    use crate::controller::object::keys::spec_version;

    fn policy(generation: i64, spec: serde_json::Value) -> ImagePolicy {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy",
            "metadata": {"name": "app", "namespace": "team", "generation": generation},
            "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn a_spec_version_changes_with_the_generation_and_with_a_pruned_field() {
        let whole = serde_json::json!({
            "imageRepositoryRef": {"name": "app"}, "policy": {"semver": {"range": "1.x"}},
            "filterTags": {"minAge": "1h"},
        });
        let mut pruned = whole.clone();
        pruned["filterTags"] = serde_json::json!({});
        let v = spec_version(&policy(3, whole.clone()));
        assert_eq!(v, spec_version(&policy(3, whole.clone())));
        assert_ne!(v, spec_version(&policy(4, whole)));
        assert_ne!(v, spec_version(&policy(3, pruned)));
        let confirmed = ConfirmedSpecs::default();
        confirmed.record("ImagePolicy/team/app".into(), v);
        assert!(confirmed.holds("ImagePolicy/team/app", v));
        assert!(!confirmed.holds("ImagePolicy/team/app", v + 1));
        confirmed.forget("ImagePolicy/team/app");
        assert!(!confirmed.holds("ImagePolicy/team/app", v));
    }
}
