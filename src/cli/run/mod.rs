//! `image-reflector run`: the controller. Flags carry Flux's names and defaults (see
//! [`flags`]), so Flux's Deployment arguments work unchanged. Start-up, in Flux's order:
//! flags and logging, the tag store, the API client (throttled unless the server has Priority
//! and Fairness) and a pre-flight check that the CRDs are installed, the HTTP endpoints, then —
//! once this replica holds the leader Lease, when election is on — the ImageRepository and
//! ImagePolicy controllers and the storage GC. SIGTERM lets in-flight reconciles finish (for
//! at most `--graceful-shutdown-timeout`), releases the Lease, flushes events and traces.

mod flags;
mod leading;
mod settings;

use leading::{run_as_leader, Work};
use settings::{runtime_namespace, settings, tls_ca_bundle_file};

pub use flags::{FeatureGates, RunArgs, SigstoreArgs};

use super::error::CliError;
use crate::api::{ImagePolicy, ImageRepository};
use crate::controller::frame::queue::unhealthy;
use crate::controller::Context;
use crate::registry::cloud::TokenCache;
use crate::registry::{install_crypto_provider, Registries, SchedulerConfig};
use crate::runtime::http::{self, Readiness};
use crate::runtime::leader::{self, Elector, Ended, LeaseConfig};
use crate::runtime::throttle;
use crate::store::{FsStore, TagStore};
use crate::telemetry::logging;
use crate::telemetry::metrics::Metrics;
use crate::telemetry::registry_requests::RegistrySource;
use crate::telemetry::traces::{self, Traces};
use kube::api::ListParams;
use kube::{Api, Client};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Runs the controller until a signal, or until leadership is lost (exit 1, as Flux).
pub fn run(args: &RunArgs) -> Result<(), CliError> {
    install_crypto_provider();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(format!("starting the async runtime: {e}")))?;
    let tracing_endpoint = traces::endpoint(&args.otlp_endpoint, |v| std::env::var(v).ok());
    let (traces, layer) = match tracing_endpoint {
        Some(endpoint) => {
            let (traces, layer) = Traces::start(endpoint).map_err(CliError::invalid)?;
            (Some(traces), Some(layer))
        }
        None => (None, None),
    };
    logging::init(args.log_level, args.log_encoding, layer);
    let result = args
        .validate()
        .map_err(CliError::invalid)
        .and_then(|()| runtime.block_on(run_controller(args)));
    if let Some(traces) = traces {
        traces.shutdown();
    }
    result
}

async fn run_controller(args: &RunArgs) -> Result<(), CliError> {
    let ignored = args.without_effect();
    if !ignored.is_empty() {
        tracing::warn!(flags = %ignored.join(" "), "accepted for compatibility with Flux's Deployment, without effect here");
    }
    let metrics_addr = http::parse_addr(&args.metrics_addr).map_err(CliError::invalid)?;
    let health_addr = http::parse_addr(&args.health_addr).map_err(CliError::invalid)?;
    let Started {
        ctx,
        client,
        repositories,
        policies,
        metrics,
    } = start(args).await?;
    let shutdown = shutdown_on_signal();
    let stop_servers = CancellationToken::new();
    let readiness = Readiness::default();
    let addrs = (metrics_addr, health_addr);
    let servers = serve_http(args, addrs, (&ctx, &metrics, &readiness), &stop_servers).await?;
    let mut elector = match args.enable_leader_election {
        true => Some(Elector::new(client.clone(), lease_config(args)?)),
        false => None,
    };
    let work = Work {
        ctx: &ctx,
        repositories,
        policies,
        secrets: scoped_api(&client, args),
        readiness: &readiness,
    };
    let ended = lead(args, &mut elector, &metrics, &shutdown, work).await;
    if let Some(elector) = &mut elector {
        elector.release().await;
        metrics.set_leader(&elector.config.name, false);
    }
    ctx.recorder.flush(Duration::from_secs(2)).await;
    stop_servers.cancel();
    match servers.await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(CliError::failed(format!("serving HTTP: {e}"))),
        Err(e) => return Err(CliError::failed(format!("serving HTTP: {e}"))),
    }
    match ended {
        Ended::Cancelled => {
            tracing::info!("stopped");
            Ok(())
        }
        // Exit 1, as Flux's controller-runtime exits and docs/controller.md says: a Deployment
        // restarts the Pod, which stands by for the Lease again.
        Ended::Lost => Err(CliError::stopped("leader election lost")),
        Ended::Failed(why) => Err(CliError::stopped(why)),
    }
}

/// What the process runs with once started: the reconcilers' context, the API client and
/// both kinds' APIs (their CRDs found), the metrics.
struct Started {
    ctx: Arc<Context>,
    client: Client,
    repositories: Api<ImageRepository>,
    policies: Api<ImagePolicy>,
    metrics: Arc<Metrics>,
}

/// The store, the API client (each kind served), the registry clients, Sigstore's root and
/// the metrics' sources, as one context.
async fn start(args: &RunArgs) -> Result<Started, CliError> {
    let store = open_store(args)?;
    let rest_counts = crate::runtime::rest_client::RestClientCounts::default();
    let client = connect(args, rest_counts.clone()).await?;
    let repositories: Api<ImageRepository> = scoped_api(&client, args);
    let policies: Api<ImagePolicy> = scoped_api(&client, args);
    preflight(&repositories, &args.watch_label_selector).await?;
    preflight(&policies, &args.watch_label_selector).await?;
    let metrics = Arc::new(Metrics::default());
    let token_cache = TokenCache::new(
        args.token_cache_max_size as usize,
        args.token_cache_max_duration,
    );
    let registries = Registries::with_token_cache(SchedulerConfig::default(), token_cache);
    // State of hosts no object asks any more goes after an hour (docs/security.md).
    registries.forget_idle_in_background();
    metrics.add_source(Arc::new(RegistrySource(registries.clone())));
    metrics.add_source(Arc::new(crate::telemetry::process::ProcessSource));
    metrics.add_source(Arc::new(rest_counts));
    // Followed only when there are events to send (Flux's Deployment names the bundle either way).
    if !args.tls_ca_bundle.is_empty() && !args.events_addr.is_empty() {
        let namespace = runtime_namespace(
            args,
            "--tls-ca-bundle names a ConfigMap of the controller's namespace",
        )?;
        let mirror = crate::runtime::ca_bundle::mirror(
            client.clone(),
            namespace,
            args.tls_ca_bundle.clone(),
            tls_ca_bundle_file(),
        );
        tokio::spawn(mirror);
    }
    let sigstore_root = args
        .sigstore
        .public_good_root(Some(PathBuf::from(&args.storage_path).join("sigstore")))
        .map_err(CliError::invalid)?;
    let ctx = Context::new(
        client.clone(),
        store.clone(),
        registries,
        metrics.clone(),
        settings(args, Arc::new(sigstore_root)),
    )
    .map_err(CliError::invalid)?;
    ctx.export_queue_metrics();
    Ok(Started {
        ctx,
        client,
        repositories,
        policies,
        metrics,
    })
}

/// `/metrics` and `/healthz`, `/readyz`, served until `stop`.
async fn serve_http(
    args: &RunArgs,
    (metrics_addr, health_addr): (std::net::SocketAddr, std::net::SocketAddr),
    (ctx, metrics, readiness): (&Arc<Context>, &Arc<Metrics>, &Readiness),
    stop: &CancellationToken,
) -> Result<tokio::task::JoinHandle<std::io::Result<((), ())>>, CliError> {
    let health = health_check(ctx, args.health_stuck_after);
    let serve = |server, addr, router| http::serve(server, addr, router, stop.clone());
    let metrics_server = serve(
        "metrics",
        metrics_addr,
        http::metrics_router(metrics.clone()),
    )
    .await
    .map_err(|e| CliError::failed(format!("listening on {}: {e}", args.metrics_addr)))?;
    let health_router = http::health_router(readiness.clone(), health);
    let health_server = serve("health", health_addr, health_router)
        .await
        .map_err(|e| CliError::failed(format!("listening on {}: {e}", args.health_addr)))?;
    Ok(tokio::spawn(async move {
        tokio::try_join!(metrics_server, health_server)
    }))
}

/// Stands by for the Lease (with election), then leads until shutdown or, with election,
/// until the Lease is lost.
async fn lead(
    args: &RunArgs,
    elector: &mut Option<Elector>,
    metrics: &Metrics,
    shutdown: &CancellationToken,
    work: Work<'_>,
) -> Ended {
    let leading = match elector {
        Some(elector) => {
            work.readiness.set_standby(true);
            metrics.set_leader(&elector.config.name, false);
            let leading = elector.acquire(shutdown).await;
            work.readiness.set_standby(false);
            metrics.set_leader(&elector.config.name, leading);
            leading
        }
        None => true,
    };
    if !leading {
        return Ended::Cancelled;
    }
    let holding = async {
        match elector {
            Some(elector) => elector.hold(shutdown).await,
            None => {
                shutdown.cancelled().await;
                Ended::Cancelled
            }
        }
    };
    run_as_leader(args, work, shutdown, holding).await
}

/// The API client, throttled by `--kube-api-qps`/`--kube-api-burst` unless the server has
/// Priority and Fairness. Configured as client-go does: a kubeconfig (`KUBECONFIG`, or
/// `~/.kube/config`) when there is one, else the Pod's own ServiceAccount (its token and CA
/// under /var/run/secrets/kubernetes.io/serviceaccount, the API server from
/// `KUBERNETES_SERVICE_HOST`/`_PORT`), which is what the installed Deployment uses.
async fn connect(
    args: &RunArgs,
    counts: crate::runtime::rest_client::RestClientCounts,
) -> Result<Client, CliError> {
    let options = kube::config::KubeConfigOptions::default();
    let (mut config, source) = match kube::Config::from_kubeconfig(&options).await {
        Ok(config) => (config, "kubeconfig"),
        Err(kubeconfig) => match kube::Config::incluster() {
            Ok(config) => (config, "in-cluster"),
            Err(in_cluster) => {
                return Err(CliError::failed(format!(
                    "connecting to Kubernetes: no kubeconfig ({kubeconfig}) and not in a Pod \
                     ({in_cluster}); run in a cluster or set KUBECONFIG"
                )))
            }
        },
    };
    config.apply_debug_overrides();
    tracing::info!(source, server = %config.cluster_url, "connecting to Kubernetes");
    throttle::client(config, args.kube_api_qps, args.kube_api_burst, counts)
        .await
        .map_err(|e| CliError::failed(format!("connecting to Kubernetes: {e}")))
}

fn open_store(args: &RunArgs) -> Result<Arc<dyn TagStore>, CliError> {
    let threshold = args.storage_compression_threshold as usize * 1024;
    let store = FsStore::open(&args.storage_path, threshold).map_err(|e| {
        CliError::failed(format!(
            "opening the tag store at {} (--storage-path): {e}",
            args.storage_path
        ))
    })?;
    Ok(Arc::new(store))
}

/// All namespaces, or only RUNTIME_NAMESPACE with `--watch-all-namespaces=false`.
fn scoped_api<K>(client: &Client, args: &RunArgs) -> Api<K>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    if args.watch_all_namespaces {
        Api::all(client.clone())
    } else {
        Api::namespaced(client.clone(), &args.runtime_namespace)
    }
}

/// The Lease: Flux's name (plus the selector's hash) in RUNTIME_NAMESPACE, or the pod's
/// namespace from its service account.
fn lease_config(args: &RunArgs) -> Result<LeaseConfig, CliError> {
    let namespace = runtime_namespace(
        args,
        "--enable-leader-election needs the namespace of its Lease",
    )?;
    Ok(LeaseConfig {
        name: leader::lease_name(&args.watch_label_selector),
        namespace,
        identity: leader::identity(),
        lease_duration: args.leader_election_lease_duration,
        renew_deadline: args.leader_election_renew_deadline,
        retry_period: args.leader_election_retry_period,
        release_on_cancel: args.leader_election_release_on_cancel,
    })
}

/// Fails with the fix when a CRD is missing, the selector is invalid, or the controller may
/// not list its objects.
async fn preflight<K>(api: &Api<K>, selector: &str) -> Result<(), CliError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    K::DynamicType: Default,
{
    let kind = K::kind(&K::DynamicType::default()).to_string();
    let mut params = ListParams::default().limit(1);
    if !selector.is_empty() {
        params = params.labels(selector);
    }
    match api.list_metadata(&params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Err(CliError::failed(format!(
            "the {kind} CRD is not installed: kubectl apply -f crds/crds.yaml \
             (or kubectl apply -k config/default)"
        ))),
        Err(kube::Error::Api(status)) if status.code == 400 && !selector.is_empty() => {
            Err(CliError::invalid(format!(
                "--watch-label-selector '{selector}' is not a valid label selector: {}",
                status.message
            )))
        }
        Err(e) => Err(CliError::failed(format!(
            "listing {kind}s: {}; check the controller's RBAC (config/rbac)",
            crate::controller::outcome::error::describe_api_error(&e)
        ))),
    }
}

/// `/healthz`: both loops running, none stuck (only while they are meant to run).
fn health_check(ctx: &Arc<Context>, stuck_after: Duration) -> http::HealthCheck {
    let (repositories, policies) = (ctx.repository_queue.clone(), ctx.policy_queue.clone());
    let started = Arc::new(std::sync::atomic::AtomicBool::new(false));
    Arc::new(move || {
        let queues = [repositories.as_ref(), policies.as_ref()];
        let running = queues.iter().all(|q| q.stats(Instant::now()).alive);
        // Before leadership (a stand-by) the loops have not started: that is healthy.
        if running {
            started.store(true, std::sync::atomic::Ordering::SeqCst);
        } else if !started.load(std::sync::atomic::Ordering::SeqCst) {
            return None;
        }
        unhealthy(&queues, stuck_after, Instant::now())
    })
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
        trigger.cancel();
    });
    token
}
