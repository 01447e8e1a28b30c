//! Talking to OCI registries. No Kubernetes types in the public API: credentials and TLS material
//! come in as plain data, so the reconcilers and the offline commands share this code.
//!
//! So far: image references (`reference`). Tag listing, digests, auth, TLS, proxy and request
//! scheduling follow (issue 4).

mod reference;

pub use reference::{ImageReference, ReferenceError, Scheme, DEFAULT_REGISTRY};
