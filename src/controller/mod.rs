//! The reconcilers. Each kind has its room, `image_repository/` and `image_policy/` (its watch,
//! what the kind adds to a reconcile, and its decision as a pure function of the object, the
//! cluster's objects, the registry's answers, the stored tags and the clock); what both use is
//! in rooms named for their jobs, each pointing only at those before it:
//! - `object/`: how an object is named to the process (keys, labels), its intervals, and what
//!   the caches keep of it;
//! - `outcome/`: what a reconcile comes to: conditions, Flux's summary, the status writer,
//!   errors and what they mean, when next;
//! - `events/`: which Event a transition makes, the recorder and its limits, Flux's
//!   notifications;
//! - `access/`: the objects a reconcile reads by name: Secrets, ServiceAccounts and their
//!   tokens, as registry credentials;
//! - `feed/`: the one ImageRepository watch and the start-up scan order;
//! - `schema/`: the schema the API server serves for our kinds, followed; a policy's gated
//!   generation, and the guards of its writes;
//! - `frame/`: the reconcile of either kind (frame, body, hand-off, panics), the shared
//!   context and the work queue.
//!
//! The kinds' rooms use these, never each other. Uses `api`, `policy`, `registry`, `store`,
//! `verify`, `telemetry` and `runtime`; nothing there uses this module. docs/development.md
//! walks one reconcile through these files.

pub mod door;
pub mod events;
pub mod feed;
pub mod frame;
pub mod image_policy;
pub mod image_repository;
pub mod lookup;
pub mod object;
pub mod outcome;
pub mod schema;

pub use frame::context::{Context, Settings};
pub use object::keys::{FIELD_MANAGER, FINALIZER, REQUESTED_AT_ANNOTATION};
pub use outcome::error::Error;
