//! The controller's HTTP endpoints: `/metrics` (OpenMetrics text) on `--metrics-addr`, and
//! `/healthz` and `/readyz` on `--health-addr`. `/readyz` answers 200 once the caches have
//! synced, or while this replica waits as a leader-election stand-by (so a rollout of two
//! replicas completes); `/healthz` fails when a reconcile loop ended or is stuck.

use crate::telemetry::metrics::Metrics;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Whether every cache has synced: each watch holds a [`ReadyPart`].
#[derive(Clone, Default)]
pub struct Readiness {
    parts: Arc<AtomicUsize>,
    done: Arc<AtomicUsize>,
    standby: Arc<AtomicBool>,
    detail: Arc<std::sync::OnceLock<Detail>>,
}

/// A line `/readyz` adds to its text, when there is one (it does not fail the probe).
pub type Detail = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// One cache's share of [`Readiness`].
#[derive(Clone)]
pub struct ReadyPart {
    fired: Arc<AtomicBool>,
    done: Arc<AtomicUsize>,
}

impl Readiness {
    /// A new part that must report before the whole is ready.
    pub fn part(&self) -> ReadyPart {
        self.parts.fetch_add(1, Ordering::SeqCst);
        ReadyPart {
            fired: Arc::default(),
            done: self.done.clone(),
        }
    }

    pub fn is_ready(&self) -> bool {
        let parts = self.parts.load(Ordering::SeqCst);
        self.standby.load(Ordering::SeqCst)
            || (parts > 0 && self.done.load(Ordering::SeqCst) >= parts)
    }

    /// What `/readyz` says besides whether it is ready (set once).
    pub fn set_detail(&self, detail: Detail) {
        let _ = self.detail.set(detail);
    }

    fn text(&self) -> String {
        let detail = self.detail.get().and_then(|detail| detail());
        detail.map_or_else(|| "ok".to_string(), |detail| format!("ok\n{detail}"))
    }

    /// While waiting for the leader Lease this replica has no caches and is ready as it is.
    pub fn set_standby(&self, standby: bool) {
        self.standby.store(standby, Ordering::SeqCst);
    }
}

impl ReadyPart {
    /// Marks this cache synced (again is a no-op: a re-list does not count twice).
    pub fn set_ready(&self) {
        if !self.fired.swap(true, Ordering::SeqCst) {
            self.done.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Parses Flux's address form (`:8080` means every interface).
pub fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    let full = match text.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => text.to_string(),
    };
    full.parse()
        .map_err(|_| format!("invalid address '{text}': use host:port or :port"))
}

/// The `/metrics` router. The answer is encoded in pieces, gzipped when the scraper accepts
/// it, and sent as it is held (chunked): a scrape costs about its own size in memory, once,
/// and holds no lock while it is sent.
pub fn metrics_router(metrics: Arc<Metrics>) -> Router {
    use crate::telemetry::exposition::{accepts_gzip, wants_openmetrics, OPENMETRICS, TEXT_004};
    Router::new().route(
        "/metrics",
        get(move |headers: axum::http::HeaderMap| {
            let metrics = metrics.clone();
            async move {
                let header_text = |name| headers.get(name).and_then(|v| v.to_str().ok());
                let openmetrics = wants_openmetrics(header_text(header::ACCEPT));
                let gzip = accepts_gzip(header_text(header::ACCEPT_ENCODING));
                let pieces = metrics.encode_chunks(!openmetrics, gzip);
                let body = axum::body::Body::from_stream(futures::stream::iter(
                    pieces
                        .into_iter()
                        .map(|p| Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(p))),
                ));
                let kind = if openmetrics { OPENMETRICS } else { TEXT_004 };
                let mut response = ([(header::CONTENT_TYPE, kind)], body).into_response();
                if gzip {
                    response.headers_mut().insert(
                        header::CONTENT_ENCODING,
                        axum::http::HeaderValue::from_static("gzip"),
                    );
                }
                response
            }
        }),
    )
}

/// Why the process is unhealthy, if it is.
pub type HealthCheck = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// The `/healthz` and `/readyz` router.
pub fn health_router(readiness: Readiness, health: HealthCheck) -> Router {
    Router::new()
        .route(
            "/healthz",
            get(move || {
                let problem = health();
                async move {
                    match problem {
                        None => (StatusCode::OK, "ok".to_string()).into_response(),
                        Some(why) => (StatusCode::INTERNAL_SERVER_ERROR, why).into_response(),
                    }
                }
            }),
        )
        .route(
            "/readyz",
            get(move || {
                let ready = readiness.is_ready();
                let text = readiness.text();
                async move {
                    if ready {
                        (StatusCode::OK, text).into_response()
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced").into_response()
                    }
                }
            }),
        )
}

/// Binds `addr` and serves `router` until `shutdown`.
pub async fn serve(
    server: &'static str,
    addr: SocketAddr,
    router: Router,
    shutdown: CancellationToken,
) -> std::io::Result<impl std::future::Future<Output = std::io::Result<()>>> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    // The bound address, which port 0 leaves to the kernel: what a probe or a scrape must use.
    tracing::info!(server, address = %listener.local_addr()?, "listening");
    Ok(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await
    })
}

#[cfg(test)]
mod tests {
    use super::parse_addr;

    #[test]
    fn ready_once_every_part_synced() {
        let readiness = super::Readiness::default();
        assert!(!readiness.is_ready(), "no part yet");
        let (a, b) = (readiness.part(), readiness.part());
        a.set_ready();
        a.set_ready();
        assert!(!readiness.is_ready(), "one part twice is not two");
        b.set_ready();
        assert!(readiness.is_ready());
        let standby = super::Readiness::default();
        standby.set_standby(true);
        assert!(standby.is_ready(), "a stand-by is ready without caches");
    }

    #[tokio::test]
    async fn healthz_fails_with_the_reason_and_readyz_follows_the_caches() {
        use tower::Service;
        let get = |path: &str| {
            axum::http::Request::get(path)
                .body(axum::body::Body::empty())
                .unwrap()
        };
        let readiness = super::Readiness::default();
        let problem = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
        let check = problem.clone();
        let mut router = super::health_router(
            readiness.clone(),
            std::sync::Arc::new(move || check.lock().unwrap().clone()),
        );
        let status = |r: axum::response::Response| r.status().as_u16();
        assert_eq!(status(router.call(get("/healthz")).await.unwrap()), 200);
        assert_eq!(status(router.call(get("/readyz")).await.unwrap()), 503);
        readiness.part().set_ready();
        assert_eq!(status(router.call(get("/readyz")).await.unwrap()), 200);
        *problem.lock().unwrap() = Some("the imagepolicy controller is not running".into());
        let response = router.call(get("/healthz")).await.unwrap();
        assert_eq!(response.status().as_u16(), 500);
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        assert_eq!(&body[..], b"the imagepolicy controller is not running");
    }

    #[tokio::test]
    async fn metrics_are_gzipped_for_a_scraper_that_accepts_it() {
        use std::io::Read;
        use tower::Service;
        let metrics = std::sync::Arc::new(crate::telemetry::metrics::Metrics::default());
        metrics.set_scan("team", "app", 42, 1.7e9);
        let mut router = super::metrics_router(metrics.clone());
        let scrape = |encoding: Option<&str>| {
            let mut request = axum::http::Request::get("/metrics");
            if let Some(e) = encoding {
                request = request.header("Accept-Encoding", e);
            }
            request.body(axum::body::Body::empty()).unwrap()
        };
        let plain = router.call(scrape(None)).await.unwrap();
        assert!(plain.headers().get("Content-Encoding").is_none());
        let plain = axum::body::to_bytes(plain.into_body(), 1 << 20)
            .await
            .unwrap();
        let text = String::from_utf8(plain.to_vec()).unwrap();
        assert!(text.contains("image_reflector_repository_tags{"), "{text}");

        let gzipped = router.call(scrape(Some("gzip"))).await.unwrap();
        assert_eq!(gzipped.headers()["Content-Encoding"], "gzip");
        let body = axum::body::to_bytes(gzipped.into_body(), 1 << 20)
            .await
            .unwrap();
        let mut unzipped = String::new();
        flate2::read::GzDecoder::new(&body[..])
            .read_to_string(&mut unzipped)
            .unwrap();
        assert_eq!(unzipped, text);
    }

    #[test]
    fn parses_flux_addresses() {
        assert_eq!(parse_addr(":8080").unwrap().to_string(), "0.0.0.0:8080");
        assert_eq!(
            parse_addr("127.0.0.1:9440").unwrap().to_string(),
            "127.0.0.1:9440"
        );
        assert!(parse_addr("8080").is_err());
    }
}
