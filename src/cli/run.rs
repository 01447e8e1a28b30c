//! `image-reflector run`: the controller. Flags carry Flux's names and defaults, so Flux's
//! Deployment arguments work unchanged. Start-up: logging, the tag store, the API client and a
//! pre-flight check that the CRDs are installed, the HTTP endpoints, then the ImageRepository
//! and ImagePolicy controllers until SIGTERM or SIGINT, when in-flight reconciles finish before
//! exit.

use super::error::CliError;
use crate::api::{parse_go_duration, ImagePolicy, ImageRepository};
use crate::controller::{image_policy, image_repository, Context, Settings};
use crate::http::{self, Readiness};
use crate::registry::{install_crypto_provider, Registries, SchedulerConfig};
use crate::store::{FsStore, TagStore};
use crate::telemetry::logging::{self, LogEncoding, LogLevel};
use crate::telemetry::metrics::Metrics;
use clap::ArgAction;
use kube::api::ListParams;
use kube::runtime::watcher;
use kube::{Api, Client};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Options of `run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Where `/metrics` is served.
    #[arg(long, default_value = ":8080")]
    pub metrics_addr: String,
    /// Where `/healthz` and `/readyz` are served.
    #[arg(long, default_value = ":9440")]
    pub health_addr: String,
    /// The tag store's directory.
    #[arg(long, default_value = "/data")]
    pub storage_path: String,
    /// Tag lists of at least this many KiB are stored gzipped.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub storage_compression_threshold: u64,
    /// Reconciles run at once, per kind.
    #[arg(long, default_value_t = 4)]
    pub concurrent: u16,
    /// Watch every namespace; `--watch-all-namespaces=false` watches only RUNTIME_NAMESPACE.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub watch_all_namespaces: bool,
    /// The namespace watched when not watching all (set from the pod's namespace).
    #[arg(long, env = "RUNTIME_NAMESPACE", default_value = "")]
    pub runtime_namespace: String,
    /// The first retry delay after a failure (doubles per failure).
    #[arg(long, default_value = "750ms", value_parser = parse_go_duration)]
    pub min_retry_delay: Duration,
    /// The longest retry delay after repeated failures.
    #[arg(long, default_value = "15m", value_parser = parse_go_duration)]
    pub max_retry_delay: Duration,
    /// An identical Warning event is sent at most once per this interval.
    #[arg(long, default_value = "10m", value_parser = parse_go_duration)]
    pub event_repeat_interval: Duration,
    /// Log level.
    #[arg(long, value_enum, default_value_t = LogLevel::Info)]
    pub log_level: LogLevel,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogEncoding::Json)]
    pub log_encoding: LogEncoding,
    /// The notification-controller's event webhook; empty: events are not forwarded.
    #[arg(long, default_value = "")]
    pub events_addr: String,
    /// How long an ImagePolicy waits before looking again at a repository without tags.
    #[arg(long, default_value = "30s", value_parser = parse_go_duration)]
    pub requeue_dependency: Duration,
    /// Forbid ImagePolicies to refer to ImageRepositories in other namespaces.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub no_cross_namespace_refs: bool,
    /// Accepted for Flux's Deployment; leader election is not built yet, so run one replica.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub enable_leader_election: bool,
}

/// Runs the controller until a signal.
pub fn run(args: &RunArgs) -> Result<(), CliError> {
    logging::init(args.log_level, args.log_encoding);
    install_crypto_provider();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(format!("starting the async runtime: {e}")))?;
    runtime.block_on(run_controller(args))
}

async fn run_controller(args: &RunArgs) -> Result<(), CliError> {
    if args.enable_leader_election {
        tracing::warn!(
            "--enable-leader-election: leader election is not built yet; run a single replica"
        );
    }
    let metrics_addr = http::parse_addr(&args.metrics_addr).map_err(CliError::invalid)?;
    let health_addr = http::parse_addr(&args.health_addr).map_err(CliError::invalid)?;
    let store = open_store(args)?;
    let client = Client::try_default().await.map_err(|e| {
        CliError::failed(format!(
            "connecting to Kubernetes: {e}; run in a cluster or set KUBECONFIG"
        ))
    })?;
    let repositories: Api<ImageRepository> = scoped_api(&client, args)?;
    let policies: Api<ImagePolicy> = scoped_api(&client, args)?;
    preflight(&repositories).await?;
    preflight(&policies).await?;
    let metrics = Arc::new(Metrics::default());
    let ctx = Context::new(
        client,
        store,
        Registries::new(SchedulerConfig::default()),
        metrics.clone(),
        settings(args),
    )
    .map_err(CliError::invalid)?;
    let shutdown = shutdown_on_signal();
    let readiness = Readiness::default();
    let serve = |addr, router| http::serve(addr, router, shutdown.clone());
    let metrics_server = serve(metrics_addr, http::metrics_router(metrics))
        .await
        .map_err(|e| CliError::failed(format!("listening on {}: {e}", args.metrics_addr)))?;
    let health_server = serve(health_addr, http::health_router(readiness.clone()))
        .await
        .map_err(|e| CliError::failed(format!("listening on {}: {e}", args.health_addr)))?;
    let concurrency = args.concurrent.max(1);
    let recorder_ctx = ctx.clone();
    let policy_controller = image_policy::controller(
        policies,
        repositories.clone(),
        watcher::Config::default(),
        ctx.clone(),
        concurrency,
        shutdown.clone(),
        readiness.part(),
        readiness.part(),
    );
    let repository_controller = image_repository::controller(
        repositories,
        watcher::Config::default(),
        ctx,
        concurrency,
        shutdown.clone(),
        readiness.part(),
    );
    tracing::info!(storage = %args.storage_path, "image-reflector controller started");
    let (_, _, metrics_result, health_result) = tokio::join!(
        repository_controller,
        policy_controller,
        metrics_server,
        health_server
    );
    recorder_ctx.recorder.flush(Duration::from_secs(5)).await;
    metrics_result
        .and(health_result)
        .map_err(|e| CliError::failed(format!("serving HTTP: {e}")))?;
    tracing::info!("stopped");
    Ok(())
}

fn open_store(args: &RunArgs) -> Result<Arc<dyn TagStore>, CliError> {
    let threshold = args.storage_compression_threshold as usize * 1024;
    let store = FsStore::open(&args.storage_path, threshold).map_err(|e| {
        CliError::failed(format!(
            "opening the tag store at {}: {e}; set --storage-path to a writable directory",
            args.storage_path
        ))
    })?;
    Ok(Arc::new(store))
}

/// All namespaces, or only RUNTIME_NAMESPACE with `--watch-all-namespaces=false`.
fn scoped_api<K>(client: &Client, args: &RunArgs) -> Result<Api<K>, CliError>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    if args.watch_all_namespaces {
        return Ok(Api::all(client.clone()));
    }
    if args.runtime_namespace.is_empty() {
        return Err(CliError::invalid(
            "--watch-all-namespaces=false needs RUNTIME_NAMESPACE (or --runtime-namespace)",
        ));
    }
    Ok(Api::namespaced(client.clone(), &args.runtime_namespace))
}

/// Fails with the fix when a CRD is missing or the controller may not list its objects.
async fn preflight<K>(api: &Api<K>) -> Result<(), CliError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    K::DynamicType: Default,
{
    let kind = K::kind(&K::DynamicType::default()).to_string();
    match api.list_metadata(&ListParams::default().limit(1)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Err(CliError::failed(format!(
            "the {kind} CRD is not installed: kubectl apply -f crds/crds.yaml \
             (or kubectl apply -k config/default)"
        ))),
        Err(e) => Err(CliError::failed(format!(
            "listing {kind}s: {e}; check the controller's RBAC (config/rbac)"
        ))),
    }
}

fn settings(args: &RunArgs) -> Settings {
    let instance = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "image-reflector-controller".into());
    Settings {
        min_retry_delay: args.min_retry_delay,
        max_retry_delay: args.max_retry_delay,
        event_repeat_interval: args.event_repeat_interval,
        object_level_workload_identity: false,
        instance,
        events_addr: Some(args.events_addr.clone()).filter(|a| !a.is_empty()),
        requeue_dependency: args.requeue_dependency,
        no_cross_namespace_refs: args.no_cross_namespace_refs,
    }
}

/// Cancelled on the first SIGTERM or SIGINT.
fn shutdown_on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(err) => {
                    tracing::error!(error = %err, "cannot listen for SIGTERM");
                    return;
                }
            };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        tracing::info!("shutting down: finishing in-flight reconciles");
        trigger.cancel();
    });
    token
}
