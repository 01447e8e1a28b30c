//! `ImagePolicy`: which tag of an ImageRepository is the latest, and its digest.

use super::{Condition, MinAgeByBump, NamespacedObjectReference};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Elects the latest tag of an ImageRepository by a policy, optionally with its digest.
// kube's `printcolumn(...)` arguments repeat `type_ = ...`, which clippy mistakes for
// duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "image.toolkit.fluxcd.io",
    version = "v1",
    kind = "ImagePolicy",
    plural = "imagepolicies",
    singular = "imagepolicy",
    namespaced,
    status = "ImagePolicyStatus",
    shortname = "imgpol",
    shortname = "imagepol",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-images",
    doc = "ImagePolicy elects the latest tag of an ImageRepository.",
    printcolumn(name = "Image", type_ = "string", json_path = ".status.latestRef.name"),
    printcolumn(name = "Tag", type_ = "string", json_path = ".status.latestRef.tag"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].message"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "message": "spec.interval is only accepted when spec.digestReflectionPolicy is set to 'Always'",
        "rule": "!has(self.interval) || (has(self.digestReflectionPolicy) && self.digestReflectionPolicy == 'Always')"
    },
    {
        "message": "spec.interval must be set when spec.digestReflectionPolicy is set to 'Always'",
        "rule": "has(self.interval) || !has(self.digestReflectionPolicy) || self.digestReflectionPolicy != 'Always'"
    }
]))]
pub struct ImagePolicySpec {
    /// The ImageRepository whose tags are considered.
    pub image_repository_ref: NamespacedObjectReference,

    /// How to order tags: exactly one of `semver`, `alphabetical`, `numerical`.
    pub policy: ImagePolicyChoice,

    /// Keep only tags matching `pattern`, and compare the `extract` template's expansion.
    // Boxed, like `verify` and `observedPreviousRef`: inline these took 180 of a decoded
    // policy's 912 bytes (each watch event, each policy staged for a reconcile), most often
    // for nothing (docs/benchmarks-history.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_tags: Option<Box<TagFilter>>,

    /// Whether and when `status.latestRef.digest` is resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Never"))]
    pub digest_reflection_policy: Option<ReflectionPolicy>,

    /// How often to re-resolve the digest with `Always` (default 10m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"))]
    pub interval: Option<String>,

    /// Stops reconciling while true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,

    /// Beyond Flux: elect only a tag whose image provides every one of these platforms
    /// (`os/architecture[/variant]`, e.g. `linux/arm64`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16))]
    pub platforms: Option<Vec<String>>,

    /// Beyond Flux: elect only a tag whose digest has a valid cosign signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Box<super::ImageVerification>>,

    /// Beyond Flux: `Refuse` never elects a tag the policy's ordering ranks below the elected
    /// one, even when the higher tags vanish from a scan or a gate is turned on; only a spec
    /// that excludes the elected tag replaces it. `Allow` (the default) is Flux's behaviour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Allow"))]
    pub downgrade: Option<DowngradePolicy>,
}

/// Whether a policy may elect a tag ranked below the one it elected (`spec.downgrade`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum DowngradePolicy {
    /// Flux's behaviour: the best tag listed now is elected, whatever was elected before.
    #[default]
    Allow,
    /// Keep the elected tag while no tag ranks at least as high.
    Refuse,
}

/// The ordering policy; when several are set, semver wins, then alphabetical, then numerical.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImagePolicyChoice {
    /// Elect the highest version within a semver range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver: Option<SemVerPolicy>,
    /// Elect by byte-wise string order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alphabetical: Option<AlphabeticalPolicy>,
    /// Elect by numeric value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numerical: Option<NumericalPolicy>,
    /// Beyond Flux: elect the tag the controller first saw most recently (tags first listed
    /// at the same scan by their image's creation time, then by name); `newest: {}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest: Option<NewestPolicy>,
}

/// Newest-pushed policy settings: none yet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct NewestPolicy {}

/// Semver policy settings.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct SemVerPolicy {
    /// A Masterminds semver constraint, e.g. `>=1.0.0 <2.0.0` or `^1.x || ~2.1`.
    pub range: String,
}

/// Alphabetical policy settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AlphabeticalPolicy {
    /// `asc` elects the greatest string, `desc` the smallest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "asc"))]
    pub order: Option<SortOrder>,
}

/// Numerical policy settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct NumericalPolicy {
    /// `asc` elects the greatest number, `desc` the smallest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "asc"))]
    pub order: Option<SortOrder>,
}

/// Sort order of the alphabetical and numerical policies.
#[derive(Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    #[default]
    Asc,
    Desc,
}

/// Reads the order as Flux does: upper-cased, with the empty string meaning `asc` (the CRD
/// enum still admits only `asc`/`desc` on the API server).
impl<'de> Deserialize<'de> for SortOrder {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match text.to_ascii_uppercase().as_str() {
            "" | "ASC" => Ok(SortOrder::Asc),
            "DESC" => Ok(SortOrder::Desc),
            other => Err(serde::de::Error::custom(format!(
                "invalid order argument provided: '{other}', must be one of: ASC, DESC"
            ))),
        }
    }
}

/// A tag filter with an optional extraction template.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct TagFilter {
    /// An RE2 regular expression searched for anywhere in the tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// A template such as `$1` or `${ts}` whose expansion is compared instead of the tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract: Option<String>,
    /// Beyond Flux: a tag is eligible once its image is at least this old (a Go duration,
    /// e.g. `168h`), both by the image config's `created` (or the
    /// `org.opencontainers.image.created` annotation) and by when the controller first saw the
    /// tag at this digest; an image with no creation time is not eligible (see
    /// `minAgeUndated`).
    #[serde(default, rename = "minAge", skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"))]
    pub min_age: Option<String>,
    /// Beyond Flux: what `minAge` does with an image that has no creation time: `Hold` (the
    /// default) or `FirstSeen`, judge it by when it was first seen alone.
    #[serde(
        default,
        rename = "minAgeUndated",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("default" = "Hold"))]
    pub min_age_undated: Option<UndatedPolicy>,
    /// Beyond Flux: with `spec.verify`, `minAge` also holds until the valid signature's time,
    /// as its transparency log or timestamp authority vouches, is old enough (a time a lost
    /// store does not forget and no publisher can set): `IfPresent` (the default) reads it when
    /// the signature carries one; `Required` also holds a signature that carries none.
    #[serde(
        default,
        rename = "minAgeSignedTime",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("default" = "IfPresent"))]
    pub min_age_signed_time: Option<SignedTimePolicy>,
    /// Beyond Flux, for `semver` policies: the age a candidate must reach by how its version
    /// rises from the tag elected now (`major`, `minor`, `patch`; Go durations), on the same
    /// clocks as `minAge`, as Dependabot's cooldown takes them. A kind not set, a first
    /// election and a candidate that is no rise ask for `minAge`.
    #[serde(
        default,
        rename = "minAgeByBump",
        skip_serializing_if = "Option::is_none"
    )]
    pub min_age_by_bump: Option<MinAgeByBump>,
}

/// `spec.filterTags.minAgeSignedTime`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum SignedTimePolicy {
    /// The signing time counts when the signature carries one.
    #[default]
    IfPresent,
    /// A signature without one is held back too.
    Required,
}

/// `spec.filterTags.minAgeUndated`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum UndatedPolicy {
    /// No creation time, no age: held back.
    #[default]
    Hold,
    /// Judged by when the controller first saw the tag at its digest.
    FirstSeen,
}

/// When to resolve the elected tag's digest.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ReflectionPolicy {
    /// Resolve on every reconcile (polls the registry every `spec.interval`).
    Always,
    /// Resolve when the elected tag changes or no digest is recorded yet.
    IfNotPresent,
    /// Never resolve; the digest stays empty.
    #[default]
    Never,
}

/// An image reference as reported in status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ImageRef {
    /// The image name, as written in the ImageRepository's `spec.image`.
    pub name: String,
    /// The elected tag, as stored (before any extraction).
    pub tag: String,
    /// The manifest digest, when reflected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// What the controller last observed of an ImagePolicy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImagePolicyStatus {
    /// The elected image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_ref: Option<ImageRef>,

    /// The image elected before the latest change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_previous_ref: Option<Box<ImageRef>>,

    /// The generation last reconciled to Ready or Stalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// Ready, Reconciling and Stalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,

    /// Beyond Flux: the better-ranked candidates a gate held back (at most 10), best first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 10))]
    pub held_back: Option<Vec<super::HeldBackTag>>,

    /// The last `reconcile.fluxcd.io/requestedAt` annotation value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,

    /// Deprecated (Flux v0.x): `name:tag` of the elected image; migrated to `latestRef`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_image: Option<String>,

    /// Deprecated (Flux v0.x): `name:tag` of the previous image; migrated to
    /// `observedPreviousRef`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_previous_image: Option<String>,
}

impl ImagePolicy {
    /// The namespace of the ImageRepository it refers to: `imageRepositoryRef.namespace`, or
    /// the policy's own when that is absent or empty.
    pub fn repository_namespace(&self) -> String {
        self.spec
            .image_repository_ref
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .or_else(|| self.metadata.namespace.clone())
            .unwrap_or_default()
    }
}

impl ImagePolicySpec {
    /// Builds the tag-selection policy this spec describes; errors mean the object is Stalled
    /// (`InvalidPolicy`).
    pub fn selection_policy(&self) -> Result<crate::policy::Policy, crate::policy::InvalidPolicy> {
        use crate::policy::{FilterSpec, Order, Policy, PolicyChoice};
        let order = |o: Option<SortOrder>| match o.unwrap_or_default() {
            SortOrder::Asc => Order::Asc,
            SortOrder::Desc => Order::Desc,
        };
        let choice = PolicyChoice {
            semver: self.policy.semver.as_ref().map(|s| s.range.clone()),
            alphabetical: self.policy.alphabetical.as_ref().map(|a| order(a.order)),
            numerical: self.policy.numerical.as_ref().map(|n| order(n.order)),
            newest: self.policy.newest.is_some(),
        };
        let filter = self.filter_tags.as_ref().map(|f| FilterSpec {
            pattern: f.pattern.clone().unwrap_or_default(),
            extract: f.extract.clone().unwrap_or_default(),
        });
        Policy::new(&choice, filter.as_ref())
    }
}
