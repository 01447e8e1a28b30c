//! `spec.verify.attestations`: what else than a signature a tag must carry to be elected (SLSA
//! provenance from a named source, a clean scan, an SBOM), each an in-toto predicate type,
//! signed by the policy's keys or identities (or the entry's own identities), whose conditions
//! in CEL are all true (docs/imagepolicy.md, "Attestations"). Checked here before anything is
//! read: a spec that breaks a bound or a condition that does not compile is Stalled, naming
//! the field.

use super::gate_fields::{
    AttestationCondition, AttestationRequirement, ImageVerification, VerificationProvider,
};
use crate::policy::conditions::Condition;
use crate::verify::keyless::{Identity, MAX_IDENTITIES};

/// The most entries of `spec.verify.attestations`.
pub const MAX_ATTESTATIONS: usize = 8;
/// The most conditions of one entry.
pub const MAX_CONDITIONS: usize = 8;
/// The longest predicate type (a URI) and message.
pub const MAX_PREDICATE_TYPE_BYTES: usize = 256;
pub const MAX_MESSAGE_BYTES: usize = 256;

impl ImageVerification {
    /// `spec.verify.attestations`, as written (none: signatures alone).
    pub fn attestations(&self) -> &[AttestationRequirement] {
        self.attestations.as_deref().unwrap_or_default()
    }

    /// Checks `spec.verify.attestations`: its bounds, names, identities, and each condition
    /// compiled; the error names the field and says what to change.
    pub fn check_attestations(&self) -> Result<(), String> {
        let entries = self.attestations();
        if entries.is_empty() {
            return Ok(());
        }
        if self.provider == VerificationProvider::Notation {
            return Err("spec.verify.attestations is for cosign; notation signs no \
                        attestations (use provider: cosign)"
                .into());
        }
        if entries.len() > MAX_ATTESTATIONS {
            return Err(format!(
                "spec.verify.attestations lists {} entries; at most {MAX_ATTESTATIONS} are accepted",
                entries.len()
            ));
        }
        for (i, entry) in entries.iter().enumerate() {
            let field = format!("spec.verify.attestations[{i}]");
            if entries[..i].iter().any(|e| e.name == entry.name) {
                return Err(format!("{field}.name: '{}' is used twice", entry.name));
            }
            entry.check(&field)?;
        }
        Ok(())
    }
}

impl AttestationRequirement {
    /// Checks the entry and compiles its conditions.
    fn check(&self, field: &str) -> Result<(), String> {
        super::check_object_name(&self.name)
            .ok()
            .filter(|_| self.name.len() <= 63 && !self.name.contains('.'))
            .ok_or_else(|| {
                format!(
                    "{field}.name: '{}' is not a DNS label (lower-case letters, digits and '-', \
                     at most 63)",
                    self.name
                )
            })?;
        let kind = &self.predicate_type;
        if kind.is_empty()
            || kind.len() > MAX_PREDICATE_TYPE_BYTES
            || kind.contains(char::is_whitespace)
        {
            return Err(format!(
                "{field}.predicateType: must be a URI of at most {MAX_PREDICATE_TYPE_BYTES} \
                 bytes, e.g. https://slsa.dev/provenance/v1"
            ));
        }
        let identities = self.match_oidc_identity.as_deref().unwrap_or_default();
        if identities.len() > MAX_IDENTITIES {
            return Err(format!(
                "{field}.matchOIDCIdentity lists {} identities; at most {MAX_IDENTITIES} are accepted",
                identities.len()
            ));
        }
        for id in identities {
            Identity::new(&id.issuer, &id.subject)
                .map_err(|e| format!("{field}.matchOIDCIdentity: {e}"))?;
        }
        if self.conditions.len() > MAX_CONDITIONS {
            return Err(format!(
                "{field}.conditions lists {}; at most {MAX_CONDITIONS} are accepted",
                self.conditions.len()
            ));
        }
        for (j, condition) in self.conditions.iter().enumerate() {
            let at = format!("{field}.conditions[{j}]");
            if condition
                .message
                .as_ref()
                .is_some_and(|m| m.len() > MAX_MESSAGE_BYTES)
            {
                return Err(format!("{at}.message is over {MAX_MESSAGE_BYTES} bytes"));
            }
            condition.compile().map_err(|e| {
                let cut: String = condition.expression.chars().take(120).collect();
                format!("{at}.expression '{cut}': {e}")
            })?;
        }
        Ok(())
    }
}

impl AttestationCondition {
    /// The condition compiled (kept once compiled).
    pub fn compile(&self) -> Result<Condition, crate::policy::conditions::CompileError> {
        Condition::cached(&self.expression, self.message.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(attestations: serde_json::Value) -> Result<(), String> {
        let verify: ImageVerification = serde_json::from_value(serde_json::json!({
            "provider": "cosign", "secretRef": {"name": "keys"}, "attestations": attestations}))
        .unwrap();
        verify.check_attestations()
    }

    fn entry(name: &str, expression: &str) -> serde_json::Value {
        serde_json::json!({"name": name, "predicateType": "https://slsa.dev/provenance/v1",
                           "conditions": [{"expression": expression}]})
    }

    #[test]
    fn each_entry_is_checked_naming_its_field() {
        assert_eq!(
            spec(serde_json::json!([entry("provenance", "true")])),
            Ok(())
        );
        let err = spec(serde_json::json!([entry("p", "true"), entry("p", "true")])).unwrap_err();
        assert_eq!(err, "spec.verify.attestations[1].name: 'p' is used twice");
        let err = spec(serde_json::json!([entry("Bad.Name", "true")])).unwrap_err();
        assert!(
            err.starts_with("spec.verify.attestations[0].name: 'Bad.Name' is not a DNS label"),
            "{err}"
        );
        let err = spec(serde_json::json!([entry("p", "predicate.x ==")])).unwrap_err();
        assert!(err.starts_with("spec.verify.attestations[0].conditions[0].expression 'predicate.x ==': does not parse"), "{err}");
        let err = spec(serde_json::json!([entry("p", "tag == 'v1'")])).unwrap_err();
        assert!(err.contains("undeclared reference to 'tag'"), "{err}");
        let mut typeless = entry("p", "true");
        typeless["predicateType"] = "".into();
        assert!(spec(serde_json::json!([typeless]))
            .unwrap_err()
            .contains(".predicateType: must be a URI"));
        let nine: Vec<_> = (0..9).map(|i| entry(&format!("e{i}"), "true")).collect();
        assert!(spec(serde_json::json!(nine))
            .unwrap_err()
            .contains("at most 8"));
        let mut many = entry("p", "true");
        many["conditions"] = serde_json::json!(vec![serde_json::json!({"expression": "true"}); 9]);
        assert!(spec(serde_json::json!([many]))
            .unwrap_err()
            .contains("conditions lists 9"));
        let mut who = entry("p", "true");
        who["matchOIDCIdentity"] = serde_json::json!([{"issuer": "(", "subject": "x"}]);
        assert!(spec(serde_json::json!([who]))
            .unwrap_err()
            .starts_with("spec.verify.attestations[0].matchOIDCIdentity:"));
    }

    /// Each bound at its value is accepted and one more refused.
    #[test]
    fn each_bound_is_exact() {
        let eight: Vec<_> = (0..8).map(|i| entry(&format!("e{i}"), "true")).collect();
        assert_eq!(spec(serde_json::json!(eight)), Ok(()));
        let mut conditions = entry("p", "true");
        conditions["conditions"] =
            serde_json::json!(vec![serde_json::json!({"expression": "true"}); 8]);
        assert_eq!(spec(serde_json::json!([conditions])), Ok(()));
        let named = |name: &str| spec(serde_json::json!([entry(name, "true")]));
        assert_eq!(named(&"a".repeat(63)), Ok(()));
        assert!(named(&"a".repeat(64)).is_err());
        assert!(named("a.b").is_err());
        let typed = |kind: String| {
            let mut e = entry("p", "true");
            e["predicateType"] = kind.into();
            spec(serde_json::json!([e]))
        };
        assert_eq!(typed("x".repeat(256)), Ok(()));
        assert!(typed("x".repeat(257)).is_err());
        assert!(typed("https://a b".into()).is_err());
        let identities = |n: usize| {
            let mut e = entry("p", "true");
            e["matchOIDCIdentity"] = serde_json::json!(vec![
                serde_json::json!({"issuer": "^i$", "subject": "^s$"});
                n
            ]);
            spec(serde_json::json!([e]))
        };
        assert_eq!(identities(16), Ok(()));
        assert!(identities(17).unwrap_err().contains("at most 16"));
        let message = |n: usize| {
            let mut e = entry("p", "true");
            e["conditions"] = serde_json::json!([{"expression": "true", "message": "m".repeat(n)}]);
            spec(serde_json::json!([e]))
        };
        assert_eq!(message(256), Ok(()));
        assert!(message(257)
            .unwrap_err()
            .contains("message is over 256 bytes"));
        // What conditions cost is counted as they run (policy::conditions' budget), not
        // estimated here: eight walks of statement data are accepted.
        let nested = "!predicate.r.exists(r, r.v.exists(v, v.s == 'CRITICAL'))";
        let mut e = entry("p", nested);
        e["conditions"] = serde_json::json!(vec![serde_json::json!({"expression": nested}); 8]);
        assert_eq!(spec(serde_json::json!([e])), Ok(()));
    }

    #[test]
    fn notation_has_no_attestations() {
        let verify: ImageVerification = serde_json::from_value(serde_json::json!({
            "provider": "notation", "secretRef": {"name": "keys"},
            "attestations": [entry("p", "true")]}))
        .unwrap();
        assert!(verify
            .check_attestations()
            .unwrap_err()
            .contains("notation signs no attestations"));
    }
}
