//! What the watch caches keep of an object: everything a reconcile reads, without
//! `metadata.managedFields` and kubectl's last-applied annotation, which no reconcile reads and
//! which are often most of an object's bytes (a copy of the whole spec for each manager).

use crate::api::ImageRepository;
use kube::Resource;

/// kubectl's copy of the applied manifest.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops what no reconcile reads from a cached object.
pub fn slim<K: Resource>(obj: &mut K) {
    let meta = obj.meta_mut();
    meta.managed_fields = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
        if annotations.is_empty() {
            meta.annotations = None;
        }
    }
}

/// What the ImagePolicy controller keeps of an ImageRepository: its spec but the exclusions,
/// its name, namespace, labels and deletion, and of its status the scan's revision and time and
/// the canonical name; what a policy reconcile and its trigger read (`policy.rs`,
/// `repository_change_hash`). The ImageRepository controller keeps the whole object: its
/// status is the one it writes. At 10,000 repositories this is about a kilobyte each.
pub fn slim_for_policies(repo: &mut ImageRepository) {
    slim(repo);
    let meta = &mut repo.metadata;
    meta.annotations = None;
    meta.finalizers = None;
    meta.owner_references = None;
    repo.spec.exclusion_list = None;
    if let Some(status) = repo.status.as_mut() {
        status.conditions = None;
        status.observed_exclusion_list = None;
        status.last_handled_reconcile_at = None;
        if let Some(scan) = status.last_scan_result.as_mut() {
            scan.latest_tags = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caches_keep_what_reconciles_read() {
        let mut repo: ImageRepository = serde_json::from_value(serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
            "metadata": {
                "name": "app", "namespace": "team", "generation": 3,
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

    #[test]
    fn the_policy_side_keeps_what_policies_read() {
        let mut repo: ImageRepository = serde_json::from_value(serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
            "metadata": {"name": "app", "namespace": "team", "labels": {"tier": "a"},
                         "annotations": {"reconcile.fluxcd.io/requestedAt": "now"},
                         "finalizers": ["finalizers.fluxcd.io"],
                         "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"image": "r/app", "interval": "5m", "exclusionList": ["^x"],
                     "secretRef": {"name": "creds"}, "insecure": true,
                     "accessFrom": {"namespaceSelectors": [{"matchLabels": {"a": "b"}}]}},
            "status": {"canonicalImageName": "r/app", "observedExclusionList": ["^x"],
                       "conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded",
                                       "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                       "lastScanResult": {"tagCount": 3, "scanTime": "2026-01-01T00:00:00Z",
                                          "revision": "sha256:abc", "latestTags": ["1", "2", "3"]}}
        }))
        .unwrap();
        let before = repo.clone();
        slim_for_policies(&mut repo);
        let status = repo.status.clone().unwrap();
        let scan = status.last_scan_result.clone().unwrap();
        assert_eq!(scan.revision.as_deref(), Some("sha256:abc"));
        assert_eq!(
            scan.scan_time,
            before
                .status
                .as_ref()
                .unwrap()
                .last_scan_result
                .as_ref()
                .unwrap()
                .scan_time
        );
        assert_eq!(scan.latest_tags, None);
        assert_eq!(status.canonical_image_name.as_deref(), Some("r/app"));
        assert_eq!(status.conditions, None);
        assert_eq!(repo.spec.image, before.spec.image);
        assert_eq!(repo.spec.secret_ref, before.spec.secret_ref);
        assert_eq!(repo.spec.access_from, before.spec.access_from);
        assert_eq!(repo.spec.insecure, Some(true));
        assert_eq!(repo.spec.exclusion_list, None);
        assert!(repo.metadata.deletion_timestamp.is_some());
        assert_eq!(repo.metadata.labels, before.metadata.labels);
        assert_eq!(repo.metadata.annotations, None);
    }
}
