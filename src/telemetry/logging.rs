//! `--log-level` and `--log-encoding` (Flux's flags): JSON lines by default, or console text.

use tracing_subscriber::EnvFilter;

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

/// Installs the global subscriber. Our own crate logs at `level`; dependencies at warn unless
/// `RUST_LOG` says otherwise.
pub fn init(level: LogLevel, encoding: LogEncoding) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new(format!(
            "warn,image_reflector={0},kube_runtime=warn",
            level.directive()
        ))
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match encoding {
        LogEncoding::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
        LogEncoding::Console => builder.with_ansi(false).try_init(),
    };
}
