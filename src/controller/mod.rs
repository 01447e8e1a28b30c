//! The reconcilers, in three rooms: `image_repository/` and `image_policy/` (each: its watch,
//! what the kind adds to a reconcile, and its decision as a pure function of the object, the
//! cluster's objects, the registry's answers, the stored tags and the clock), and `shared/`
//! (what both use: the reconcile's frame and body, the status writer, conditions, events,
//! errors and when next). The kinds' rooms use `shared/`, never each other. Uses `api`,
//! `policy`, `registry`, `store`, `telemetry` and `runtime`; nothing there uses this module.
//! docs/development.md walks one reconcile through these files.

pub mod image_policy;
pub mod image_repository;
pub mod shared;

pub use shared::context::{Context, Settings};
pub use shared::error::Error;
pub use shared::keys::{FIELD_MANAGER, FINALIZER, REQUESTED_AT_ANNOTATION};
