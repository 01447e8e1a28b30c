//! The reconcilers. What they decide comes from pure functions of (object, cluster objects,
//! registry answers, stored tags, clock): `conditions`, `finalize`, `should_scan`,
//! `repository`, `events`; the kube plumbing (`image_repository`, `status`, `context`) only
//! feeds them and writes the result. Uses `api`, `policy`, `registry` and `store`; nothing
//! there uses this module.

pub mod access;
pub mod backoff;
pub mod conditions;
pub mod context;
pub mod credentials;
pub mod error;
pub mod events;
pub mod finalize;
pub mod frame;
pub mod image_policy;
pub mod image_repository;
pub mod migrate;
pub mod notify;
pub mod policy;
pub mod queue;
pub mod repository;
pub mod repository_feed;
pub mod running_scans;
pub mod scan_order;
pub mod should_scan;
pub mod slim;
pub mod status;
pub mod token_request;

pub use context::{Context, Settings};
pub use error::Error;
pub use status::{FIELD_MANAGER, FINALIZER, REQUESTED_AT_ANNOTATION};
