//! The door's keeper (docs/admission.md): each namespace's VerifiedDigests kept true to its
//! gated ImagePolicies, for the API server's admission to read. The digests are a pure function
//! of the namespace's policies ([`digests::verified`]); [`Door`] is told which namespaces'
//! policies changed (by the policy watch) and writes those, coalesced, when what they list
//! changed. A sharded controller's door watches every policy of its scope ([`sharded_door`]).

pub mod digests;
mod found;
mod view;
mod writer;

pub use view::{sharded_door, told};
pub use writer::{Door, RESYNC};
