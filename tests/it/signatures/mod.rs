//! Signatures made by the real tools (`make e2e-signatures`): the cosign CLI v3 and v2 and the
//! notation CLI, built from their Go modules by `make sigtools`, sign images in a registry that
//! serves the OCI referrers API and in Debian's Distribution (which has none); `scan` and the
//! controller on a real API server must elect what they signed and hold back the rest with a
//! reason that names what failed. Ignored by default; their names hold no `e2e`, so `make e2e`
//! does not run them.

mod cosign;
mod keyless;
mod notation;
