//! The door's keeper (docs/admission.md): each namespace's VerifiedDigests kept true to its
//! gated ImagePolicies, for the API server's admission to read. The digests are a pure function
//! of the namespace's policies ([`digests::verified`]); [`Door`] is told which namespaces'
//! policies changed (by the policy watch) and writes those, coalesced, when what they list
//! changed.

pub mod digests;
mod writer;

pub use writer::Door;
