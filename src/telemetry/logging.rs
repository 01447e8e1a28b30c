//! `--log-level` and `--log-encoding` (Flux's flags). JSON lines are shaped as Flux's (zap's)
//! so log queries keep working: `level`, `ts` (ISO 8601), `msg`, then the fields of the
//! enclosing spans (`controller`, `controllerKind`, `namespace`, `name`, `reconcileID`) and the
//! event's own. Console text is for people. Traces go to [`super::traces`] when enabled.

use serde_json::{Map, Value};
use std::fmt;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{JsonFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormattedFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// `json` or `console`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogEncoding {
    Json,
    Console,
}

/// Flux's levels (`trace`, `debug`, `info`, `error`); `warn` is accepted too.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl LogLevel {
    fn directive(self) -> &'static str {
        match self {
            LogLevel::Trace => "trace",
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        }
    }
}

/// One JSON object per line, Flux's keys first.
pub struct FluxJson;

impl<S, N> FormatEvent<S, N> for FluxJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'w> tracing_subscriber::fmt::FormatFields<'w> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = event.metadata().level().as_str().to_ascii_lowercase();
        let ts = k8s_openapi::jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string();
        let mut fields = EventFields::default();
        event.record(&mut fields);
        let mut rest = Map::new();
        // Outermost span first, so an inner span's field wins.
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                let extensions = span.extensions();
                let Some(formatted) = extensions.get::<FormattedFields<N>>() else {
                    continue;
                };
                if let Ok(Value::Object(span_fields)) = serde_json::from_str(formatted.as_str()) {
                    rest.extend(span_fields);
                }
            }
        }
        rest.extend(fields.others);
        let target = event.metadata().target();
        if !target.starts_with(env!("CARGO_CRATE_NAME")) {
            rest.entry("logger")
                .or_insert_with(|| Value::String(target.to_string()));
        }
        // level, ts and msg first, as zap writes them; then the rest in name order.
        let head = |v: &str| serde_json::to_string(v).map_err(|_| fmt::Error);
        let mut text = format!(
            "{{\"level\":{},\"ts\":{},\"msg\":{}",
            head(&level)?,
            head(&ts)?,
            head(&fields.message.unwrap_or_default())?
        );
        for (key, value) in rest {
            text.push(',');
            text.push_str(&serde_json::to_string(&key).map_err(|_| fmt::Error)?);
            text.push(':');
            text.push_str(&serde_json::to_string(&value).map_err(|_| fmt::Error)?);
        }
        text.push('}');
        writeln!(writer, "{text}")
    }
}

#[derive(Default)]
struct EventFields {
    message: Option<String>,
    others: Map<String, Value>,
}

impl Visit for EventFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::String(value.to_string()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::from(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, Value::String(format!("{value:?}")));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, Value::String(value.to_string()));
    }
}

impl EventFields {
    fn put(&mut self, field: &Field, value: Value) {
        if field.name() == "message" {
            self.message = Some(match value {
                Value::String(s) => s,
                other => other.to_string(),
            });
        } else {
            self.others.insert(field.name().to_string(), value);
        }
    }
}

/// The log filter: our crate at `level`, dependencies at warn, unless `RUST_LOG` says otherwise.
/// kube's client is held at error whatever was asked: its warn, debug and trace lines carry
/// whole response bodies (a list of Secrets, with their data), so they never reach the log.
fn filter(level: LogLevel) -> EnvFilter {
    filter_with(std::env::var(EnvFilter::DEFAULT_ENV).ok(), level)
}

fn filter_with(rust_log: Option<String>, level: LogLevel) -> EnvFilter {
    let filter = rust_log
        .and_then(|directives| EnvFilter::try_new(directives).ok())
        .unwrap_or_else(|| {
            EnvFilter::new(format!(
                "warn,image_reflector={0},kube_runtime=warn",
                level.directive()
            ))
        });
    filter.add_directive(
        "kube_client=error"
            .parse()
            .expect("a constant directive parses"),
    )
}

/// Installs the global subscriber: logs to stderr, plus `traces` (an OpenTelemetry layer with
/// its own filter) when given.
pub fn init<T>(level: LogLevel, encoding: LogEncoding, traces: Option<T>)
where
    T: Layer<tracing_subscriber::Registry> + Send + Sync + 'static,
{
    let logs = match encoding {
        LogEncoding::Json => tracing_subscriber::fmt::layer()
            .fmt_fields(JsonFields::new())
            .event_format(FluxJson)
            .with_writer(std::io::stderr)
            .with_filter(filter(level))
            .boxed(),
        LogEncoding::Console => tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(std::io::stderr)
            .with_filter(filter(level))
            .boxed(),
    };
    let _ = tracing_subscriber::registry()
        .with(traces)
        .with(logs)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::{filter_with, LogLevel};
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::Layer;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What kube's client logs of a response body (a Secret list, for a crafted name) never
    /// reaches the log, at any level we or RUST_LOG ask for; its errors do.
    #[test]
    fn kube_clients_body_lines_are_never_logged() {
        for rust_log in [
            None,
            Some("trace".to_string()),
            Some("kube_client=trace,image_reflector=info".into()),
        ] {
            for level in [LogLevel::Trace, LogLevel::Info] {
                let out = Captured::default();
                let writer = out.clone();
                let layer = tracing_subscriber::fmt::layer()
                    .with_writer(move || writer.clone())
                    .with_filter(filter_with(rust_log.clone(), level));
                let subscriber = tracing_subscriber::registry().with(layer);
                tracing::subscriber::with_default(subscriber, || {
                    tracing::warn!(target: "kube_client::client", "{{\"kind\":\"SecretList\",\"data\":\"cGFzc3dvcmQ=\"}}");
                    tracing::debug!(target: "kube_client::client", "Unsuccessful data error parse: cGFzc3dvcmQ=");
                    tracing::trace!(target: "kube_client::client", "Status from cGFzc3dvcmQ=");
                    tracing::error!(target: "kube_client::client", "an error line");
                    tracing::warn!(target: "image_reflector::controller", "ours");
                });
                let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
                assert!(
                    !text.contains("cGFzc3dvcmQ="),
                    "{rust_log:?} {level:?}: {text}"
                );
                assert!(
                    text.contains("an error line") && text.contains("ours"),
                    "{rust_log:?} {level:?}: {text}"
                );
            }
        }
    }
}
