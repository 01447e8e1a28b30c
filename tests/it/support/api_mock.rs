//! A mocked Kubernetes API server for reconciler tests (kube's own tower-test pattern): the
//! test scripts the calls it expects, in order, with the answers to give; the mock records
//! what was sent. A missing call times out; an extra call finds the mock gone, so the
//! reconcile fails.

use http::{Request, Response};
use image_reflector::controller::frame::reconcile::reconcile;
use image_reflector::controller::frame::reconciled::Reconciled;
use kube::client::Body;
use kube::Client;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tower_test::mock::Handle;

/// One call the reconcile made (method and path were checked against the script).
#[derive(Clone, Debug)]
pub struct Call {
    pub query: String,
    pub body: Value,
}

/// Status and body of an answer, given the request body.
type Answer = Box<dyn Fn(&Value) -> (u16, Value) + Send>;

/// What the mock answers to one expected call.
pub struct Expect {
    pub method: &'static str,
    pub path: String,
    pub answer: Answer,
    /// Never answered: an API server that hangs.
    pub hang: bool,
}

impl Expect {
    /// A call answered 200 with `answer(request body)`.
    pub fn ok(
        method: &'static str,
        path: impl Into<String>,
        answer: impl Fn(&Value) -> Value + Send + 'static,
    ) -> Self {
        Expect {
            method,
            path: path.into(),
            answer: Box::new(move |body| (200, answer(body))),
            hang: false,
        }
    }

    /// A call that is never answered.
    pub fn hang(method: &'static str, path: impl Into<String>) -> Self {
        Expect {
            hang: true,
            ..Expect::ok(method, path, |_| Value::Null)
        }
    }

    /// A call answered with a NotFound `Status`.
    pub fn not_found(
        method: &'static str,
        path: impl Into<String>,
        kind: &str,
        name: &str,
    ) -> Self {
        let body = json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": format!("{kind} \"{name}\" not found"), "reason": "NotFound", "code": 404
        });
        Expect {
            method,
            path: path.into(),
            answer: Box::new(move |_| (404, body.clone())),
            hang: false,
        }
    }

    /// A GET of an object (a write confirmed by a fresh read): answered with `object`.
    pub fn get(plural: &str, namespace: &str, name: &str, object: Value) -> Self {
        Expect::ok(
            "GET",
            format!("/apis/image.toolkit.fluxcd.io/v1/namespaces/{namespace}/{plural}/{name}"),
            move |_| object.clone(),
        )
    }

    /// The status patch of an object: answered with `object` plus the patched status.
    pub fn status_patch(plural: &str, namespace: &str, name: &str, object: Value) -> Self {
        Expect::ok(
            "PATCH",
            format!(
                "/apis/image.toolkit.fluxcd.io/v1/namespaces/{namespace}/{plural}/{name}/status"
            ),
            move |body| {
                let mut object = object.clone();
                object["status"] = body["status"].clone();
                object
            },
        )
    }

    /// An event created in `namespace`: echoed back.
    pub fn event(namespace: &str) -> Self {
        Expect::ok(
            "POST",
            format!("/api/v1/namespaces/{namespace}/events"),
            |body| body.clone(),
        )
    }
}

/// A client whose API server is the script; await the returned task for the calls made.
pub fn mock(script: Vec<Expect>) -> (Client, tokio::task::JoinHandle<Vec<Call>>) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    (client, tokio::spawn(serve(handle, script)))
}

async fn serve(
    mut handle: Handle<Request<Body>, Response<Body>>,
    script: Vec<Expect>,
) -> Vec<Call> {
    let mut calls = Vec::new();
    for expect in script {
        let (request, send) = handle.next_request().await.unwrap_or_else(|| {
            panic!(
                "expected {} {}, but no call came",
                expect.method, expect.path
            )
        });
        let method = request.method().to_string();
        let path = request.uri().path().to_string();
        let query = request.uri().query().unwrap_or_default().to_string();
        let bytes = request
            .into_body()
            .collect_bytes()
            .await
            .expect("request body");
        let body: Value = if bytes.is_empty() {
            Value::Null
        } else {
            as_merge(serde_json::from_slice(&bytes).expect("JSON request body"))
        };
        // A path ending in `*` expects any path it starts (a name the test cannot know).
        let expected = match expect.path.strip_suffix('*') {
            Some(prefix) if path.starts_with(prefix) => path.as_str(),
            _ => expect.path.as_str(),
        };
        assert_eq!(
            (method.as_str(), path.as_str()),
            (expect.method, expected),
            "unexpected call; body: {body}"
        );
        let (status, answer) = (expect.answer)(&body);
        calls.push(Call { query, body });
        if expect.hang {
            // Neither answered nor dropped (a drop would fail the call at once).
            std::mem::forget(send);
            continue;
        }
        let response = Response::builder()
            .status(status)
            .body(Body::from(serde_json::to_vec(&answer).unwrap()))
            .unwrap();
        send.send_response(response);
    }
    calls
}

/// A guarded status write (a JSON patch, RFC 6902, that adds the whole `status`) as the merge
/// patch it amounts to, its operations kept under `jsonPatch`; any other body as it came.
fn as_merge(body: Value) -> Value {
    let Value::Array(ops) = &body else {
        return body;
    };
    let added = ops
        .iter()
        .find(|op| op["op"] == "add" && op["path"] == "/status");
    match added {
        Some(status) => json!({ "jsonPatch": ops.clone(), "status": status["value"].clone() }),
        None => body,
    }
}

/// The calls, once the script is done (fails after a second: a call never came).
pub async fn calls(task: tokio::task::JoinHandle<Vec<Call>>) -> Vec<Call> {
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the script finished in time")
        .expect("the mock API server did not panic")
}

/// A controller context over `client` with the defaults of `run`, changed by `settings`.
pub fn context(
    client: Client,
    store: std::sync::Arc<dyn image_reflector::store::TagStore>,
    settings: impl FnOnce(&mut image_reflector::controller::Settings),
) -> std::sync::Arc<image_reflector::controller::Context> {
    let mut s = image_reflector::controller::Settings {
        min_retry_delay: Duration::from_millis(750),
        max_retry_delay: Duration::from_secs(900),
        event_repeat_interval: Duration::from_secs(600),
        object_level_workload_identity: false,
        default_service_account: None,
        instance: "test".into(),
        events_addr: None,
        events_auth: Default::default(),
        requeue_dependency: Duration::from_secs(30),
        no_cross_namespace_refs: false,
        concurrent: 4,
        watched_namespace: None,
        // No mirror: keyless policies without a root of their own use the embedded one.
        sigstore_root: std::sync::Arc::new(
            image_reflector::registry::sigstore_root::PublicGoodRoot::new(Default::default()),
        ),
    };
    settings(&mut s);
    image_reflector::controller::Context::new(
        client,
        store,
        image_reflector::registry::Registries::new(Default::default()),
        std::sync::Arc::new(image_reflector::telemetry::metrics::Metrics::default()),
        s,
    )
    .unwrap()
}

/// Reconciles `obj` until its decision is written, as the controller does: a decision that
/// went on in the background (after `HANDOFF_AFTER`) is awaited through its wake, then taken
/// by the next reconcile. Returns the last reconcile's result and how many reconciles ran.
pub async fn reconcile_settled<K: Reconciled>(
    obj: Arc<K>,
    ctx: Arc<K::Ctx>,
) -> (
    Result<kube::runtime::controller::Action, image_reflector::controller::Error>,
    usize,
) {
    use futures::StreamExt;
    let mut wakes = K::handoffs(&ctx).wakes();
    let mut runs = 0;
    loop {
        let result = reconcile(obj.clone(), ctx.clone()).await;
        runs += 1;
        if K::handoffs(&ctx).parked() == 0 {
            return (result, runs);
        }
        let wakes = wakes.as_mut().expect("the wakes of the test's own context");
        wakes
            .next()
            .await
            .expect("a parked decision wakes its object");
    }
}
