//! The gate list each ImagePolicy spec builds (`ImagePolicySpec::gates`), one builder per gate,
//! each checking its own fields (`spec.filterTags.minAge`, `spec.platforms`, `spec.verify`);
//! their types are `gate_fields.rs` and `image_policy.rs`.

use super::image_policy::{SignedTimePolicy, UndatedPolicy};
use super::{parse_go_duration, ImagePolicySpec, VerificationProvider};
use crate::policy::{
    gate, Gates, MinAge, Platform, Platforms, SignedClock, Undated, Verify, MAX_MIN_AGE,
    MAX_PLATFORMS,
};
use crate::verify::keyless::{Identity, MAX_IDENTITIES};

impl ImagePolicySpec {
    /// The gates this spec sets (none: Flux's election), each built from its own fields; the
    /// list puts them in their judging order. Errors mean the object is Stalled
    /// (`InvalidPolicy`), naming the field.
    pub fn gates(&self) -> Result<Gates, String> {
        let platforms = self.required_platforms()?;
        let gates = [
            self.min_age_gate(&platforms)?.map(gate),
            (!platforms.is_empty()).then(|| gate(Platforms::new(platforms))),
            self.verify_gate()?.map(gate),
        ];
        Ok(Gates::of(gates.into_iter().flatten()))
    }

    /// `spec.platforms`, parsed: at most 16.
    fn required_platforms(&self) -> Result<Vec<Platform>, String> {
        let written = self.platforms.as_deref().unwrap_or_default();
        if written.len() > MAX_PLATFORMS {
            return Err(format!(
                "spec.platforms lists {} platforms; at most {MAX_PLATFORMS} are accepted",
                written.len()
            ));
        }
        written
            .iter()
            .map(|p| Platform::parse(p).map_err(|e| format!("invalid spec.platforms: {e}")))
            .collect()
    }

    /// `spec.filterTags.minAge` (with `minAgeUndated`): an index is as young as the images of
    /// the `platforms` required.
    fn min_age_gate(&self, platforms: &[Platform]) -> Result<Option<MinAge>, String> {
        let Some(text) = self.filter_tags.as_ref().and_then(|f| f.min_age.as_deref()) else {
            return Ok(None);
        };
        let age =
            parse_go_duration(text).map_err(|e| format!("invalid spec.filterTags.minAge: {e}"))?;
        if age > MAX_MIN_AGE {
            return Err(format!(
                "invalid spec.filterTags.minAge: {text} is longer than ten years"
            ));
        }
        let undated = match self.filter_tags.as_ref().and_then(|f| f.min_age_undated) {
            Some(UndatedPolicy::FirstSeen) => Undated::FirstSeen,
            Some(UndatedPolicy::Hold) | None => Undated::Hold,
        };
        let min_age = MinAge::new(age, text.to_string(), undated);
        let min_age = min_age.with_signed_clock(self.signed_clock()?);
        Ok(Some(min_age.for_platforms(platforms.to_vec())))
    }

    /// `spec.filterTags.minAgeSignedTime`: the signing time is read with `spec.verify`
    /// (cosign's: notation signatures carry none here); `Required` asks for `spec.verify`.
    fn signed_clock(&self) -> Result<SignedClock, String> {
        let written = self
            .filter_tags
            .as_ref()
            .and_then(|f| f.min_age_signed_time);
        let cosign = self
            .verify
            .as_ref()
            .is_some_and(|v| v.provider == VerificationProvider::Cosign);
        match (written.unwrap_or_default(), cosign) {
            (SignedTimePolicy::IfPresent, true) => Ok(SignedClock::IfPresent),
            (SignedTimePolicy::Required, true) => Ok(SignedClock::Required),
            (SignedTimePolicy::IfPresent, false) => Ok(SignedClock::Off),
            (SignedTimePolicy::Required, false) => Err(
                "spec.filterTags.minAgeSignedTime: Required reads the time of a cosign \
                 signature: set spec.verify (provider: cosign), or remove it"
                    .into(),
            ),
        }
    }

    /// `spec.verify`: its identities checked, its Secret required.
    fn verify_gate(&self) -> Result<Option<Verify>, String> {
        let Some(verify) = &self.verify else {
            return Ok(None);
        };
        let identities = verify.match_oidc_identity.as_deref().unwrap_or_default();
        if identities.len() > MAX_IDENTITIES {
            return Err(format!(
                "spec.verify.matchOIDCIdentity lists {} identities; at most {MAX_IDENTITIES} are accepted",
                identities.len()
            ));
        }
        if verify.provider == VerificationProvider::Notation && !identities.is_empty() {
            return Err(
                "spec.verify.matchOIDCIdentity is for cosign's keyless signatures; \
                        notation's trusted identities are in the trust policy"
                    .into(),
            );
        }
        for id in identities {
            Identity::new(&id.issuer, &id.subject)
                .map_err(|e| format!("invalid spec.verify: {e}"))?;
        }
        verify.check_attestations()?;
        // Keyless with no Secret checks with Sigstore's public-good trusted root.
        if verify.secret_ref.is_none() && !verify.keyless() {
            return Err(
                "spec.verify.secretRef is required: name a Secret whose *.pub entries are \
                 cosign public keys (or, for notation, its trust policy and certificates); \
                 keyless signatures (matchOIDCIdentity) need none with Sigstore's public-good \
                 instance"
                    .into(),
            );
        }
        let attestations = verify.attestations().iter().map(|a| a.name.clone());
        Ok(Some(Verify {
            attestations: attestations.collect(),
        }))
    }
}
