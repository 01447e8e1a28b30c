//! The Flux-compatible API: `ImageRepository` and `ImagePolicy` in `image.toolkit.fluxcd.io`;
//! and the admission's `VerifiedDigests`, in a group of ours.
//!
//! Owns the CRD types (one file per kind), the shared reference and condition types, and the
//! generation of the CustomResourceDefinitions. Nothing here talks to a cluster or a registry.

mod attestations;
mod beyond_flux;
mod conditions;
mod crd;
mod duration;
mod gate_fields;
mod gate_paths;
mod gates;
mod image_policy;
mod image_repository;
mod names;
mod refs;
mod verified_digests;

pub use attestations::{MAX_ATTESTATIONS, MAX_CONDITIONS};
pub use beyond_flux::{
    beyond_flux_paths, set_beyond_flux, spec_pointer, BEYOND_FLUX, BEYOND_FLUX_STATUS,
    FLUX_SPEC_FIELDS,
};
pub use conditions::{Condition, ConditionStatus};
pub use crd::{crds, crds_yaml, API_GROUP, DEPRECATED_VERSION, STORAGE_VERSION};
pub use duration::{format_go_duration, parse_go_duration};
pub use gate_fields::{
    AttestationCondition, AttestationRequirement, HeldBackTag, HeldBy, ImageSignature,
    ImageVerification, MinAgeByBump, OidcIdentityMatch, TransparencyLog, VerificationProvider,
    MAX_HELD_BACK,
};
pub use gate_paths::{gate_path, gate_paths, pointer as gate_pointer, present, set_gate_fields};
pub use image_policy::{
    AlphabeticalPolicy, DowngradePolicy, ImagePolicy, ImagePolicyChoice, ImagePolicySpec,
    ImagePolicyStatus, ImageRef, NumericalPolicy, ReflectionPolicy, SemVerPolicy, SortOrder,
    TagFilter,
};
pub use image_repository::{
    AccessFrom, ImageRepository, ImageRepositorySpec, ImageRepositoryStatus, NamespaceSelector,
    Provider, ScanResult, DEFAULT_EXCLUSION_LIST, REFERRERS_TAG_EXCLUSION,
};
pub use names::{check_namespace_name, check_object_name};
pub use refs::{LocalObjectReference, NamespacedObjectReference};
pub use verified_digests::{
    verified_digests_crd, verified_digests_yaml, VerifiedDigests, VerifiedDigestsSpec,
    MAX_VERIFIED, VERIFIED_NAME,
};

#[cfg(test)]
mod tests {
    /// A decoded object (each watch event, each one staged for a reconcile) is this size
    /// inline, the parts most objects leave out boxed (912 and 776 bytes before;
    /// docs/benchmarks-history.md).
    #[test]
    fn cached_objects_stay_small() {
        assert!(std::mem::size_of::<super::ImagePolicy>() <= 728);
        assert!(std::mem::size_of::<super::ImageRepository>() <= 728);
    }
}
