//! The ImagePolicy's election gates, beyond Flux (docs/imagepolicy.md, "Gated election";
//! docs/compatibility.md lists them as extensions): `spec.filterTags.minAge`,
//! `spec.platforms`, `spec.verify`, and `status.heldBack`, which says why a better-ranked tag
//! was not elected.

use super::{parse_go_duration, ImagePolicySpec, LocalObjectReference};
use crate::policy::{Gates, Platform, MAX_MIN_AGE, MAX_PLATFORMS};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most candidates `status.heldBack` lists.
pub const MAX_HELD_BACK: usize = 10;

/// Verify each candidate's signature before electing it (the shape of Flux's
/// OCIRepository `spec.verify`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageVerification {
    /// The signature format: `cosign`.
    pub provider: VerificationProvider,
    /// A Secret in the policy's namespace whose `*.pub` keys are the trusted cosign public
    /// keys (PEM, ECDSA P-256). Required: keyless verification is not supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Keyless identities (issuer and subject regexes). Not supported: a policy setting it is
    /// Stalled, rather than verified less than it asks.
    #[serde(
        default,
        rename = "matchOIDCIdentity",
        skip_serializing_if = "Option::is_none"
    )]
    pub match_oidc_identity: Option<Vec<OidcIdentityMatch>>,
}

/// The signature formats `spec.verify.provider` accepts.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VerificationProvider {
    #[default]
    Cosign,
}

/// A keyless signer's identity: regular expressions for the OIDC issuer and subject.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct OidcIdentityMatch {
    pub issuer: String,
    pub subject: String,
}

/// A candidate ranked above the elected tag that a gate held back.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct HeldBackTag {
    pub tag: String,
    /// The digest the gate looked at, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// `minAge`, `platforms` or `verify`.
    pub gate: String,
    /// Why, e.g. `3h old, minAge 168h`.
    pub reason: String,
}

impl ImagePolicySpec {
    /// The gates this spec sets (none: Flux's election); errors mean the object is Stalled
    /// (`InvalidPolicy`), naming the field.
    pub fn gates(&self) -> Result<Gates, String> {
        let min_age = match self.filter_tags.as_ref().and_then(|f| f.min_age.as_deref()) {
            None => None,
            Some(text) => {
                let age = parse_go_duration(text)
                    .map_err(|e| format!("invalid spec.filterTags.minAge: {e}"))?;
                if age > MAX_MIN_AGE {
                    return Err(format!(
                        "invalid spec.filterTags.minAge: {text} is longer than ten years"
                    ));
                }
                Some((age, text.to_string()))
            }
        };
        let written = self.platforms.as_deref().unwrap_or_default();
        if written.len() > MAX_PLATFORMS {
            return Err(format!(
                "spec.platforms lists {} platforms; at most {MAX_PLATFORMS} are accepted",
                written.len()
            ));
        }
        let platforms = written
            .iter()
            .map(|p| Platform::parse(p).map_err(|e| format!("invalid spec.platforms: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(verify) = &self.verify {
            if verify
                .match_oidc_identity
                .as_ref()
                .is_some_and(|m| !m.is_empty())
            {
                return Err(
                    "spec.verify.matchOIDCIdentity asks for keyless verification, which \
                            this controller does not support; verify with public keys \
                            (spec.verify.secretRef, *.pub entries)"
                        .into(),
                );
            }
            if verify.secret_ref.is_none() {
                return Err(
                    "spec.verify.secretRef is required: keyless verification is not \
                            supported; name a Secret whose *.pub entries are cosign public keys"
                        .into(),
                );
            }
        }
        Ok(Gates {
            min_age,
            platforms,
            verify: self.verify.is_some(),
        })
    }
}
