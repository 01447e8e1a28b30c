//! What the policies decided, read the same way whether `image-reflector scan` or the controller
//! on a real API server decided it, so that each test asserts one list of outcomes on both.

use crate::support::run_bin;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The statuses of the ImagePolicies of one run.
pub trait Judged {
    /// The status of the ImagePolicy `name`.
    fn status(&self, name: &str) -> Value;
    /// Everything written, for assertion messages.
    fn text(&self) -> &str;

    /// The tag `name` elected (empty: none).
    fn elected(&self, name: &str) -> String {
        let status = self.status(name);
        status["latestRef"]["tag"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Asserts that `name` elected `tag` (at `digest`, when the policy reflects digests).
    fn assert_elected(&self, name: &str, tag: &str, digest: Option<&str>) {
        let got = &self.status(name)["latestRef"];
        let want = (Some(tag), digest);
        assert_eq!(
            (got["tag"].as_str(), got["digest"].as_str()),
            want,
            "{name}:\n{}",
            self.text()
        );
    }

    /// Asserts that `name` held `tag` back for a reason that contains `why`.
    fn assert_held(&self, name: &str, tag: &str, why: &str) {
        let reason = self.held(name, tag);
        assert!(
            reason.contains(why),
            "{name} held {tag} back: {reason}, not {why:?}"
        );
    }

    /// Why `name` held `tag` back.
    fn held(&self, name: &str, tag: &str) -> String {
        self.status(name)["heldBack"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|h| h["tag"] == tag)
            .map(|h| h["reason"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("{tag} not held back by {name}:\n{}", self.text()))
    }
}

/// One scan's output.
pub struct Scanned {
    pub code: Option<i32>,
    docs: Vec<Value>,
    /// stdout and stderr.
    text: String,
}

impl Scanned {
    /// Scans `file` with its store in `storage` (kept between scans of the same test).
    pub fn run(file: &str, storage: &Path) -> Scanned {
        Scanned::run_with(file, storage, &[])
    }

    /// [`Scanned::run`] with more flags.
    pub fn run_with(file: &str, storage: &Path, extra: &[&str]) -> Scanned {
        let storage = storage.to_str().unwrap();
        let mut args = vec!["scan", "-f", file, "--storage-path", storage, "-o", "yaml"];
        args.extend(extra);
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
}

impl Judged for Scanned {
    fn status(&self, name: &str) -> Value {
        self.docs
            .iter()
            .find(|d| d["kind"] == "ImagePolicy" && d["metadata"]["name"] == name)
            .map(|d| d["status"].clone())
            .unwrap_or_else(|| panic!("no ImagePolicy {name}:\n{}", self.text))
    }

    fn text(&self) -> &str {
        &self.text
    }
}

/// The ImagePolicies as the API server has them once the controller decided each.
pub struct InCluster {
    policies: BTreeMap<String, Value>,
    text: String,
}

impl InCluster {
    /// Applies `objects` (written for the namespace `team`) in a new namespace, runs the
    /// controller there with the installed RBAC until each policy of `want` elected its tag (an
    /// empty tag: found no eligible tag), and reads the policies.
    pub fn run(objects: &str, want: &[(&str, &str)]) -> InCluster {
        InCluster::run_with(objects, want, &[])
    }

    /// [`InCluster::run`] with more flags for the controller.
    pub fn run_with(objects: &str, want: &[(&str, &str)], extra: &[&str]) -> InCluster {
        use crate::support::cluster::*;
        install_crds();
        // Tests run at once in one process: each call its own namespace.
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ns = Namespace(format!(
            "image-reflector-signed-{}-{call}",
            std::process::id()
        ));
        ok(kubectl(&["create", "namespace", &ns.0], None));
        let objects = objects.replace("namespace: team", &format!("namespace: {}", ns.0));
        ok(kubectl(&["apply", "-f", "-"], Some(&objects)));
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = install_and_controller_kubeconfig(dir.path());
        let controller = Controller::start_with(&ns.0, &kubeconfig, extra);
        let mut policies = BTreeMap::new();
        for (name, tag) in want {
            let object = format!("imagepolicy/{name}");
            match *tag {
                "" => wait_for(
                    &ns.0,
                    &object,
                    r#"{.status.conditions[?(@.type=="Ready")].reason}"#,
                    "NoEligibleTag",
                ),
                tag => wait_for(&ns.0, &object, "{.status.latestRef.tag}", tag),
            }
            policies.insert(name.to_string(), get_json(&ns.0, &object)["status"].clone());
        }
        assert!(controller.stop().success());
        let text = serde_json::to_string_pretty(&policies).unwrap();
        InCluster { policies, text }
    }
}

impl Judged for InCluster {
    fn status(&self, name: &str) -> Value {
        self.policies
            .get(name)
            .cloned()
            .unwrap_or_else(|| panic!("ImagePolicy {name} was not awaited"))
    }

    fn text(&self) -> &str {
        &self.text
    }
}
