//! What every reconcile shares: the API client, the tag store, the registry state, the event
//! recorder, the per-object backoff, metrics, settings and the clock. Built once by
//! [`Context::new`].

use super::queue::{QueueSource, WorkQueue};
use crate::controller::events::notify::Notifier;
use crate::controller::events::recorder::EventRecorder;
use crate::controller::feed::scan_order::ScanOrder;
use crate::controller::lookup::api_read::{read_named, ReadError};
use crate::controller::lookup::credentials::ObjectReader;
use crate::controller::object::seen::SeenSet;
use crate::controller::outcome::backoff::Backoff;
use crate::registry::Registries;
use crate::store::{RepoKey, TagStore};
use crate::telemetry::metrics::Metrics;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::jiff::Timestamp;
use kube::{Api, Client};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

/// Settings from the command line that reconciles read.
#[derive(Clone, Debug)]
pub struct Settings {
    pub min_retry_delay: Duration,
    pub max_retry_delay: Duration,
    pub event_repeat_interval: Duration,
    /// The `ObjectLevelWorkloadIdentity` feature gate.
    pub object_level_workload_identity: bool,
    /// `--default-service-account` (only with the gate).
    pub default_service_account: Option<String>,
    /// `reportingInstance` of events: the pod name.
    pub instance: String,
    /// `--events-addr`: the notification-controller's webhook, when set.
    pub events_addr: Option<String>,
    /// `--events-ca-file` and `--events-token-file`.
    pub events_auth: crate::controller::events::notify::EventsAuth,
    /// `--requeue-dependency`: an ImagePolicy's wait for a repository without tags.
    pub requeue_dependency: Duration,
    /// `--no-cross-namespace-refs`.
    pub no_cross_namespace_refs: bool,
    /// `--concurrent`: reconciles at once, per kind; a host or a namespace gets one less.
    pub concurrent: u16,
    /// The one namespace watched (`--watch-all-namespaces=false`), else `None`: all of them.
    /// The door keeps VerifiedDigests only there.
    pub watched_namespace: Option<String>,
    /// Sigstore's public-good trusted root (`--sigstore-tuf-mirror`).
    pub sigstore_root: Arc<crate::registry::sigstore_root::PublicGoodRoot>,
}

/// Shared by every reconcile of both kinds.
impl Settings {
    /// The gate and default ServiceAccount, as the reconcilers take them.
    pub fn workload_identity(
        &self,
    ) -> crate::controller::lookup::credentials::WorkloadIdentity<'_> {
        crate::controller::lookup::credentials::WorkloadIdentity {
            enabled: self.object_level_workload_identity,
            default_service_account: self.default_service_account.as_deref(),
        }
    }
}

pub struct Context {
    pub client: Client,
    pub store: Arc<dyn TagStore>,
    pub registries: Arc<Registries>,
    pub recorder: EventRecorder,
    pub backoff: Backoff,
    pub metrics: Arc<Metrics>,
    pub settings: Settings,
    /// Now; tests pin it.
    pub clock: fn() -> Timestamp,
    /// Repositories reconciled successfully since start (docs/compatibility.md, warm start).
    scanned: Mutex<SeenSet>,
    /// Repositories with policies are scanned first at start-up.
    pub scan_order: ScanOrder,
    /// The ImageRepository controller's queue, as metrics and `/healthz` see it.
    pub repository_queue: Arc<WorkQueue>,
    /// The ImagePolicy controller's queue.
    pub policy_queue: Arc<WorkQueue>,
    /// The schema the API server serves for our kinds (controller/schema/).
    pub schema: Arc<crate::controller::schema::ServedSchema>,
    /// The specs a fresh read confirmed before a write (confirm.rs).
    pub confirmed: crate::controller::object::confirmed::ConfirmedSpecs,
}

impl Context {
    /// Fails only on an `--events-addr` that is not a URL.
    pub fn new(
        client: Client,
        store: Arc<dyn TagStore>,
        registries: Arc<Registries>,
        metrics: Arc<Metrics>,
        settings: Settings,
    ) -> Result<Arc<Self>, crate::controller::events::notify::NotifyError> {
        let notifier = match &settings.events_addr {
            Some(address) => Some(
                Notifier::new(address, settings.instance.clone())?
                    .secured(&settings.events_auth)?
                    .counted(metrics.clone()),
            ),
            None => None,
        };
        let repository_queue = Arc::new(WorkQueue::new("imagerepository"));
        let policy_queue = Arc::new(WorkQueue::new("imagepolicy"));
        Ok(Arc::new(Context {
            recorder: EventRecorder::new(
                client.clone(),
                settings.instance.clone(),
                settings.event_repeat_interval,
                notifier,
            ),
            backoff: Backoff::new(settings.min_retry_delay, settings.max_retry_delay),
            client,
            store,
            registries,
            metrics,
            settings,
            clock: Timestamp::now,
            scanned: Mutex::default(),
            scan_order: ScanOrder::default(),
            repository_queue,
            policy_queue,
            schema: Arc::default(),
            confirmed: Default::default(),
        }))
    }

    /// Exports both work queues' series (client-go's `workqueue_*`) through the metrics:
    /// `run` does, once; a context built for a test or `scan` need not.
    pub fn export_queue_metrics(&self) {
        let queues = [&self.repository_queue, &self.policy_queue];
        for queue in queues {
            queue.record_into(self.metrics.queue(queue.name));
        }
        let sources = queues.into_iter().cloned().collect();
        self.metrics.add_source(Arc::new(QueueSource(sources)));
    }

    /// Records that `key`'s repository reconciled successfully since start (warm start).
    pub fn mark_scanned(&self, key: RepoKey) {
        self.scanned.lock().expect("scanned lock").insert(&key);
    }

    /// Whether `key`'s repository reconciled successfully since start.
    pub fn was_scanned(&self, key: &RepoKey) -> bool {
        self.scanned.lock().expect("scanned lock").contains(key)
    }
}

/// Reads Secrets and ServiceAccounts live from the API server (not cached: Flux reads them
/// live unless `CacheSecretsAndConfigMaps` is on).
pub struct ApiReader(pub Client);

impl ObjectReader for ApiReader {
    async fn secret(&self, namespace: &str, name: &str) -> Result<Option<Secret>, ReadError> {
        read_named(
            name,
            Api::<Secret>::namespaced(self.0.clone(), namespace).get_opt(name),
        )
        .await
    }

    async fn service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ServiceAccount>, ReadError> {
        let api = Api::<ServiceAccount>::namespaced(self.0.clone(), namespace);
        read_named(name, api.get_opt(name)).await
    }

    fn service_account_source(
        &self,
        namespace: &str,
        name: &str,
    ) -> std::sync::Arc<dyn crate::registry::cloud::ServiceAccountSource> {
        std::sync::Arc::new(
            crate::controller::lookup::token_request::KubeServiceAccount {
                client: self.0.clone(),
                namespace: namespace.to_string(),
                name: name.to_string(),
            },
        )
    }
}
