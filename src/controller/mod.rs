//! The reconcilers. What they decide comes from pure functions of (object, cluster objects,
//! registry answers, stored tags, clock): `conditions`, `finalize`, `should_scan`,
//! `repository`, `events`; the kube plumbing (`image_repository`, `status`, `context`) only
//! feeds them and writes the result. Uses `api`, `policy`, `registry` and `store`; nothing
//! there uses this module.

pub mod image_policy;
pub mod image_repository;
pub mod shared;

pub use shared::context::{Context, Settings};
pub use shared::error::Error;
pub use shared::keys::{FIELD_MANAGER, FINALIZER, REQUESTED_AT_ANNOTATION};
