//! What the watch caches keep of an object: everything a reconcile reads, without
//! `metadata.managedFields` and kubectl's last-applied annotation, which no reconcile reads and
//! which are often most of an object's bytes (a copy of the whole spec for each manager), and
//! without its labels: the API server filters by them (`--watch-label-selector`), no reconcile
//! reads them, and a map of even one label costs a node of about 550 bytes (docs/benchmarks-history.md).
//! A namespace's labels, which `accessFrom` reads, come from a watch of their own.

use kube::Resource;

/// kubectl's copy of the applied manifest.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops what no reconcile reads from a cached object.
pub fn slim<K: Resource>(obj: &mut K) {
    let meta = obj.meta_mut();
    meta.managed_fields = None;
    meta.labels = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        // An emptied map stays: it says the object has annotations, which a JSON patch adding
        // one must not replace (controller/schema/marker.rs).
        annotations.remove(LAST_APPLIED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ImageRepository;

    #[test]
    fn caches_keep_what_reconciles_read() {
        let mut repo: ImageRepository = serde_json::from_value(serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
            "metadata": {
                "name": "app", "namespace": "team", "generation": 3,
                "labels": {"kustomize.toolkit.fluxcd.io/name": "apps"},
                "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": "{\"spec\":{}}",
                    "reconcile.fluxcd.io/requestedAt": "now",
                    "event.toolkit.fluxcd.io/cluster": "prod"
                },
                "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}],
                "finalizers": ["finalizers.fluxcd.io"]
            },
            "spec": {"image": "r/app", "interval": "5m"}
        }))
        .unwrap();
        let before = repo.clone();
        slim(&mut repo);
        assert!(repo.metadata.managed_fields.is_none());
        assert!(repo.metadata.labels.is_none());
        let annotations = repo.metadata.annotations.clone().unwrap();
        assert_eq!(
            annotations.keys().collect::<Vec<_>>(),
            [
                "event.toolkit.fluxcd.io/cluster",
                "reconcile.fluxcd.io/requestedAt"
            ]
        );
        assert_eq!(repo.spec, before.spec);
        assert_eq!(repo.metadata.finalizers, before.metadata.finalizers);
        assert_eq!(repo.metadata.generation, Some(3));
    }
}
