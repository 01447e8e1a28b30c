//! `image-reflector scan -f <file|dir>`: reconciles the ImageRepositories of some manifests
//! offline, with the controller's own reconcile (same credentials, same status), and prints a
//! table like `kubectl get imagerepositories`, or with `-o yaml` the status the controller
//! would write. Secrets and ServiceAccounts are taken from the same manifests; tags go to the
//! embedded store (`--storage-path`).
//!
//! Exit codes: 0 every repository is Ready, 2 invalid input or a Stalled repository, 3 a
//! repository failed to scan.

use super::error::{read_input, CliError};
use crate::api::{ConditionStatus, ImageRepository, ImageRepositoryStatus};
use crate::controller::credentials::ObjectReader;
use crate::controller::repository::{reconcile_repository, Next, RepositoryEnv};
use crate::registry::{Registries, SchedulerConfig};
use crate::store::{FsStore, TagStore, DEFAULT_COMPRESSION_THRESHOLD};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
}

/// Runs `scan`.
pub fn run(args: &ScanArgs, out: &mut impl Write) -> Result<(), CliError> {
    let manifests = Manifests::read(&args.files, &args.namespace)?;
    if manifests.repositories.is_empty() {
        return Err(CliError::invalid(format!(
            "no ImageRepository in {}",
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(format!("starting the async runtime: {e}")))?;
    // Results in input order; up to --concurrent reconciles at a time.
    let reconciles = manifests.repositories.iter().map(|repo| {
        let (manifests, registries, store) = (&manifests, &registries, &store);
        async move {
            let env = RepositoryEnv {
                reader: manifests,
                registries,
                store,
                now: Timestamp::now(),
                object_level_workload_identity: false,
            };
            let result = reconcile_repository(repo, &env).await;
            (repo, result.status, result.next)
        }
    });
    let results: Vec<_> = runtime.block_on(
        futures::stream::iter(reconciles)
            .buffered(usize::from(args.concurrent))
            .collect(),
    );
    let written = match args.output {
        ScanOutput::Table => write_table(out, &results),
        ScanOutput::Yaml => write_yaml(out, &results),
    };
    written.map_err(|e| CliError::failed(format!("writing output: {e}")))?;
    exit_status(&results)
}

/// Exit 0 when all are Ready; else 2 if any is Stalled, 3 otherwise.
fn exit_status(
    results: &[(&ImageRepository, ImageRepositoryStatus, Next)],
) -> Result<(), CliError> {
    let failing: Vec<String> = results
        .iter()
        .filter(|(_, _, next)| !matches!(next, Next::After(_)))
        .map(|(repo, _, _)| {
            format!(
                "{}/{}",
                repo.namespace().unwrap_or_default(),
                repo.name_any()
            )
        })
        .collect();
    if failing.is_empty() {
        return Ok(());
    }
    let message = format!("not ready: {}", failing.join(", "));
    if results
        .iter()
        .any(|(_, _, next)| *next == Next::AwaitChange)
    {
        Err(CliError::invalid(message))
    } else {
        Err(CliError::failed(message))
    }
}

fn ready_condition(status: &ImageRepositoryStatus) -> (String, String) {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .map(|c| {
            let s = match c.status {
                ConditionStatus::True => "True",
                ConditionStatus::False => "False",
                ConditionStatus::Unknown => "Unknown",
            };
            (s.to_string(), c.message.clone())
        })
        .unwrap_or_default()
}

/// The columns of `kubectl get imagerepositories`, with the namespace first.
fn write_table(
    out: &mut impl Write,
    results: &[(&ImageRepository, ImageRepositoryStatus, Next)],
) -> std::io::Result<()> {
    let mut rows = vec![[
        "NAMESPACE".to_string(),
        "NAME".into(),
        "IMAGE".into(),
        "TAGS".into(),
        "READY".into(),
        "STATUS".into(),
    ]];
    for (repo, status, _) in results {
        let (ready, message) = ready_condition(status);
        let tags = status
            .last_scan_result
            .as_ref()
            .map(|s| s.tag_count.to_string())
            .unwrap_or_default();
        rows.push([
            repo.namespace().unwrap_or_default(),
            repo.name_any(),
            repo.spec.image.clone(),
            tags,
            ready,
            message,
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(5) {
            write!(out, "{cell:<width$}   ", width = widths[i])?;
        }
        writeln!(out, "{}", row[5])?;
    }
    Ok(())
}

/// Each repository with the status the controller would write, as YAML documents.
fn write_yaml(
    out: &mut impl Write,
    results: &[(&ImageRepository, ImageRepositoryStatus, Next)],
) -> std::io::Result<()> {
    for (repo, status, _) in results {
        let doc = serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1",
            "kind": "ImageRepository",
            "metadata": {"name": repo.name_any(), "namespace": repo.namespace()},
            "spec": repo.spec,
            "status": status,
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

/// The objects of a set of manifests.
#[derive(Default)]
struct Manifests {
    repositories: Vec<ImageRepository>,
    secrets: BTreeMap<(String, String), Secret>,
    accounts: BTreeMap<(String, String), ServiceAccount>,
}

impl Manifests {
    fn read(paths: &[String], namespace: &str) -> Result<Self, CliError> {
        let mut manifests = Manifests::default();
        for path in paths {
            for file in files_of(path)? {
                let text = read_input(&file)?;
                let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
                    .map_err(|e| CliError::invalid(format!("{file}: {e}")))?;
                for doc in docs {
                    manifests.add(doc, namespace, &file)?;
                }
            }
        }
        Ok(manifests)
    }

    fn add(&mut self, mut doc: Value, namespace: &str, file: &str) -> Result<(), CliError> {
        let kind = doc
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if kind == "List" || kind.ends_with("List") {
            let items = doc.get_mut("items").map(Value::take).unwrap_or_default();
            for item in items.as_array().into_iter().flatten() {
                self.add(item.clone(), namespace, file)?;
            }
            return Ok(());
        }
        if let Some(meta) = doc.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.entry("namespace").or_insert_with(|| namespace.into());
            // What the API server gives a new object.
            meta.entry("generation").or_insert_with(|| 1.into());
        }
        let invalid = |e: serde_json::Error| CliError::invalid(format!("{file}: {kind}: {e}"));
        match kind.as_str() {
            "ImageRepository" => self
                .repositories
                .push(serde_json::from_value(doc).map_err(invalid)?),
            "Secret" => {
                let secret: Secret = serde_json::from_value(doc).map_err(invalid)?;
                self.secrets.insert(key(&secret), secret);
            }
            "ServiceAccount" => {
                let account: ServiceAccount = serde_json::from_value(doc).map_err(invalid)?;
                self.accounts.insert(key(&account), account);
            }
            // Other kinds (ImagePolicies, Namespaces, ...) are not scanned.
            _ => {}
        }
        Ok(())
    }
}

fn key<K: kube::Resource>(obj: &K) -> (String, String) {
    (obj.namespace().unwrap_or_default(), obj.name_any())
}

impl ObjectReader for Manifests {
    async fn secret(&self, namespace: &str, name: &str) -> Result<Option<Secret>, String> {
        Ok(self.secrets.get(&(namespace.into(), name.into())).cloned())
    }

    async fn service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ServiceAccount>, String> {
        Ok(self.accounts.get(&(namespace.into(), name.into())).cloned())
    }
}

/// A file, `-`, or the manifest files under a directory (sorted, so output is stable).
fn files_of(path: &str) -> Result<Vec<String>, CliError> {
    if path == "-" || !Path::new(path).is_dir() {
        return Ok(vec![path.to_string()]);
    }
    let mut found = Vec::new();
    let mut dirs = vec![PathBuf::from(path)];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| CliError::invalid(format!("reading {}: {e}", dir.display())))?;
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                dirs.push(p);
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            ) {
                found.push(p.to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    Ok(found)
}
