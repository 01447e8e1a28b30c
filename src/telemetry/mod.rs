//! Logs and metrics of the running controller.

pub mod logging;
pub mod metrics;
