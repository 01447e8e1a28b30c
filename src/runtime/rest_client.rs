//! `rest_client_requests_total{code,method,host}`, as client-go counts the requests of a
//! controller-runtime controller: every request the controller's API client sends, by the
//! HTTP status it got (`<error>` when none), its method and the API server's host. A tower
//! layer on kube's client; the counts are read at scrape time.

use crate::telemetry::collect::{Kind, Series, Source};
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// (code, method, host).
type RequestLabels = (String, String, String);

/// The counts, shared by the layer and the metrics.
#[derive(Clone, Debug, Default)]
pub struct RestClientCounts(Arc<Mutex<HashMap<RequestLabels, u64>>>);

impl RestClientCounts {
    fn count(&self, code: String, method: String, host: String) {
        *self
            .0
            .lock()
            .expect("rest client counts lock")
            .entry((code, method, host))
            .or_default() += 1;
    }
}

impl Source for RestClientCounts {
    fn series(&self) -> Vec<Series> {
        let counts = self.0.lock().expect("rest client counts lock");
        let mut series = Series::new(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            Kind::Counter,
        );
        for ((code, method, host), n) in counts.iter() {
            series = series.sample(
                vec![
                    ("code", code.clone()),
                    ("method", method.clone()),
                    ("host", host.clone()),
                ],
                *n as f64,
            );
        }
        vec![series]
    }
}

/// Counts the requests of the client it wraps; `host` is the API server's (`host:port`).
#[derive(Clone, Debug)]
pub struct CountLayer {
    pub counts: RestClientCounts,
    pub host: String,
}

impl<S> tower::Layer<S> for CountLayer {
    type Service = Count<S>;
    fn layer(&self, inner: S) -> Count<S> {
        Count {
            inner,
            layer: self.clone(),
        }
    }
}

pub struct Count<S> {
    inner: S,
    layer: CountLayer,
}

impl<S, B, RB> tower::Service<http::Request<B>> for Count<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<RB>>,
    S::Future: Send + 'static,
    S::Error: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let method = request.method().to_string();
        let (counts, host) = (self.layer.counts.clone(), self.layer.host.clone());
        let answer = self.inner.call(request);
        Box::pin(async move {
            let result = answer.await;
            let code = match &result {
                Ok(response) => response.status().as_u16().to_string(),
                Err(_) => "<error>".to_string(),
            };
            counts.count(code, method, host);
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::{Layer, Service, ServiceExt};

    #[tokio::test]
    async fn requests_are_counted_by_code_method_and_host() {
        let counts = RestClientCounts::default();
        let layer = CountLayer {
            counts: counts.clone(),
            host: "10.96.0.1:443".into(),
        };
        let inner = tower::service_fn(|request: http::Request<()>| async move {
            let status = if request.uri().path() == "/missing" {
                404
            } else {
                200
            };
            Ok::<_, std::convert::Infallible>(
                http::Response::builder().status(status).body(()).unwrap(),
            )
        });
        let mut service = layer.layer(inner);
        for (method, path) in [
            ("GET", "/a"),
            ("GET", "/b"),
            ("PATCH", "/a"),
            ("GET", "/missing"),
        ] {
            let request = http::Request::builder()
                .method(method)
                .uri(path)
                .body(())
                .unwrap();
            service.ready().await.unwrap().call(request).await.unwrap();
        }
        let series = counts.series();
        let mut samples: Vec<(String, f64)> = series[0]
            .samples
            .iter()
            .map(|(labels, n)| {
                (
                    labels
                        .iter()
                        .map(|(_, v)| v.as_str())
                        .collect::<Vec<_>>()
                        .join(","),
                    *n,
                )
            })
            .collect();
        samples.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            samples,
            [
                ("200,GET,10.96.0.1:443".to_string(), 2.0),
                ("200,PATCH,10.96.0.1:443".to_string(), 1.0),
                ("404,GET,10.96.0.1:443".to_string(), 1.0)
            ]
        );
    }
}
