//! Logs, metrics and traces of the running controller.

pub mod build;
pub mod collect;
pub mod exposition;
pub mod logging;
pub mod metrics;
pub mod objects;
pub mod process;
pub mod registry_requests;
pub mod traces;
