//! The types of the ImagePolicy's gate fields, beyond Flux (docs/imagepolicy.md, "Gated
//! election"; docs/compatibility.md lists them as extensions): `spec.verify`, and
//! `status.heldBack`, which says why a better-ranked tag was not elected. The gate list each
//! spec builds from them is `gates.rs`.

use super::LocalObjectReference;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `spec.filterTags.minAgeByBump`: the minimum age per kind of bump from the tag elected now.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct MinAgeByBump {
    /// A new major version (`1.4.2` to `2.0.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"))]
    pub major: Option<String>,
    /// A new minor version of the same major (`1.4.2` to `1.5.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"))]
    pub minor: Option<String>,
    /// A new patch, or prerelease, of the same minor (`1.4.2` to `1.4.3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"))]
    pub patch: Option<String>,
}

/// The most candidates `status.heldBack` lists.
pub const MAX_HELD_BACK: usize = 10;

/// Verify each candidate's signature before electing it (the shape of Flux's
/// OCIRepository `spec.verify`).
///
/// Its required fields, and those of the types under it, are read as empty when absent (the
/// schema still requires them): a served schema that lacks one must not make the object
/// undecodable, which fails every object of the watch's list; the policy is then held naming
/// the field (`flux::crd_partial`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("required" = ["provider"]))]
pub struct ImageVerification {
    /// The signature format: `cosign`.
    #[serde(default)]
    pub provider: VerificationProvider,
    /// A Secret in the policy's namespace whose `*.pub` entries are the trusted cosign public
    /// keys (PEM, ECDSA P-256) and, for keyless signatures, whose `trusted_root.json` is the
    /// Sigstore trusted root their certificates must chain to. Required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Source-controller's field (v1.9): a Secret in the policy's namespace whose
    /// `trusted_root.json` is the Sigstore trusted root keyless signatures are checked with,
    /// instead of `secretRef`'s or Sigstore's public-good one.
    #[serde(
        default,
        rename = "trustedRootSecretRef",
        skip_serializing_if = "Option::is_none"
    )]
    pub trusted_root_secret_ref: Option<LocalObjectReference>,
    /// Keyless identities: a keyless signature counts when its certificate's OIDC issuer and
    /// one of its subject alternative names match one entry's regular expressions.
    #[serde(
        default,
        rename = "matchOIDCIdentity",
        skip_serializing_if = "Option::is_none"
    )]
    pub match_oidc_identity: Option<Vec<OidcIdentityMatch>>,
    /// Whether a keyless signature must carry a transparency-log entry: `Required` (the
    /// default) or `Optional` (signed offline, or by a private instance without a log). An
    /// entry a signature carries is always checked.
    #[serde(
        default,
        rename = "transparencyLog",
        skip_serializing_if = "Option::is_none"
    )]
    pub transparency_log: Option<TransparencyLog>,
    /// Attestations a tag must also carry, each of an in-toto predicate type, signed by what
    /// the policy trusts (or the entry's own identities), with CEL conditions on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attestations: Option<Vec<AttestationRequirement>>,
    /// Whether a tag needs an image signature (`Required`, the default) or passes on its
    /// `attestations` alone (`NotRequired`, which needs at least one entry): GitHub's artifact
    /// attestations come with no image signature beside them.
    #[serde(
        default,
        rename = "imageSignature",
        skip_serializing_if = "Option::is_none"
    )]
    pub image_signature: Option<ImageSignature>,
}

impl ImageVerification {
    /// Whether it checks cosign's keyless signatures (certificates against a trusted root,
    /// with `matchOIDCIdentity`) rather than keys or notation's trust policy.
    pub fn keyless(&self) -> bool {
        let identities = self.match_oidc_identity.as_deref().unwrap_or_default();
        self.provider == VerificationProvider::Cosign && !identities.is_empty()
    }

    /// Whether a tag needs an image signature besides its attestations (`Required`, the
    /// default).
    pub fn requires_signature(&self) -> bool {
        self.image_signature.unwrap_or_default() == ImageSignature::Required
    }

    /// Whether a keyless signature must carry a transparency-log entry (`Required`, the
    /// default).
    pub fn requires_tlog(&self) -> bool {
        self.transparency_log.unwrap_or_default() == TransparencyLog::Required
    }
}

/// `spec.verify.imageSignature`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ImageSignature {
    #[default]
    Required,
    NotRequired,
}

/// `spec.verify.transparencyLog`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum TransparencyLog {
    #[default]
    Required,
    Optional,
}

/// The signature formats `spec.verify.provider` accepts.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VerificationProvider {
    #[default]
    Cosign,
    /// Notary Project signatures: the Secret holds `trustpolicy.json` and CA certificates.
    Notation,
}

/// A keyless signer's identity: regular expressions for the OIDC issuer and subject.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[schemars(extend("required" = ["issuer", "subject"]))]
pub struct OidcIdentityMatch {
    #[serde(default)]
    pub issuer: String,
    #[serde(default)]
    pub subject: String,
}

/// An attestation a tag must carry.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("required" = ["name", "predicateType"]))]
pub struct AttestationRequirement {
    /// What the entry is called in reasons (`provenance`, `scan`): a DNS label, unique.
    #[serde(default)]
    pub name: String,
    /// The in-toto predicate type the attestation's statement must have, e.g.
    /// `https://slsa.dev/provenance/v1` (cosign attest `--type slsaprovenance1`).
    #[serde(default)]
    pub predicate_type: String,
    /// CEL expressions over `statement`, `predicate`, `digest` and `now`, evaluated as cel-go
    /// evaluates them, all true for every attestation of this type that verifies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<AttestationCondition>,
    /// Who must have signed it, when not the policy's keys or `matchOIDCIdentity` (provenance
    /// is often signed by a builder's identity, not the release workflow's).
    #[serde(
        default,
        rename = "matchOIDCIdentity",
        skip_serializing_if = "Option::is_none"
    )]
    pub match_oidc_identity: Option<Vec<OidcIdentityMatch>>,
}

/// One condition and the message a false one is reported with.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[schemars(extend("required" = ["expression"]))]
pub struct AttestationCondition {
    #[serde(default)]
    pub expression: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A candidate ranked above the elected tag that a gate held back.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeldBackTag {
    pub tag: String,
    /// The digest the gate looked at, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The gate that holds it longest: `minAge`, `platforms` or `verify`.
    pub gate: String,
    /// Why, e.g. `until 2026-12-14T10:00:00Z: minAge 168h after its creation (...)`.
    pub reason: String,
    /// The other gates that hold it, longest first; absent when one gate does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub also_held_by: Option<Vec<HeldBy>>,
}

/// One more gate that holds a candidate back, and why.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct HeldBy {
    pub gate: String,
    pub reason: String,
}

impl HeldBackTag {
    /// Every gate that holds it and why, longest first.
    pub fn holds(&self) -> impl Iterator<Item = (&str, &str)> {
        let first = std::iter::once((self.gate.as_str(), self.reason.as_str()));
        let also = self.also_held_by.iter().flatten();
        first.chain(also.map(|h| (h.gate.as_str(), h.reason.as_str())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keyless is cosign with identities; keys, or notation, are not, whatever else is set.
    #[test]
    fn keyless_is_cosign_with_identities() {
        let verify = |provider, identities: usize| ImageVerification {
            provider,
            secret_ref: None,
            trusted_root_secret_ref: None,
            match_oidc_identity: (identities > 0).then(|| {
                let id = OidcIdentityMatch {
                    issuer: "^https://issuer$".into(),
                    subject: "^me$".into(),
                };
                vec![id; identities]
            }),
            transparency_log: None,
            attestations: None,
            image_signature: None,
        };
        assert!(verify(VerificationProvider::Cosign, 1).keyless());
        assert!(!verify(VerificationProvider::Cosign, 0).keyless());
        assert!(!verify(VerificationProvider::Notation, 1).keyless());
        assert!(!verify(VerificationProvider::Notation, 0).keyless());
        let mut logged = verify(VerificationProvider::Cosign, 1);
        assert!(logged.requires_tlog(), "Required by default");
        logged.transparency_log = Some(TransparencyLog::Optional);
        assert!(!logged.requires_tlog());
        logged.transparency_log = Some(TransparencyLog::Required);
        assert!(logged.requires_tlog());
    }
}
