//! A fast fake OCI registry on 127.0.0.1 for the controller benchmark: N repositories
//! `bench/app-<i>` that share one generated tag list (so a million tags cost the benchmark one
//! list), tag pages of `n` with `Link` as Distribution 3 answers, manifest HEAD and GET with a
//! `Docker-Content-Digest` that is the sha256 of the body served, request counters, and tags
//! that can be pushed while the controller runs. HTTP/1.1 with keep-alive (axum), so
//! the registry is never what a measurement waits for.

use axum::body::Body;
use axum::http::{HeaderValue, Method, Request, Response, StatusCode};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What the registry was asked, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub tag_pages: u64,
    pub manifest_heads: u64,
    pub manifest_gets: u64,
    pub other: u64,
}

impl Counts {
    pub fn total(&self) -> u64 {
        self.tag_pages + self.manifest_heads + self.manifest_gets + self.other
    }

    pub fn since(&self, earlier: Counts) -> Counts {
        Counts {
            tag_pages: self.tag_pages - earlier.tag_pages,
            manifest_heads: self.manifest_heads - earlier.manifest_heads,
            manifest_gets: self.manifest_gets - earlier.manifest_gets,
            other: self.other - earlier.other,
        }
    }
}

#[derive(Default)]
struct Counters {
    tag_pages: AtomicU64,
    manifest_heads: AtomicU64,
    manifest_gets: AtomicU64,
    other: AtomicU64,
}

struct State {
    repositories: usize,
    base: Arc<Vec<String>>,
    /// Repositories whose tags differ from the base list (pushed to).
    own: Mutex<HashMap<usize, Arc<Vec<String>>>>,
    counters: Counters,
}

/// The running registry; it stops when dropped.
pub struct FakeRegistry {
    pub addr: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeRegistry {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The `j`th of `tags` generated tags: `1.<a>.<b>`, all valid semver, `1.<tags/100-1>.99` the
/// highest.
pub fn tag(j: usize) -> String {
    format!("1.{}.{}", j / 100, j % 100)
}

/// The repository path of repository `i`.
pub fn repository(i: usize) -> String {
    format!("bench/app-{i}")
}

impl FakeRegistry {
    pub async fn start(repositories: usize, tags: usize) -> FakeRegistry {
        let mut base: Vec<String> = (0..tags).map(tag).collect();
        // Distribution lists tags in lexical order.
        base.sort();
        let state = Arc::new(State {
            repositories,
            base: Arc::new(base),
            own: Mutex::default(),
            counters: Counters::default(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().unwrap();
        let served = state.clone();
        let app = axum::Router::new().fallback(move |request: Request<Body>| {
            let state = served.clone();
            async move { answer(&state, &request) }
        });
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("serve");
        });
        FakeRegistry { addr, state, task }
    }

    /// `127.0.0.1:<port>`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    pub fn counts(&self) -> Counts {
        let c = &self.state.counters;
        Counts {
            tag_pages: c.tag_pages.load(Ordering::SeqCst),
            manifest_heads: c.manifest_heads.load(Ordering::SeqCst),
            manifest_gets: c.manifest_gets.load(Ordering::SeqCst),
            other: c.other.load(Ordering::SeqCst),
        }
    }

    /// Adds `tag` to repository `i`.
    pub fn push(&self, i: usize, tag: &str) {
        let mut own = self.state.own.lock().unwrap();
        let list = own.entry(i).or_insert_with(|| self.state.base.clone());
        if let Err(at) = list.binary_search_by(|t| t.as_str().cmp(tag)) {
            Arc::make_mut(list).insert(at, tag.to_string());
        }
    }

    /// The digest repository `i` serves for `tag`.
    pub fn digest(&self, i: usize, tag: &str) -> String {
        let body = manifest(i, tag);
        format!("sha256:{:x}", Sha256::digest(body.as_bytes()))
    }
}

fn manifest(i: usize, tag: &str) -> String {
    format!(
        concat!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","#,
            r#""config":{{"mediaType":"application/vnd.oci.image.config.v1+json","#,
            r#""digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2}},"#,
            r#""layers":[],"annotations":{{"bench":"{}:{}"}}}}"#
        ),
        i, tag
    )
}

fn respond(status: StatusCode, body: impl Into<Body>) -> Response<Body> {
    let mut response = Response::new(body.into());
    *response.status_mut() = status;
    response
}

fn answer(state: &State, request: &Request<Body>) -> Response<Body> {
    let counters = &state.counters;
    let path = request.uri().path();
    let query = request.uri().query().unwrap_or("");
    let Some(rest) = path.strip_prefix("/v2/") else {
        counters.other.fetch_add(1, Ordering::Relaxed);
        return respond(StatusCode::NOT_FOUND, "");
    };
    let index = |name: &str| {
        name.strip_prefix("bench/app-")
            .and_then(|i| i.parse::<usize>().ok())
            .filter(|i| *i < state.repositories)
    };
    if let Some(name) = rest.strip_suffix("/tags/list") {
        counters.tag_pages.fetch_add(1, Ordering::Relaxed);
        let Some(i) = index(name) else {
            return respond(
                StatusCode::NOT_FOUND,
                r#"{"errors":[{"code":"NAME_UNKNOWN"}]}"#,
            );
        };
        return tag_page(state, name, i, query);
    }
    if let Some((name, reference)) = rest.split_once("/manifests/") {
        let head = request.method() == Method::HEAD;
        let counter = if head {
            &counters.manifest_heads
        } else {
            &counters.manifest_gets
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let list = index(name).map(|i| (i, tags_of(state, i)));
        let Some((i, _)) =
            list.filter(|(_, tags)| tags.binary_search_by(|t| t.as_str().cmp(reference)).is_ok())
        else {
            return respond(
                StatusCode::NOT_FOUND,
                r#"{"errors":[{"code":"MANIFEST_UNKNOWN"}]}"#,
            );
        };
        let body = manifest(i, reference);
        let digest = format!("sha256:{:x}", Sha256::digest(body.as_bytes()));
        let length = body.len();
        let mut response = respond(StatusCode::OK, if head { String::new() } else { body });
        let headers = response.headers_mut();
        headers.insert(
            "Content-Type",
            HeaderValue::from_static("application/vnd.oci.image.manifest.v1+json"),
        );
        headers.insert("Docker-Content-Digest", digest.parse().unwrap());
        if head {
            headers.insert("Content-Length", length.into());
        }
        return response;
    }
    counters.other.fetch_add(1, Ordering::Relaxed);
    if rest.is_empty() {
        return respond(StatusCode::OK, "{}");
    }
    respond(StatusCode::NOT_FOUND, "")
}

fn tags_of(state: &State, i: usize) -> Arc<Vec<String>> {
    state
        .own
        .lock()
        .unwrap()
        .get(&i)
        .cloned()
        .unwrap_or_else(|| state.base.clone())
}

fn tag_page(state: &State, name: &str, i: usize, query: &str) -> Response<Body> {
    let param = |key: &str| {
        query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (k == key).then_some(v)
        })
    };
    let n = param("n")
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(100)
        .clamp(1, 1000);
    let tags = tags_of(state, i);
    let start = match param("last") {
        Some(last) => tags.partition_point(|t| t.as_str() <= last),
        None => 0,
    };
    let end = (start + n).min(tags.len());
    let page = &tags[start..end];
    let body = serde_json::to_vec(&serde_json::json!({ "name": name, "tags": page })).unwrap();
    let mut response = respond(StatusCode::OK, body);
    let headers = response.headers_mut();
    headers.insert("Content-Type", HeaderValue::from_static("application/json"));
    if end < tags.len() {
        let link = format!(
            "</v2/{name}/tags/list?n={n}&last={}>; rel=\"next\"",
            tags[end - 1]
        );
        headers.insert("Link", link.parse().unwrap());
    }
    response
}
