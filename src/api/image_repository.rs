//! `ImageRepository`: which registry repository to scan, how often, and how to reach it.

use super::{Condition, LocalObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The exclusion list used when `spec.exclusionList` is absent or empty (Flux §1.6).
pub const DEFAULT_EXCLUSION_LIST: &[&str] = &["^.*\\.sig$"];

/// Beyond Flux, applied with its default list (absent, empty, or exactly Flux's, which the
/// API server writes as the default): the tags cosign and the OCI referrers fallback keep
/// signatures, attestations and SBOMs under (`sha256-<digest hex>`, with or without a
/// `.att`-like suffix), which no policy should elect (an `alphabetical` one would).
pub const REFERRERS_TAG_EXCLUSION: &str = "^sha256-[0-9a-f]{64}(\\.[a-z]+)?$";

/// Scans an image repository's tags on an interval and stores them for ImagePolicies.
// kube's `printcolumn(...)` arguments repeat `type_ = ...`, which clippy mistakes for
// duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "image.toolkit.fluxcd.io",
    version = "v1",
    kind = "ImageRepository",
    plural = "imagerepositories",
    singular = "imagerepository",
    namespaced,
    status = "ImageRepositoryStatus",
    shortname = "imgrepo",
    shortname = "imagerepo",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-images",
    doc = "ImageRepository scans an image repository's tags on an interval.",
    printcolumn(name = "Image", type_ = "string", json_path = ".spec.image"),
    printcolumn(
        name = "Tags",
        type_ = "string",
        json_path = ".status.lastScanResult.tagCount"
    ),
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
        name = "Last scan",
        type_ = "string",
        json_path = ".status.lastScanResult.scanTime",
        priority = 1
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ImageRepositorySpec {
    /// The image repository to scan, without scheme or tag, e.g. `ghcr.io/org/app`.
    pub image: String,

    /// How often to scan the repository, as a Go duration (`5m`, `1h30m`).
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"))]
    pub interval: String,

    /// Deadline for one scan; defaults to the interval. No `h` unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(ms|s|m))+$"))]
    pub timeout: Option<String>,

    /// A Secret of type `kubernetes.io/dockerconfigjson` or `kubernetes.io/dockercfg`
    /// with registry credentials, in the same namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,

    /// A Secret with the keys `address` and optionally `username` / `password` of an
    /// HTTP(S) or SOCKS5 proxy to reach the registry through.
    // Boxed, like `certSecretRef` and `accessFrom`: inline these took 72 of a decoded
    // repository's 776 bytes (each watch event, each repository staged for a reconcile), most
    // often for nothing (docs/benchmarks-history.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_secret_ref: Option<Box<LocalObjectReference>>,

    /// A ServiceAccount whose `imagePullSecrets` supply credentials (generic provider), or
    /// whose identity is used for cloud providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub service_account_name: Option<String>,

    /// A Secret with `ca.crt` and/or `tls.crt` + `tls.key` for registry TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_secret_ref: Option<Box<LocalObjectReference>>,

    /// Stops scanning while true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,

    /// Which other namespaces' ImagePolicies may use this repository's tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_from: Option<Box<AccessFrom>>,

    /// Regular expressions (RE2) of tags to leave out; an empty list means the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 25), extend("default" = ["^.*\\.sig$"]))]
    pub exclusion_list: Option<Vec<String>>,

    /// Where credentials come from: `generic` (Secrets) or a cloud provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "generic"))]
    pub provider: Option<Provider>,

    /// Talk plain HTTP to the registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
}

/// The source of registry credentials.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    #[default]
    Generic,
    Aws,
    Azure,
    Gcp,
}

/// Cross-namespace access control list.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessFrom {
    /// Namespaces whose labels match any of these selectors are granted access.
    pub namespace_selectors: Vec<NamespaceSelector>,
}

/// Selects namespaces by label; no labels selects every namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceSelector {
    /// Labels a namespace must carry, all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
}

/// What the controller last observed of an ImageRepository.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageRepositoryStatus {
    /// The generation last reconciled to Ready or Stalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// Ready, Reconciling and Stalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,

    /// The repository's canonical name, e.g. `index.docker.io/library/alpine`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical_image_name: Option<String>,

    /// The result of the last successful scan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scan_result: Option<ScanResult>,

    /// The exclusion list in force at the last successful scan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_exclusion_list: Option<Vec<String>>,

    /// The last `reconcile.fluxcd.io/requestedAt` annotation value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
}

/// The outcome of one scan.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScanResult {
    /// `sha256:<hex>` of the stored tag list; changes exactly when the tags change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,

    /// Number of tags kept after exclusion.
    #[schemars(transform = integer_without_format)]
    pub tag_count: i64,

    /// When the scan finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan_time: Option<Time>,

    /// The first ten tags in descending byte order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_tags: Option<Vec<String>>,
}

/// Go's `int` has no OpenAPI format; Flux's schema says plain `integer`.
fn integer_without_format(schema: &mut schemars::Schema) {
    schema.remove("format");
    schema.remove("minimum");
}
