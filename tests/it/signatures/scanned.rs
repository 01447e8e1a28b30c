//! `image-reflector scan -o yaml` of a manifest file, and what it wrote for each ImagePolicy.

use crate::support::run_bin;
use serde_json::Value;
use std::path::Path;

/// One scan's output.
pub struct Scanned {
    pub code: Option<i32>,
    docs: Vec<Value>,
    /// stdout and stderr, for assertion messages.
    pub text: String,
}

impl Scanned {
    /// Scans `file` with its store in `storage` (kept between scans of the same test).
    pub fn run(file: &str, storage: &Path) -> Scanned {
        let storage = storage.to_str().unwrap();
        let args = ["scan", "-f", file, "--storage-path", storage, "-o", "yaml"];
        let out = run_bin(&args, None);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let text = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        let docs = serde_saphyr::from_multiple::<Value>(&stdout)
            .unwrap_or_else(|e| panic!("{e}:\n{text}"));
        Scanned {
            code: out.status.code(),
            docs,
            text,
        }
    }

    /// The status of the ImagePolicy `name`.
    pub fn status(&self, name: &str) -> Value {
        self.docs
            .iter()
            .find(|d| d["kind"] == "ImagePolicy" && d["metadata"]["name"] == name)
            .map(|d| d["status"].clone())
            .unwrap_or_else(|| panic!("no ImagePolicy {name}:\n{}", self.text))
    }

    /// The tag `name` elected (empty: none).
    pub fn elected(&self, name: &str) -> String {
        let status = self.status(name);
        status["latestRef"]["tag"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Why `name` held `tag` back.
    pub fn held(&self, name: &str, tag: &str) -> String {
        self.status(name)["heldBack"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|h| h["tag"] == tag)
            .map(|h| h["reason"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("{tag} not held back by {name}:\n{}", self.text))
    }
}
