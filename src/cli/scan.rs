//! `image-reflector scan -f <file|dir>`: reconciles the ImageRepositories and then the
//! ImagePolicies of some manifests offline, with the controller's own reconciles (same
//! credentials, same status), and prints tables like `kubectl get`, or with `-o yaml` the
//! status the controller would write. Secrets, ServiceAccounts and Namespaces are taken from
//! the same manifests; tags go to the embedded store (`--storage-path`).
//!
//! Exit codes: 0 everything is Ready, 2 invalid input or a Stalled object, 3 a failure (a scan,
//! credentials, a digest, a policy that elects nothing).

use super::error::CliError;
use super::manifests::Manifests;
use crate::api::ConditionStatus;
use crate::controller::image_policy::decide::{
    reconcile_policy, PolicyEnv, CONTINUE_WALK, MAX_INSPECTIONS, MAX_WALK,
};
use crate::controller::image_repository::decide::{reconcile_repository, Next, RepositoryEnv};
use crate::registry::{Registries, SchedulerConfig};
use crate::store::{FsStore, RepoKey, TagStore, DEFAULT_COMPRESSION_THRESHOLD};
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde_json::{json, Value};
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

/// Runs `scan`.
pub fn run(args: &ScanArgs, out: &mut impl Write) -> Result<(), CliError> {
    let mut manifests = Manifests::read(&args.files, &args.namespace)?;
    if manifests.repositories.is_empty() && manifests.policies.is_empty() {
        return Err(CliError::invalid(format!(
            "no ImageRepository or ImagePolicy in {}",
            args.files.join(", ")
        )));
    }
    let path = args
        .storage_path
        .clone()
        .unwrap_or_else(default_storage_path);
    let store: Arc<dyn TagStore> = Arc::new(
        FsStore::open(&path, DEFAULT_COMPRESSION_THRESHOLD).map_err(|e| {
            CliError::failed(format!("opening the tag store at {}: {e}", path.display()))
        })?,
    );
    let registries = Registries::new(SchedulerConfig::default());
    let sigstore_root = Arc::new(
        args.sigstore
            .public_good_root(Some(path.join("sigstore")))
            .map_err(CliError::invalid)?,
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(format!("starting the async runtime: {e}")))?;
    let concurrency = usize::from(args.concurrent);
    let keys = manifests
        .repositories
        .iter()
        .filter_map(|r| RepoKey::new(r.namespace().unwrap_or_default(), r.name_any()).ok());
    let unlisted = super::sightings::unlisted(&*store, keys);
    // Repositories first, in input order, up to --concurrent at a time; their new status is
    // what the policies then read, as in a cluster.
    let scanned: Vec<_> = runtime.block_on(
        futures::stream::iter(manifests.repositories.iter().map(|repo| {
            let (manifests, registries, store) = (&manifests, &registries, &store);
            async move {
                let env = RepositoryEnv {
                    reader: manifests,
                    registries,
                    store,
                    now: Timestamp::now(),
                    workload_identity: Default::default(),
                    running: None,
                };
                reconcile_repository(repo, &env).await
            }
        }))
        .buffered(concurrency)
        .collect(),
    );
    let mut results = Vec::new();
    for (repo, result) in manifests.repositories.iter_mut().zip(scanned) {
        repo.status = Some(result.status.clone());
        results.push(reconciled(repo, &repo.spec, &result.status, result.next));
    }
    let scanned_here = |_: &RepoKey| true;
    let policies: Vec<_> = runtime.block_on(
        futures::stream::iter(manifests.policies.iter().map(|policy| {
            let (manifests, registries, store, scanned_here, sigstore_root) = (
                &manifests,
                &registries,
                &store,
                &scanned_here,
                &sigstore_root,
            );
            async move {
                let env = PolicyEnv {
                    reader: manifests,
                    registries,
                    store,
                    now: Timestamp::now(),
                    workload_identity: Default::default(),
                    no_cross_namespace_refs: false,
                    requeue_dependency: Duration::from_secs(30),
                    repository_scanned: scanned_here,
                    // Offline: every digest is fetched.
                    first_since_start: false,
                    sigstore_root,
                };
                // A gated walk spends a few registry inspections per reconcile and goes on in
                // the next one (docs/imagepolicy.md): offline, the next ones run at once.
                let mut result = reconcile_policy(policy, &env).await;
                let mut going_on = policy.clone();
                for _ in 0..MAX_WALK.div_ceil(MAX_INSPECTIONS) {
                    if result.next != Next::After(CONTINUE_WALK) {
                        break;
                    }
                    going_on.status = Some(result.status.clone());
                    result = reconcile_policy(&going_on, &env).await;
                }
                result
            }
        }))
        .buffered(concurrency)
        .collect(),
    );
    for (policy, result) in manifests.policies.iter().zip(policies) {
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
        ScanOutput::Table => write_tables(out, &results),
        ScanOutput::Yaml => write_yaml(out, &results),
    };
    written.map_err(|e| CliError::failed(format!("writing output: {e}")))?;
    exit_status(&results)
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

/// Exit 0 when all are Ready; else 2 if any is Stalled, 3 otherwise.
fn exit_status(results: &[Reconciled]) -> Result<(), CliError> {
    let not_ready: Vec<&Reconciled> = results.iter().filter(|r| ready(r).0 != "True").collect();
    if not_ready.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = not_ready
        .iter()
        .map(|r| format!("{} {}/{}", r.kind, r.namespace, r.name))
        .collect();
    let message = format!("not ready: {}", names.join(", "));
    if not_ready.iter().any(|r| r.next == Next::AwaitChange) {
        Err(CliError::invalid(message))
    } else {
        Err(CliError::failed(message))
    }
}

/// The Ready condition's status and message.
fn ready(r: &Reconciled) -> (String, String) {
    r.status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .map(|c| {
            let status =
                serde_json::from_value(c["status"].clone()).unwrap_or(ConditionStatus::Unknown);
            let text = match status {
                ConditionStatus::True => "True",
                ConditionStatus::False => "False",
                ConditionStatus::Unknown => "Unknown",
            };
            (
                text.to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .unwrap_or_default()
}

/// `kubectl get`'s columns per kind, with the namespace first (and the digest for policies).
fn write_tables(out: &mut impl Write, results: &[Reconciled]) -> std::io::Result<()> {
    let text = |v: &Value| {
        v.as_str().map(String::from).unwrap_or_else(|| {
            if v.is_null() {
                String::new()
            } else {
                v.to_string()
            }
        })
    };
    let repositories: Vec<Vec<String>> = results
        .iter()
        .filter(|r| r.kind == "ImageRepository")
        .map(|r| {
            let (ready, message) = ready(r);
            let tags = text(&r.status["lastScanResult"]["tagCount"]);
            vec![
                r.namespace.clone(),
                r.name.clone(),
                text(&r.spec["image"]),
                tags,
                ready,
                message,
            ]
        })
        .collect();
    let policies: Vec<Vec<String>> = results
        .iter()
        .filter(|r| r.kind == "ImagePolicy")
        .map(|r| {
            let (ready, message) = ready(r);
            let latest = &r.status["latestRef"];
            let cells = [&latest["name"], &latest["tag"], &latest["digest"]].map(text);
            let [image, tag, digest] = cells;
            vec![
                r.namespace.clone(),
                r.name.clone(),
                image,
                tag,
                digest,
                ready,
                message,
            ]
        })
        .collect();
    let held: Vec<Vec<String>> = results
        .iter()
        .filter(|r| r.kind == "ImagePolicy")
        .flat_map(|r| {
            let list = r.status["heldBack"].as_array().cloned().unwrap_or_default();
            list.into_iter().map(|h| {
                let [tag, gate, reason] = [&h["tag"], &h["gate"], &h["reason"]].map(text);
                vec![r.namespace.clone(), r.name.clone(), tag, gate, reason]
            })
        })
        .collect();
    let mut first = true;
    for (header, rows) in [
        (
            &["NAMESPACE", "NAME", "IMAGE", "TAGS", "READY", "STATUS"][..],
            repositories,
        ),
        (
            &[
                "NAMESPACE",
                "NAME",
                "IMAGE",
                "TAG",
                "DIGEST",
                "READY",
                "STATUS",
            ][..],
            policies,
        ),
        (
            &["NAMESPACE", "POLICY", "HELD BACK", "GATE", "REASON"][..],
            held,
        ),
    ] {
        if rows.is_empty() {
            continue;
        }
        if !first {
            writeln!(out)?;
        }
        first = false;
        let mut all = vec![header.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
        all.extend(rows);
        write_aligned(out, &all)?;
    }
    Ok(())
}

/// Columns padded to their widest cell, three spaces apart; the last one as it is.
fn write_aligned(out: &mut impl Write, rows: &[Vec<String>]) -> std::io::Result<()> {
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns - 1)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        for (cell, width) in row.iter().zip(&widths) {
            write!(out, "{cell:<width$}   ")?;
        }
        writeln!(out, "{}", row[columns - 1])?;
    }
    Ok(())
}

/// Each object with the status the controller would write, as YAML documents.
fn write_yaml(out: &mut impl Write, results: &[Reconciled]) -> std::io::Result<()> {
    for r in results {
        let doc = json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1",
            "kind": r.kind,
            "metadata": {"name": r.name, "namespace": r.namespace},
            "spec": r.spec,
            "status": r.status,
        });
        let text = serde_saphyr::to_string(&doc).map_err(std::io::Error::other)?;
        write!(out, "---\n{text}")?;
    }
    Ok(())
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
