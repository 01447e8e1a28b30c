//! Opt-in OTLP traces (`--otlp-endpoint`, or the standard `OTEL_EXPORTER_OTLP_ENDPOINT` /
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): one span per reconcile, with child spans for
//! registry requests, store writes and status patches, sent over OTLP/HTTP (protobuf, or JSON
//! with `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`). `OTEL_SDK_DISABLED=true` turns them off.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{SpanExporter, WithExportConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_subscriber::filter::{filter_fn, Filtered};
use tracing_subscriber::Layer;

/// The service name traces carry, unless `OTEL_SERVICE_NAME` says otherwise.
pub const SERVICE_NAME: &str = "image-reflector-controller";

/// The endpoint to export to, if tracing is on: the flag (a base URL, `/v1/traces` added when
/// it has no path), else the environment, read by the exporter itself.
pub fn endpoint(flag: &str, env: impl Fn(&str) -> Option<String>) -> Option<Option<String>> {
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return None;
    }
    if !flag.is_empty() {
        let base = flag.trim_end_matches('/');
        let has_path = base
            .split_once("://")
            .map_or(base, |(_, rest)| rest)
            .contains('/');
        return Some(Some(if has_path {
            base.to_string()
        } else {
            format!("{base}/v1/traces")
        }));
    }
    let from_env = [
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]
    .iter()
    .any(|var| env(var).is_some_and(|v| !v.is_empty()));
    from_env.then_some(None)
}

/// The running exporter; [`Traces::shutdown`] flushes what is pending.
pub struct Traces {
    provider: SdkTracerProvider,
}

/// The tracing layer: our crate's spans only (at info and above), whatever the log level.
pub type TraceLayer<S> = Filtered<
    tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::Tracer>,
    tracing_subscriber::filter::FilterFn,
    S,
>;

impl Traces {
    /// Builds the exporter for `endpoint` (`None`: from the environment).
    pub fn start<S>(endpoint: Option<String>) -> Result<(Traces, TraceLayer<S>), String>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        let mut builder = SpanExporter::builder().with_http();
        if let Some(endpoint) = endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        let exporter = builder
            .build()
            .map_err(|e| format!("setting up the OTLP exporter: {e}"))?;
        let service = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| SERVICE_NAME.into());
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().with_service_name(service).build())
            .build();
        let tracer = provider.tracer("image-reflector");
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(filter_fn(ours as fn(&tracing::Metadata<'_>) -> bool));
        Ok((Traces { provider }, layer))
    }

    /// Sends the spans still buffered; called once at exit.
    pub fn shutdown(self) {
        if let Err(err) = self.provider.shutdown() {
            eprintln!("flushing traces: {err}");
        }
    }
}

/// Spans of this crate at info and above.
fn ours(meta: &tracing::Metadata<'_>) -> bool {
    meta.target().starts_with(env!("CARGO_CRATE_NAME")) && *meta.level() <= tracing::Level::INFO
}

#[cfg(test)]
mod tests {
    use super::endpoint;

    #[test]
    fn the_flag_or_the_environment_turns_traces_on() {
        let none = |_: &str| None;
        assert_eq!(endpoint("", none), None);
        assert_eq!(
            endpoint("http://127.0.0.1:4318", none),
            Some(Some("http://127.0.0.1:4318/v1/traces".into()))
        );
        assert_eq!(
            endpoint("http://collector/custom/path", none),
            Some(Some("http://collector/custom/path".into()))
        );
        let env =
            |var: &str| (var == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://c:4318".into());
        assert_eq!(
            endpoint("", env),
            Some(None),
            "the exporter reads the variable itself"
        );
        let disabled = |var: &str| (var == "OTEL_SDK_DISABLED").then(|| "true".into());
        assert_eq!(endpoint("http://c:4318", disabled), None);
    }
}
