//! The schema the API server serves for our kinds, known to the process: read at start and
//! every `--served-schema-interval` (10 s) from the OpenAPI v3 discovery document of `image.toolkit.fluxcd.io/v1`,
//! with its ETag (an unchanged document costs a 304).
//!
//! Why that document and not the CRDs: it is the schema of the API server answering us, as
//! it took in the CRDs, and every authenticated identity may read it (`system:discovery`), so
//! the supported install that swaps only the image and keeps Flux's RBAC needs no new rule; a
//! CRD read would need cluster-wide `get` on CustomResourceDefinitions.
//!
//! When a kind's schema changes its watch is restarted (a fresh list: objects a watch opened
//! under the old schema decoded are replaced by whole ones). While the ImagePolicy schema
//! lacks fields beyond Flux's, the log, the metric `image_reflector_served_schema_fields_missing`,
//! `/readyz`'s text and an Event on each policy say so (docs/install.md).

use super::served::{read, Served};
use crate::api::API_GROUP;
use crate::telemetry::metrics::Metrics;
use kube::Client;
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Far above the document of our two kinds (about 130 KiB): more is not read.
const MAX_DOCUMENT: usize = 8 << 20;

/// What is known of the served schema, and the restarts of the watches it asks for.
pub struct ServedSchema {
    state: Mutex<State>,
    /// Bumped when the ImagePolicy schema changes: its watch restarts.
    policy_epoch: watch::Sender<u64>,
    /// Bumped when the ImageRepository schema changes.
    repository_epoch: watch::Sender<u64>,
}

#[derive(Default)]
struct State {
    /// The last reading; `None` before the first, or while the document cannot be read.
    served: Option<Served>,
    etag: Option<String>,
    /// Policies told (by an Event) that the served schema lacks fields, since it changed.
    told: HashSet<String>,
}

impl Default for ServedSchema {
    fn default() -> Self {
        ServedSchema {
            state: Mutex::default(),
            policy_epoch: watch::Sender::new(0),
            repository_epoch: watch::Sender::new(0),
        }
    }
}

impl ServedSchema {
    /// The ImagePolicy fields beyond Flux's the served schema lacks; `None` while unknown.
    pub fn lacking(&self) -> Option<Vec<&'static str>> {
        let state = self.state();
        let served = state.served.as_ref()?;
        Some(served.policy.as_ref().map_or_else(
            || crate::api::BEYOND_FLUX.to_vec(),
            |policy| policy.lacking.clone(),
        ))
    }

    /// What the policy `key` is to be told, once since the schema last changed: the fields
    /// the served schema lacks, if it lacks any.
    pub fn news_for(&self, key: &str) -> Option<Vec<&'static str>> {
        let lacking = self.lacking().filter(|l| !l.is_empty())?;
        self.state().told.insert(key.to_string()).then_some(lacking)
    }

    /// Forgets a deleted policy.
    pub fn forget(&self, key: &str) {
        self.state().told.remove(key);
    }

    /// Restarts of the ImagePolicy watch (each new value asks for one).
    pub fn policy_restarts(&self) -> watch::Receiver<u64> {
        self.policy_epoch.subscribe()
    }

    /// Restarts of the ImageRepository watch.
    pub fn repository_restarts(&self) -> watch::Receiver<u64> {
        self.repository_epoch.subscribe()
    }

    /// A line for `/readyz` while the served schema lacks fields.
    pub fn detail(&self) -> Option<String> {
        let lacking = self.lacking().filter(|l| !l.is_empty())?;
        Some(format!(
            "the API server serves ImagePolicy without spec.{}: apply image-reflector's CRDs \
             (docs/install.md)",
            lacking.join(", spec.")
        ))
    }

    /// Takes a new reading: restarts the watch of each kind whose schema changed since the
    /// last one (none on the first), and says what the ImagePolicy schema lacks when it
    /// changes.
    pub fn take(&self, served: Served) {
        let mut state = self.state();
        let Some(before) = state.served.replace(served.clone()) else {
            drop(state);
            self.report(&served, true);
            return;
        };
        if before == served {
            return;
        }
        state.told.clear();
        drop(state);
        if before.policy != served.policy {
            self.policy_epoch.send_modify(|epoch| *epoch += 1);
        }
        if before.repository != served.repository {
            self.repository_epoch.send_modify(|epoch| *epoch += 1);
        }
        self.report(&served, false);
    }

    fn report(&self, served: &Served, first: bool) {
        match (served.policy.as_ref(), self.detail()) {
            (None, _) => tracing::warn!(
                group = API_GROUP,
                "the API server serves no ImagePolicy in image.toolkit.fluxcd.io/v1: apply \
                 image-reflector's CRDs (docs/install.md)"
            ),
            (Some(_), Some(detail)) => tracing::warn!(
                "{detail}; policies that set them are held with their last election, the \
                 others run as under Flux's controller"
            ),
            (Some(_), None) if first => {
                tracing::debug!("the API server serves image-reflector's ImagePolicy schema")
            }
            (Some(_), None) => tracing::info!(
                "the API server serves image-reflector's ImagePolicy schema (again): watches \
                 restarted, held policies resume"
            ),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Reads the served schema `every` so often until `shutdown`; the metric follows it.
pub async fn follow(
    schema: &ServedSchema,
    client: Client,
    metrics: &Metrics,
    every: Duration,
    shutdown: CancellationToken,
) {
    loop {
        let etag = schema.state().etag.clone();
        match fetch(&client, etag).await {
            Ok(Fetched::Unchanged) => {}
            Ok(Fetched::Document { served, etag }) => {
                schema.state().etag = etag;
                schema.take(served);
            }
            Err(err) => tracing::debug!(error = %err, "could not read the served schema"),
        }
        let missing = schema.lacking().map_or(-1, |l| l.len() as i64);
        metrics.set_served_schema_fields_missing(missing);
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
    }
}

enum Fetched {
    Unchanged,
    Document {
        served: Served,
        etag: Option<String>,
    },
}

/// One read of the document, `If-None-Match` the last ETag. A 404 (no CRD of the group
/// version) reads as nothing served.
async fn fetch(client: &Client, etag: Option<String>) -> Result<Fetched, String> {
    let mut request = http::Request::get(format!("/openapi/v3/apis/{API_GROUP}/v1"));
    if let Some(etag) = etag {
        request = request.header(http::header::IF_NONE_MATCH, etag);
    }
    let request = request.body(Vec::new()).map_err(|e| e.to_string())?;
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    if status == http::StatusCode::NOT_MODIFIED {
        return Ok(Fetched::Unchanged);
    }
    if status == http::StatusCode::NOT_FOUND {
        let served = Served::default();
        return Ok(Fetched::Document { served, etag: None });
    }
    if !status.is_success() {
        return Err(format!("the API server answered {status}"));
    }
    let etag = response.headers().get(http::header::ETAG);
    let etag = etag.and_then(|v| v.to_str().ok()).map(str::to_string);
    let length = response.headers().get(http::header::CONTENT_LENGTH);
    let length = length.and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if length.is_some_and(|l| l > MAX_DOCUMENT) {
        return Err(format!("the document is over {MAX_DOCUMENT} bytes"));
    }
    let body = response
        .into_body()
        .collect_bytes()
        .await
        .map_err(|e| e.to_string())?;
    if body.len() > MAX_DOCUMENT {
        return Err(format!("the document is over {MAX_DOCUMENT} bytes"));
    }
    let document: serde_json::Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    Ok(Fetched::Document {
        served: read(&document),
        etag,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::schema::served::KindSchema;

    fn served(fingerprint: u64, lacking: Vec<&'static str>) -> Served {
        let repository = KindSchema {
            fingerprint: 1,
            lacking: vec![],
        };
        Served {
            policy: Some(KindSchema {
                fingerprint,
                lacking,
            }),
            repository: Some(repository),
        }
    }

    /// The document's bound, written out (about 130 KiB for our two kinds).
    #[test]
    fn a_document_is_read_up_to_8_mib() {
        assert_eq!(MAX_DOCUMENT, 8_388_608);
    }

    #[test]
    fn a_changed_schema_restarts_its_kinds_watch_and_tells_each_policy_once() {
        let schema = ServedSchema::default();
        let (policies, repositories) = (schema.policy_restarts(), schema.repository_restarts());
        assert_eq!(schema.lacking(), None, "unknown before the first reading");
        assert_eq!(schema.news_for("ImagePolicy/team/app"), None);
        schema.take(served(7, vec![]));
        assert_eq!(
            (*policies.borrow(), *repositories.borrow()),
            (0, 0),
            "the first reading"
        );
        assert_eq!(schema.detail(), None);
        schema.take(served(8, vec!["verify"]));
        assert_eq!((*policies.borrow(), *repositories.borrow()), (1, 0));
        assert_eq!(
            schema.news_for("ImagePolicy/team/app"),
            Some(vec!["verify"])
        );
        assert_eq!(schema.news_for("ImagePolicy/team/app"), None, "told once");
        schema.forget("ImagePolicy/team/app");
        assert_eq!(
            schema.news_for("ImagePolicy/team/app"),
            Some(vec!["verify"]),
            "a policy deleted and made again is told again"
        );
        assert!(schema.detail().unwrap().contains("without spec.verify"));
        schema.take(served(8, vec!["verify"]));
        assert_eq!(*policies.borrow(), 1, "unchanged: no restart");
        schema.take(served(9, vec![]));
        assert_eq!(*policies.borrow(), 2);
        assert_eq!(
            schema.news_for("ImagePolicy/team/app"),
            None,
            "nothing lacking"
        );
        schema.take(Served::default());
        assert_eq!(
            schema.lacking(),
            Some(crate::api::BEYOND_FLUX.to_vec()),
            "no ImagePolicy"
        );
        assert_eq!((*policies.borrow(), *repositories.borrow()), (3, 1));
    }
}
