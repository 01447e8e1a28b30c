//! `image-reflector scan -f <file|dir>`: reconciles the ImageRepositories and then the
//! ImagePolicies of some manifests offline, with the controller's own reconciles (same
//! credentials, same status), and prints tables like `kubectl get`, or with `-o yaml` the
//! status the controller would write. Secrets, ServiceAccounts and Namespaces are taken from
//! the same manifests; tags go to the embedded store (`--storage-path`).
//!
//! Exit codes: 0 everything is Ready, 2 invalid input or a Stalled object, 3 a failure (a scan,
//! credentials, a digest, a policy that elects nothing).

mod output;

use super::error::CliError;
use super::manifests::Manifests;
use crate::api::ImagePolicy;
use crate::controller::image_policy::decide::{
    reconcile_policy, PolicyEnv, PolicyResult, CONTINUE_WALK, MAX_INSPECTIONS, MAX_WALK,
};
use crate::controller::image_repository::decide::{reconcile_repository, Next, RepositoryEnv};
use crate::policy::MAX_DATED;
use crate::registry::sigstore_root::PublicGoodRoot;
use crate::registry::{Registries, SchedulerConfig};
use crate::store::{FsStore, RepoKey, TagStore, DEFAULT_COMPRESSION_THRESHOLD};
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Output of `scan`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanOutput {
    Table,
    Yaml,
}

/// Options of `scan`.
#[derive(clap::Args, Debug)]
pub struct ScanArgs {
    /// Manifests: a file (multi-document YAML or JSON, `kind: List` too), a directory (its
    /// .yaml, .yml and .json files, recursively), or - for standard input. Repeatable.
    #[arg(short = 'f', long = "filename", required = true, value_name = "PATH")]
    pub files: Vec<String>,
    /// The namespace of objects that name none.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    /// The tag store's directory (default: the user's cache directory).
    #[arg(long, value_name = "DIR")]
    pub storage_path: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = ScanOutput::Table)]
    pub output: ScanOutput,
    /// Repositories reconciled at once (as the controller's --concurrent).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrent: u16,
    /// Sigstore's trusted root for keyless policies without one of their own.
    #[command(flatten)]
    pub sigstore: super::run::SigstoreArgs,
}

/// One reconciled object.
struct Reconciled {
    kind: &'static str,
    namespace: String,
    name: String,
    spec: Value,
    status: Value,
    next: Next,
}

/// Runs `scan`: the repositories, then the policies that read them, then what they came to.
pub fn run(args: &ScanArgs, out: &mut impl Write) -> Result<(), CliError> {
    let mut manifests = Manifests::read(&args.files, &args.namespace)?;
    if manifests.repositories.is_empty() && manifests.policies.is_empty() {
        return Err(CliError::invalid(format!(
            "no ImageRepository or ImagePolicy in {}",
            args.files.join(", ")
        )));
    }
    let offline = Offline::open(args)?;
    let keys = manifests
        .repositories
        .iter()
        .filter_map(|r| RepoKey::new(r.namespace().unwrap_or_default(), r.name_any()).ok());
    let unlisted = super::sightings::unlisted(&*offline.store, keys);
    let mut results = offline.scan_repositories(&mut manifests);
    for (policy, result) in manifests.policies.iter().zip(offline.elect(&manifests)) {
        if let Some(note) = super::sightings::note(policy, &unlisted) {
            eprintln!("note: {note}");
        }
        results.push(reconciled(
            policy,
            &policy.spec,
            &result.status,
            result.next,
        ));
    }
    let written = match args.output {
        ScanOutput::Table => output::write_tables(out, &results),
        ScanOutput::Yaml => output::write_yaml(out, &results),
    };
    written.map_err(|e| CliError::failed(format!("writing output: {e}")))?;
    output::exit_status(&results)
}

/// What a scan reconciles with: the store, the registry clients, Sigstore's root, a runtime.
struct Offline {
    store: Arc<dyn TagStore>,
    registries: Arc<Registries>,
    sigstore_root: Arc<PublicGoodRoot>,
    runtime: tokio::runtime::Runtime,
    concurrency: usize,
}

impl Offline {
    fn open(args: &ScanArgs) -> Result<Offline, CliError> {
        let path = args
            .storage_path
            .clone()
            .unwrap_or_else(default_storage_path);
        let store = FsStore::open(&path, DEFAULT_COMPRESSION_THRESHOLD).map_err(|e| {
            CliError::failed(format!("opening the tag store at {}: {e}", path.display()))
        })?;
        let sigstore_root = args.sigstore.public_good_root(Some(path.join("sigstore")));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| CliError::failed(format!("starting the async runtime: {e}")))?;
        Ok(Offline {
            store: Arc::new(store),
            registries: Registries::new(SchedulerConfig::default()),
            sigstore_root: Arc::new(sigstore_root.map_err(CliError::invalid)?),
            runtime,
            concurrency: usize::from(args.concurrent),
        })
    }

    /// The repositories, in input order, up to --concurrent at a time; their new status is
    /// what the policies then read, as in a cluster.
    fn scan_repositories(&self, manifests: &mut Manifests) -> Vec<Reconciled> {
        let scanned: Vec<_> = self.runtime.block_on(
            futures::stream::iter(manifests.repositories.iter().map(|repo| {
                let env = RepositoryEnv {
                    reader: &*manifests,
                    registries: &self.registries,
                    store: &self.store,
                    now: Timestamp::now(),
                    workload_identity: Default::default(),
                    running: None,
                };
                async move { reconcile_repository(repo, &env).await }
            }))
            .buffered(self.concurrency)
            .collect(),
        );
        let mut results = Vec::new();
        for (repo, result) in manifests.repositories.iter_mut().zip(scanned) {
            repo.status = Some(result.status.clone());
            results.push(reconciled(repo, &repo.spec, &result.status, result.next));
        }
        results
    }

    /// The policies' elections, up to --concurrent at a time.
    fn elect(&self, manifests: &Manifests) -> Vec<PolicyResult> {
        let scanned_here = |_: &RepoKey| true;
        self.runtime.block_on(
            futures::stream::iter(manifests.policies.iter().map(|policy| {
                let env = PolicyEnv {
                    reader: manifests,
                    registries: &self.registries,
                    store: &self.store,
                    now: Timestamp::now(),
                    workload_identity: Default::default(),
                    no_cross_namespace_refs: false,
                    requeue_dependency: Duration::from_secs(30),
                    repository_scanned: &scanned_here,
                    // Offline: every digest is fetched.
                    first_since_start: false,
                    sigstore_root: &self.sigstore_root,
                };
                async move { elect_at_once(policy, &env).await }
            }))
            .buffered(self.concurrency)
            .collect(),
        )
    }
}

/// A gated walk, or a newest order's dating, spends a few registry inspections per reconcile
/// and goes on in the next one (docs/imagepolicy.md): offline, the next ones run at once.
async fn elect_at_once(policy: &ImagePolicy, env: &PolicyEnv<'_, Manifests>) -> PolicyResult {
    let rounds = (MAX_WALK + MAX_DATED).div_ceil(MAX_INSPECTIONS);
    let mut result = reconcile_policy(policy, env).await;
    let mut going_on = policy.clone();
    for _ in 0..rounds {
        if result.next != Next::After(CONTINUE_WALK) {
            break;
        }
        going_on.status = Some(result.status.clone());
        result = reconcile_policy(&going_on, env).await;
    }
    result
}

fn reconciled<K, S, T>(obj: &K, spec: &S, status: &T, next: Next) -> Reconciled
where
    K: kube::Resource<DynamicType = ()>,
    S: serde::Serialize,
    T: serde::Serialize,
{
    Reconciled {
        kind: if K::kind(&()) == "ImagePolicy" {
            "ImagePolicy"
        } else {
            "ImageRepository"
        },
        namespace: obj.namespace().unwrap_or_default(),
        name: obj.name_any(),
        spec: serde_json::to_value(spec).unwrap_or_default(),
        status: serde_json::to_value(status).unwrap_or_default(),
        next,
    }
}

/// `$XDG_CACHE_HOME/image-reflector`, else `~/.cache/image-reflector`.
fn default_storage_path() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("image-reflector")
}
