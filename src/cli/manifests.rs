//! Kubernetes manifests read from files for `image-reflector scan`: multi-document YAML or
//! JSON, `kind: List`, directories. The objects found answer the reconciles' lookups (Secrets,
//! ServiceAccounts, ImageRepositories, Namespaces) as the API server would.

use super::error::{read_input, CliError};
use crate::api::{ImagePolicy, ImageRepository};
use crate::controller::image_policy::decide::PolicyReader;
use crate::controller::lookup::api_read::ReadError;
use crate::controller::lookup::credentials::ObjectReader;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use kube::ResourceExt;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The objects of a set of manifests.
#[derive(Default)]
pub struct Manifests {
    pub repositories: Vec<ImageRepository>,
    pub policies: Vec<ImagePolicy>,
    secrets: BTreeMap<(String, String), Secret>,
    accounts: BTreeMap<(String, String), ServiceAccount>,
    namespaces: BTreeMap<String, Namespace>,
}

impl Manifests {
    /// Reads every file of `paths` (`-` is standard input); objects without a namespace get
    /// `namespace`, and a new object's generation 1.
    pub fn read(paths: &[String], namespace: &str) -> Result<Self, CliError> {
        let mut manifests = Manifests::default();
        for path in paths {
            for file in files_of(path)? {
                let text = read_input(&file)?;
                let docs: Vec<Value> =
                    serde_saphyr::from_multiple_with_options(&text, manifest_budget())
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
            if kind != "Namespace" {
                meta.entry("namespace").or_insert_with(|| namespace.into());
            }
            // What the API server gives a new object.
            meta.entry("generation").or_insert_with(|| 1.into());
        }
        let meta = |field: &str| {
            doc.pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string()
        };
        let object = format!("{kind} {}/{}", meta("namespace"), meta("name"));
        let invalid = |e: serde_json::Error| CliError::invalid(format!("{file}: {object}: {e}"));
        match kind.as_str() {
            "ImageRepository" => {
                let repository: ImageRepository =
                    serde_json::from_value(doc.clone()).map_err(invalid)?;
                warn_unknown(file, &object, &doc, &repository);
                self.repositories.push(repository);
            }
            "ImagePolicy" => {
                let policy: ImagePolicy = serde_json::from_value(doc.clone()).map_err(invalid)?;
                warn_unknown(file, &object, &doc, &policy);
                self.policies.push(policy);
            }
            "Secret" => {
                let secret: Secret = serde_json::from_value(doc).map_err(invalid)?;
                self.secrets.insert(key(&secret), secret);
            }
            "ServiceAccount" => {
                let account: ServiceAccount = serde_json::from_value(doc).map_err(invalid)?;
                self.accounts.insert(key(&account), account);
            }
            "Namespace" => {
                let ns: Namespace = serde_json::from_value(doc).map_err(invalid)?;
                self.namespaces.insert(ns.name_any(), ns);
            }
            // Other kinds are not needed.
            _ => {}
        }
        Ok(())
    }
}

/// Says which fields of `doc`'s spec the object does not have (a typo such as `semvar:`): the
/// API server prunes them (kubectl warns), and so does this reading.
fn warn_unknown(file: &str, object: &str, doc: &Value, parsed: &impl serde::Serialize) {
    let back = serde_json::to_value(parsed).unwrap_or_default();
    let mut unknown = Vec::new();
    unknown_fields(&doc["spec"], &back["spec"], "spec", &mut unknown);
    for field in unknown {
        eprintln!("warning: {file}: {object}: unknown field {field} (ignored)");
    }
}

/// Paths of keys `given` has (with a value) and `known` lacks.
fn unknown_fields(given: &Value, known: &Value, path: &str, out: &mut Vec<String>) {
    let (Value::Object(given), Value::Object(known)) = (given, known) else {
        return;
    };
    for (key, value) in given {
        let here = format!("{path}.{key}");
        match known.get(key) {
            None if !value.is_null() => out.push(here),
            Some(inner) => unknown_fields(value, inner, &here, out),
            None => {}
        }
    }
}

fn key<K: kube::Resource>(obj: &K) -> (String, String) {
    (obj.namespace().unwrap_or_default(), obj.name_any())
}

impl ObjectReader for Manifests {
    async fn secret(&self, namespace: &str, name: &str) -> Result<Option<Secret>, ReadError> {
        Ok(self.secrets.get(&(namespace.into(), name.into())).cloned())
    }

    async fn service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ServiceAccount>, ReadError> {
        Ok(self.accounts.get(&(namespace.into(), name.into())).cloned())
    }
}

impl PolicyReader for Manifests {
    async fn image_repository(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ImageRepository>, ReadError> {
        Ok(self
            .repositories
            .iter()
            .find(|r| r.namespace().as_deref() == Some(namespace) && r.name_any() == name)
            .cloned())
    }

    /// A namespace not in the manifests is taken to exist without labels.
    async fn namespace_labels(
        &self,
        namespace: &str,
    ) -> Result<Option<BTreeMap<String, String>>, ReadError> {
        Ok(Some(
            self.namespaces
                .get(namespace)
                .map(|ns| ns.labels().clone())
                .unwrap_or_default(),
        ))
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

/// The YAML parser's bounds for manifest files: a cluster's worth of objects in one file
/// (serde-saphyr's defaults stop at 1,024 documents and 250,000 nodes). Input stays capped at
/// 256 MiB, which bounds everything else.
fn manifest_budget() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_documents: 200_000,
            max_nodes: 20_000_000,
            max_events: 50_000_000,
        },
    }
}
