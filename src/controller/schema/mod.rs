//! The schema the API server serves for our kinds, and what the controller does so that no
//! schema (Flux's CRDs put back by kustomize-controller, ours applied over them) makes it
//! elect past a gate or write a policy pruned (docs/install.md, "While Flux's CRDs are served"):
//! - `served.rs`: what the OpenAPI v3 document says of our kinds (pure);
//! - `monitor.rs`: that document followed, the watches restarted when it changes, and said in
//!   the log, a metric and `/readyz`;
//! - `restart.rs`: a watch that lists again on such a change;
//! - `marker.rs`: a policy's gated generation, kept in an annotation no schema prunes, and the
//!   guards every write of a policy carries.

pub mod marker;
pub mod monitor;
pub mod restart;
pub mod served;

pub use monitor::ServedSchema;
