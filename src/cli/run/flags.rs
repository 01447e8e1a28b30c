//! The flags of `image-reflector run`: Flux's names and defaults (docs/operations.md), so
//! Flux's own Deployment arguments are accepted as they are. Flags that mean nothing here
//! (Badger's sizes, the unused configs selector) are accepted and named in one warning.

use crate::api::parse_go_duration;
use crate::telemetry::logging::{LogEncoding, LogLevel};
use clap::ArgAction;
use std::collections::BTreeMap;
use std::time::Duration;

/// Where Sigstore's public-good trusted root comes from (`run` and `scan`).
#[derive(clap::Args, Debug, Clone)]
pub struct SigstoreArgs {
    /// The TUF repository Sigstore's trusted root is read from, for keyless policies without a
    /// trusted_root.json of their own; empty: never read (the copy of its last read kept in the
    /// store, verified again and used until its metadata expires, else the one embedded in the
    /// binary). A mirror that serves what TUF refuses is trusted for nothing.
    #[arg(long, default_value = crate::registry::sigstore_root::DEFAULT_MIRROR)]
    pub sigstore_tuf_mirror: String,
    /// A TUF root.json to trust for that repository instead of the public-good one embedded in
    /// the binary (another Sigstore instance's); the embedded trusted root is then never used.
    #[arg(long, default_value = "", value_name = "FILE")]
    pub sigstore_tuf_root: String,
}

impl SigstoreArgs {
    /// The root provider these flags describe, keeping what it reads in `cache`.
    pub fn public_good_root(
        &self,
        cache: Option<std::path::PathBuf>,
    ) -> Result<crate::registry::sigstore_root::PublicGoodRoot, String> {
        use crate::registry::sigstore_root::{PublicGoodRoot, Settings};
        let mirror = match self.sigstore_tuf_mirror.as_str() {
            "" => None,
            url => Some(
                url.parse()
                    .map_err(|e| format!("--sigstore-tuf-mirror {url:?} is not a URL: {e}"))?,
            ),
        };
        let anchor = match self.sigstore_tuf_root.as_str() {
            "" => None,
            file => {
                Some(std::fs::read(file).map_err(|e| format!("--sigstore-tuf-root {file}: {e}"))?)
            }
        };
        Ok(PublicGoodRoot::new(Settings {
            mirror,
            anchor,
            cache,
        }))
    }
}

/// Options of `run`.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Where `/metrics` is served.
    #[arg(long, default_value = ":8080")]
    pub metrics_addr: String,
    /// Where `/healthz` and `/readyz` are served.
    #[arg(long, default_value = ":9440")]
    pub health_addr: String,
    /// The notification-controller's event webhook; empty: events are not forwarded.
    #[arg(long, default_value = "")]
    pub events_addr: String,
    /// PEM certificates the notification-controller's TLS is verified with besides the system
    /// roots (Flux's `flux-ca-bundle`); with an `http://` address, TLS is tried first.
    #[arg(long, default_value = "")]
    pub events_ca_file: String,
    /// Flux's client flag (RFC #6032): the ConfigMap of the controller's namespace (Flux's
    /// `flux-ca-bundle`) whose certificates verify the notification-controller's TLS, watched;
    /// instead of `--events-ca-file`.
    #[arg(long, default_value = "")]
    pub tls_ca_bundle: String,
    /// A projected ServiceAccount token (audience `toolkit.fluxcd.io`) sent as a bearer token
    /// over verified TLS only; read at each event.
    #[arg(long, default_value = "")]
    pub events_token_file: String,
    /// The tag store's directory.
    #[arg(long, default_value = "/data")]
    pub storage_path: String,
    /// Sigstore's trusted root for keyless policies without one of their own.
    #[command(flatten)]
    pub sigstore: SigstoreArgs,
    /// Tag lists of at least this many KiB are stored gzipped.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub storage_compression_threshold: u64,
    /// Minutes between removals of the stored tags of deleted ImageRepositories; 0 disables.
    #[arg(long, default_value_t = 10)]
    pub gc_interval: u16,
    /// Reconciles run at once, per kind.
    #[arg(long, default_value_t = 4)]
    pub concurrent: u16,
    /// How long an ImagePolicy waits before looking again at a repository without tags.
    #[arg(long, default_value = "30s", value_parser = parse_go_duration)]
    pub requeue_dependency: Duration,
    /// The first retry delay after a failure (doubles per failure).
    #[arg(long, default_value = "750ms", value_parser = parse_go_duration)]
    pub min_retry_delay: Duration,
    /// The longest retry delay after repeated failures.
    #[arg(long, default_value = "15m", value_parser = parse_go_duration)]
    pub max_retry_delay: Duration,
    /// An identical Warning event is sent at most once per this interval.
    #[arg(long, default_value = "10m", value_parser = parse_go_duration)]
    pub event_repeat_interval: Duration,
    /// Forbid ImagePolicies to refer to ImageRepositories in other namespaces.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub no_cross_namespace_refs: bool,
    /// Watch every namespace; `--watch-all-namespaces=false` watches only RUNTIME_NAMESPACE.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub watch_all_namespaces: bool,
    /// Only ImageRepositories and ImagePolicies with these labels (sharding), e.g.
    /// `sharding.fluxcd.io/key=shard1` or `!sharding.fluxcd.io/key`.
    #[arg(long, default_value = "")]
    pub watch_label_selector: String,
    /// The namespace of the pod: the namespace watched when not watching all, and the home of
    /// the leader-election Lease.
    #[arg(long, env = "RUNTIME_NAMESPACE", default_value = "")]
    pub runtime_namespace: String,
    /// Run as one of several replicas: only the holder of the Lease reconciles.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub enable_leader_election: bool,
    /// Give the Lease up at shutdown, so a stand-by takes over at once.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub leader_election_release_on_cancel: bool,
    /// How long a Lease is valid after its last renewal.
    #[arg(long, default_value = "35s", value_parser = parse_go_duration)]
    pub leader_election_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up leadership.
    #[arg(long, default_value = "30s", value_parser = parse_go_duration)]
    pub leader_election_renew_deadline: Duration,
    /// How often the Lease is renewed, and how often a stand-by looks at it.
    #[arg(long, default_value = "5s", value_parser = parse_go_duration)]
    pub leader_election_retry_period: Duration,
    /// Client-side API requests per second (off when the API server has Priority and Fairness).
    #[arg(long, default_value_t = 50.0)]
    pub kube_api_qps: f32,
    /// Client-side API request burst (off when the API server has Priority and Fairness).
    #[arg(long, default_value_t = 300)]
    pub kube_api_burst: u32,
    /// `Gate=true|false,...`: CacheSecretsAndConfigMaps, FluxStorage, ObjectLevelWorkloadIdentity.
    #[arg(long, default_value = "", value_parser = FeatureGates::parse)]
    pub feature_gates: FeatureGates,
    /// The ServiceAccount of object-level workload identity when an object names none.
    #[arg(long, default_value = "")]
    pub default_service_account: String,
    /// Cloud registry tokens kept at most (0 disables the cache).
    #[arg(long, default_value_t = 100)]
    pub token_cache_max_size: u32,
    /// The longest a cloud registry token is kept.
    #[arg(long, default_value = "1h", value_parser = parse_go_duration)]
    pub token_cache_max_duration: Duration,
    /// Log level.
    #[arg(long, value_enum, default_value_t = LogLevel::Info)]
    pub log_level: LogLevel,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogEncoding::Json)]
    pub log_encoding: LogEncoding,
    /// How often the schema the API server serves for our kinds is read (a 304 while it is
    /// unchanged): a change restarts the watches, and a schema without our fields is reported
    /// (docs/install.md, "While Flux's CRDs are served").
    #[arg(long, default_value = "10s", value_parser = parse_schema_interval)]
    pub served_schema_interval: Duration,
    /// `/healthz` fails when a reconcile has been running for longer than this.
    #[arg(long, default_value = "15m", value_parser = parse_go_duration)]
    pub health_stuck_after: Duration,
    /// At shutdown, the longest wait for in-flight reconciles before the Lease is released
    /// and the process exits (inside Flux's 10 s termination grace period).
    #[arg(long, default_value = "7s", value_parser = parse_go_duration)]
    pub graceful_shutdown_timeout: Duration,
    /// Send traces (one span per reconcile, with registry, store and status children) to
    /// this OTLP/HTTP collector, e.g. `http://jaeger:4318`. `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// and the other `OTEL_*` variables are honoured too.
    #[arg(long, default_value = "")]
    pub otlp_endpoint: String,
    #[command(flatten)]
    pub ignored: IgnoredFlags,
}

/// Flux flags that have no meaning here: accepted so Flux's Deployment starts, then named in
/// one warning.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct IgnoredFlags {
    /// Ignored (Badger's value log size; the tag store here is the filesystem).
    #[arg(long, hide = true)]
    pub storage_value_log_file_size: Option<String>,
    /// Ignored (Flux binds it but never uses it in this controller).
    #[arg(long, hide = true)]
    pub watch_configs_label_selector: Option<String>,
}

impl IgnoredFlags {
    /// The names of the ignored flags that were given.
    pub fn given(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.storage_value_log_file_size.is_some() {
            names.push("--storage-value-log-file-size");
        }
        if self.watch_configs_label_selector.is_some() {
            names.push("--watch-configs-label-selector");
        }
        names
    }
}

/// The feature gates Flux defines, with Flux's defaults (§5.1).
const GATES: [(&str, bool); 3] = [
    ("CacheSecretsAndConfigMaps", false),
    ("FluxStorage", false),
    ("ObjectLevelWorkloadIdentity", false),
];

/// `--feature-gates`: Flux's gates and their values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureGates(BTreeMap<&'static str, bool>);

impl Default for FeatureGates {
    fn default() -> Self {
        FeatureGates(GATES.into_iter().collect())
    }
}

impl FeatureGates {
    /// Parses `A=true,B=false` as Flux does: an unknown gate is an error.
    pub fn parse(text: &str) -> Result<FeatureGates, String> {
        let mut gates = FeatureGates::default();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("missing bool value for {item}"))?;
            let (key, value) = (key.trim(), value.trim());
            let known = GATES
                .iter()
                .find(|(name, _)| *name == key)
                .map(|(name, _)| *name)
                .ok_or_else(|| format!("feature-gate '{key}' not supported"))?;
            let enabled = parse_go_bool(value)
                .ok_or_else(|| format!("invalid value of {key}={value}, err: invalid syntax"))?;
            gates.0.insert(known, enabled);
        }
        Ok(gates)
    }

    pub fn enabled(&self, gate: &str) -> bool {
        self.0.get(gate).copied().unwrap_or(false)
    }
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

impl RunArgs {
    /// Cross-flag checks, in Flux's start-up order, with Flux's messages where it has one.
    pub fn validate(&self) -> Result<(), String> {
        if !self.default_service_account.is_empty()
            && !self.feature_gates.enabled("ObjectLevelWorkloadIdentity")
        {
            return Err("cannot set default service accounts when the feature gate \
                        ObjectLevelWorkloadIdentity is not enabled"
                .into());
        }
        if !self.watch_all_namespaces && self.runtime_namespace.is_empty() {
            return Err(
                "--watch-all-namespaces=false needs the RUNTIME_NAMESPACE environment variable \
                 (or --runtime-namespace)"
                    .into(),
            );
        }
        if self.enable_leader_election {
            let (lease, renew, retry) = (
                self.leader_election_lease_duration,
                self.leader_election_renew_deadline,
                self.leader_election_retry_period,
            );
            // client-go's own checks of the same three values.
            if lease <= renew {
                return Err("--leader-election-lease-duration must be greater than \
                            --leader-election-renew-deadline"
                    .into());
            }
            if renew <= retry.mul_f64(1.2) {
                return Err("--leader-election-renew-deadline must be greater than \
                            1.2 × --leader-election-retry-period"
                    .into());
            }
            if retry.is_zero() {
                return Err("--leader-election-retry-period must be greater than zero".into());
            }
        }
        if !self.tls_ca_bundle.is_empty() && !self.events_ca_file.is_empty() {
            return Err(
                "--tls-ca-bundle and --events-ca-file both name the events' CA bundle: \
                        give one"
                    .into(),
            );
        }
        if self.kube_api_qps.is_nan() || self.kube_api_qps < 0.0 {
            return Err("--kube-api-qps must be zero or more".into());
        }
        Ok(())
    }

    /// What the start-up warning lists: flags and gates accepted but without effect here.
    pub fn without_effect(&self) -> Vec<String> {
        let mut names: Vec<String> = self.ignored.given().iter().map(|n| n.to_string()).collect();
        // FluxStorage is how the store always works here; Secrets are always read live.
        if self.feature_gates.enabled("CacheSecretsAndConfigMaps") {
            names.push("--feature-gates=CacheSecretsAndConfigMaps=true".into());
        }
        names
    }
}

/// `--served-schema-interval`: a Go duration of at least a second.
fn parse_schema_interval(text: &str) -> Result<Duration, String> {
    let interval = parse_go_duration(text)?;
    if interval < Duration::from_secs(1) {
        return Err(format!(
            "{text} is under a second: the API server would be asked too often"
        ));
    }
    Ok(interval)
}
