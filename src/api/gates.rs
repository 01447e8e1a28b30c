//! The gate list each ImagePolicy spec builds (`ImagePolicySpec::gates`), one builder per gate,
//! each checking its own fields (`spec.filterTags.minAge`, `spec.platforms`, `spec.verify`);
//! their types are `gate_fields.rs` and `image_policy.rs`.

use super::image_policy::{SignedTimePolicy, UndatedPolicy};
use super::{parse_go_duration, ImagePolicySpec, ImagePolicyStatus, VerificationProvider};
use crate::policy::{
    gate, Age, Bumps, ByBump, Gates, MinAge, Platform, Platforms, Policy, PolicyKind, SignedClock,
    Undated, Verify, MAX_MIN_AGE, MAX_PLATFORMS,
};
use crate::verify::keyless::{Identity, MAX_IDENTITIES};
use std::time::Duration;

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

    /// `spec.filterTags.minAge` (with `minAgeUndated` and `minAgeByBump`): an index is as young
    /// as the images of the `platforms` required.
    fn min_age_gate(&self, platforms: &[Platform]) -> Result<Option<MinAge>, String> {
        let filter = self.filter_tags.as_ref();
        let base = filter.and_then(|f| f.min_age.as_deref());
        let base = base.map(|t| age("spec.filterTags.minAge", t)).transpose()?;
        let by_bump = self.by_bump()?;
        let undated = match filter.and_then(|f| f.min_age_undated) {
            Some(UndatedPolicy::FirstSeen) => Undated::FirstSeen,
            Some(UndatedPolicy::Hold) | None => Undated::Hold,
        };
        let min_age = match (base, by_bump) {
            (None, None) => return Ok(None),
            (Some(Age { age, written }), by_bump) => {
                MinAge::new(age, written, undated).with_bumps(by_bump.unwrap_or_default())
            }
            (None, Some(by_bump)) => MinAge::by_bump_only(by_bump, undated),
        };
        let min_age = min_age.with_signed_clock(self.signed_clock()?);
        Ok(Some(min_age.for_platforms(platforms.to_vec())))
    }

    /// `spec.filterTags.minAgeByBump`: each age checked; for `semver` policies only (the
    /// others have no major, minor or patch).
    fn by_bump(&self) -> Result<Option<ByBump>, String> {
        let Some(written) = self
            .filter_tags
            .as_ref()
            .and_then(|f| f.min_age_by_bump.as_ref())
        else {
            return Ok(None);
        };
        if self.policy.semver.is_none() {
            return Err(
                "spec.filterTags.minAgeByBump tells major, minor and patch bumps apart, \
                        which only a semver policy has: set spec.policy.semver, or use \
                        spec.filterTags.minAge"
                    .into(),
            );
        }
        let read = |kind: &str, text: &Option<String>| {
            let field = format!("spec.filterTags.minAgeByBump.{kind}");
            text.as_deref().map(|t| age(&field, t)).transpose()
        };
        Ok(Some(ByBump {
            major: read("major", &written.major)?,
            minor: read("minor", &written.minor)?,
            patch: read("patch", &written.patch)?,
        }))
    }

    /// What tells `minAgeByBump`'s bumps, when it is set: the tag `status` records as elected
    /// from `image` (when known: offline, only the policy is), read by `ranking`.
    pub fn bumps(
        &self,
        status: &ImagePolicyStatus,
        image: Option<&str>,
        ranking: &Policy,
    ) -> Option<Bumps> {
        self.filter_tags.as_ref()?.min_age_by_bump.as_ref()?;
        if ranking.kind() != PolicyKind::SemVer {
            return None;
        }
        let elected = status.latest_ref.as_ref();
        let elected = elected.filter(|l| image.is_none_or(|image| l.name == image));
        Some(Bumps::from(ranking, elected.map(|l| l.tag.as_str())))
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
        if !verify.requires_signature() && verify.attestations().is_empty() {
            return Err(
                "spec.verify.imageSignature: NotRequired elects a tag on its attestations alone, \
                 and spec.verify.attestations names none: add an entry (a predicateType, and who \
                 signs it), or remove imageSignature"
                    .into(),
            );
        }
        let attestations = verify.attestations().iter().map(|a| a.name.clone());
        Ok(Some(Verify {
            attestations: attestations.collect(),
            signature: verify.requires_signature(),
        }))
    }
}

/// A minimum age as `field` writes it: a Go duration of at most ten years.
fn age(field: &str, text: &str) -> Result<Age, String> {
    let age: Duration = parse_go_duration(text).map_err(|e| format!("invalid {field}: {e}"))?;
    if age > MAX_MIN_AGE {
        return Err(format!("invalid {field}: {text} is longer than ten years"));
    }
    Ok(Age {
        age,
        written: text.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ImagePolicyStatus, ImageRef};

    fn spec(policy: serde_json::Value, filter: serde_json::Value) -> ImagePolicySpec {
        serde_json::from_value(serde_json::json!({
            "imageRepositoryRef": {"name": "app"}, "policy": policy, "filterTags": filter,
        }))
        .unwrap()
    }

    fn semver() -> serde_json::Value {
        serde_json::json!({"semver": {"range": ">=1.0.0"}})
    }

    #[test]
    fn min_age_by_bump_is_checked_and_named_per_field() {
        let gates = |filter| spec(semver(), filter).gates();
        let bumps = serde_json::json!({"minAgeByBump": {"major": "720h", "patch": "24h"}});
        assert_eq!(
            gates(bumps).unwrap().describe(),
            ["minAge major 720h, patch 24h"]
        );
        let both = serde_json::json!({"minAge": "168h", "minAgeByBump": {"minor": "72h"}});
        assert_eq!(gates(both).unwrap().describe(), ["minAge 168h, minor 72h"]);
        let err = |filter| gates(filter).unwrap_err();
        let bad = serde_json::json!({"minAgeByBump": {"minor": "3 days"}});
        assert!(
            err(bad).starts_with("invalid spec.filterTags.minAgeByBump.minor: "),
            "the field named"
        );
        let long = serde_json::json!({"minAgeByBump": {"major": "100000h"}});
        assert_eq!(
            err(long),
            "invalid spec.filterTags.minAgeByBump.major: 100000h is longer than ten years"
        );
        let alphabetical = spec(
            serde_json::json!({"alphabetical": {"order": "asc"}}),
            serde_json::json!({"minAgeByBump": {"major": "1h"}}),
        );
        assert!(alphabetical
            .gates()
            .unwrap_err()
            .contains("which only a semver policy has"));
    }

    #[test]
    fn bumps_are_told_from_the_tag_elected_from_this_image() {
        let spec = spec(
            semver(),
            serde_json::json!({"minAgeByBump": {"major": "1h"}}),
        );
        let ranking = spec.selection_policy().unwrap();
        let status = |name: &str| ImagePolicyStatus {
            latest_ref: Some(ImageRef {
                name: name.into(),
                tag: "1.4.2".into(),
                digest: None,
            }),
            ..Default::default()
        };
        let of = |status: &ImagePolicyStatus, image| {
            let bumps = spec.bumps(status, image, &ranking).unwrap();
            (bumps.elected().map(str::to_string), bumps.of("2.0.0"))
        };
        let elected = Some("1.4.2".to_string());
        assert_eq!(
            of(&status("reg/app"), Some("reg/app")),
            (elected.clone(), crate::policy::Bump::Major)
        );
        // Offline, the image is not known: the recorded election counts.
        assert_eq!(
            of(&status("reg/app"), None),
            (elected, crate::policy::Bump::Major)
        );
        // Elected from another image: a first election for this one.
        let other = of(&status("reg/old"), Some("reg/app"));
        assert_eq!(other, (None, crate::policy::Bump::Unranked));
        let first = of(&ImagePolicyStatus::default(), Some("reg/app"));
        assert_eq!(first, (None, crate::policy::Bump::Unranked));
        // Without minAgeByBump nothing is told.
        let plain = super::super::ImagePolicySpec {
            filter_tags: None,
            ..spec.clone()
        };
        assert!(plain.bumps(&status("reg/app"), None, &ranking).is_none());
    }

    /// `imageSignature: NotRequired` elects on attestations alone: without an entry it is
    /// refused naming the field; with one it is a verify gate that says so.
    #[test]
    fn no_image_signature_needs_an_attestation() {
        let with = |verify: serde_json::Value| {
            let mut spec = spec(semver(), serde_json::json!(null));
            spec.verify = Some(serde_json::from_value(verify).unwrap());
            spec
        };
        let bare = with(serde_json::json!({"provider": "cosign",
            "secretRef": {"name": "keys"}, "imageSignature": "NotRequired"}));
        let err = bare.gates().unwrap_err();
        assert!(
            err.starts_with(
                "spec.verify.imageSignature: NotRequired elects a tag on its attestations alone"
            ),
            "{err}"
        );
        let attested = with(serde_json::json!({"provider": "cosign",
            "secretRef": {"name": "keys"}, "imageSignature": "NotRequired",
            "attestations": [{"name": "provenance", "predicateType": "https://slsa.dev/provenance/v1"}]}));
        let gates = attested.gates().unwrap();
        let described = format!("{gates:?}");
        assert!(described.contains("signature: false"), "{described}");
    }
}
