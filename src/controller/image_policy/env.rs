//! What a policy reconcile reads besides the object: the cluster (its repository, namespace
//! labels, Secrets), the registries, the store, the clock and the controller's settings.

use crate::api::ImageRepository;
use crate::controller::lookup::api_read::ReadError;
use crate::controller::lookup::credentials::{ObjectReader, WorkloadIdentity};
use crate::registry::Registries;
use crate::store::{RepoKey, TagStore};
use k8s_openapi::jiff::Timestamp;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Reads what a policy refers to, besides Secrets: its ImageRepository and namespace labels.
pub trait PolicyReader: ObjectReader {
    fn image_repository(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<ImageRepository>, ReadError>> + Send;

    /// The labels of a namespace (`Ok(None)`: no such namespace).
    fn namespace_labels(
        &self,
        namespace: &str,
    ) -> impl Future<Output = Result<Option<BTreeMap<String, String>>, ReadError>> + Send;
}

/// What a policy reconcile reads besides the object.
pub struct PolicyEnv<'a, R> {
    pub reader: &'a R,
    pub registries: &'a Arc<Registries>,
    pub store: &'a Arc<dyn TagStore>,
    pub now: Timestamp,
    /// The `ObjectLevelWorkloadIdentity` gate and `--default-service-account`.
    pub workload_identity: WorkloadIdentity<'a>,
    pub no_cross_namespace_refs: bool,
    /// `--requeue-dependency`: how soon to look again when the repository has no tags.
    pub requeue_dependency: Duration,
    /// Whether the repository was scanned since this process started (warm start).
    pub repository_scanned: &'a (dyn Fn(&RepoKey) -> bool + Sync),
    /// The policy's first reconcile since the process started: an `Always` digest fetched
    /// before a restart may still be fresh (`freshness.rs`).
    pub first_since_start: bool,
    /// Sigstore's public-good trusted root, for keyless policies without one of their own.
    pub sigstore_root: &'a Arc<crate::registry::sigstore_root::PublicGoodRoot>,
}
