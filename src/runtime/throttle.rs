//! `--kube-api-qps` and `--kube-api-burst`: client-side throttling of API requests, as
//! client-go's token bucket does it, and switched off, as Flux does, when the API server has
//! Priority and Fairness (which then protects itself and tells clients to wait).

use kube::client::ClientBuilder;
use kube::{Client, Config};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
// tokio's clock: the same as std's in production, and virtual under a paused test runtime.
use tokio::time::Instant;

/// A token bucket: `qps` tokens a second, at most `burst` saved.
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    pub fn new(qps: f64, burst: u32, now: Instant) -> Self {
        let burst = f64::from(burst.max(1));
        TokenBucket {
            qps,
            burst,
            state: Mutex::new((burst, now)),
        }
    }

    /// Takes a token and says how long to wait before using it (zero: at once).
    pub fn reserve(&self, now: Instant) -> Duration {
        let mut state = self.state.lock().expect("token bucket lock");
        let (tokens, last) = *state;
        let elapsed = now.saturating_duration_since(last).as_secs_f64();
        let available = (tokens + elapsed * self.qps).min(self.burst) - 1.0;
        *state = (available, now.max(last));
        if available >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-available / self.qps)
        }
    }
}

/// The layer that throttles a kube client's requests.
#[derive(Clone)]
pub struct ThrottleLayer(Arc<TokenBucket>);

impl ThrottleLayer {
    /// `qps` requests a second after a burst of `burst`.
    pub fn new(qps: f32, burst: u32) -> Self {
        ThrottleLayer(Arc::new(TokenBucket::new(
            f64::from(qps),
            burst,
            Instant::now(),
        )))
    }
}

impl<S> tower::Layer<S> for ThrottleLayer {
    type Service = Throttle<S>;
    fn layer(&self, inner: S) -> Throttle<S> {
        Throttle {
            inner,
            bucket: self.0.clone(),
            wait: None,
            reserved: false,
        }
    }
}

/// Waits for a token before it is ready. kube's client puts a buffer in front, so requests
/// queue there, in order, while the bucket refills.
pub struct Throttle<S> {
    inner: S,
    bucket: Arc<TokenBucket>,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
    reserved: bool,
}

impl<S, R> tower::Service<R> for Throttle<S>
where
    S: tower::Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        if !self.reserved {
            self.reserved = true;
            let wait = self.bucket.reserve(Instant::now());
            if !wait.is_zero() {
                self.wait = Some(Box::pin(tokio::time::sleep(wait)));
            }
        }
        if let Some(wait) = self.wait.as_mut() {
            if wait.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.wait = None;
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> S::Future {
        self.reserved = false;
        self.inner.call(request)
    }
}

/// Whether the API server applies Priority and Fairness: it names the flow schema of every
/// answer in `X-Kubernetes-PF-FlowSchema-UID` (what client-go's check looks at).
pub async fn has_priority_and_fairness(client: &Client) -> bool {
    let request = http::Request::get("/livez/ping")
        .body(Vec::new())
        .expect("a static request");
    match client.send(request.map(kube::client::Body::from)).await {
        Ok(response) => response
            .headers()
            .contains_key("x-kubernetes-pf-flowschema-uid"),
        Err(_) => false,
    }
}

/// The controller's client: its requests counted in `counts`, throttled to `qps`/`burst`
/// unless the server has Priority and Fairness or `qps` is 0.
pub async fn client(
    config: Config,
    qps: f32,
    burst: u32,
    counts: super::rest_client::RestClientCounts,
) -> Result<Client, kube::Error> {
    let counted = super::rest_client::CountLayer {
        counts,
        host: config
            .cluster_url
            .authority()
            .map(|a| a.to_string())
            .unwrap_or_default(),
    };
    let plain = Client::try_from(config.clone())?;
    let builder = ClientBuilder::try_from(config)?.with_layer(&counted);
    if qps <= 0.0 || has_priority_and_fairness(&plain).await {
        tracing::debug!("client-side API throttling off (Priority and Fairness, or qps 0)");
        return Ok(builder.build());
    }
    tracing::info!(
        qps,
        burst,
        "client-side API throttling on: the API server has no Priority and Fairness"
    );
    Ok(builder.with_layer(&ThrottleLayer::new(qps, burst)).build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_qps() {
        let t0 = Instant::now();
        let bucket = TokenBucket::new(10.0, 3, t0);
        for _ in 0..3 {
            assert_eq!(bucket.reserve(t0), Duration::ZERO, "the burst is free");
        }
        let ms = |d: Duration| d.as_millis();
        assert_eq!(ms(bucket.reserve(t0)), 100, "then one every 100 ms");
        assert_eq!(
            ms(bucket.reserve(t0)),
            200,
            "queued behind the previous one"
        );
        // After a second of quiet the bucket is full again (at most the burst).
        let later = t0 + Duration::from_secs(2);
        for _ in 0..3 {
            assert_eq!(bucket.reserve(later), Duration::ZERO);
        }
        assert_eq!(ms(bucket.reserve(later)), 100);
    }
}
