//! image-reflector: a drop-in replacement for Flux's image-reflector-controller.
//!
//! `api` holds the CRD types; `policy` (tag selection), `store` (the tag store), `reference`
//! (image names) and `verify` (signature verification) are pure and know nothing of Kubernetes
//! or HTTP; `registry` talks to OCI registries; `cli` holds
//! the binary's subcommands; `controller` holds the reconcilers, `runtime` the process around them (leader election,
//! API throttle, storage GC, HTTP endpoints), `telemetry` logs and metrics; `fair` shares
//! slots by tenant.

pub mod api;
pub mod cli;
pub mod controller;
pub mod fair;
#[doc(hidden)]
pub mod fuzzing;
pub mod policy;
pub mod reference;
pub mod registry;
pub mod runtime;
pub mod store;
pub mod telemetry;
pub mod verify;
