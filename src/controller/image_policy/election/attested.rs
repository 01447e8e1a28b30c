//! What the verify gate checks a digest with: the trusted keys, and `spec.verify.attestations`
//! compiled, each with who must have signed it ([`Trust`]). A digest passes when a signature
//! verifies and, for each entry, one attestation of its predicate type verifies and makes every
//! condition true; the reason of a hold names the entry and its first false condition.

use crate::api::{AttestationRequirement, ImageVerification};
use crate::policy::conditions::{Condition, Input, MAX_STATEMENTS_JUDGED};
use crate::verify::{Signed, TrustedKeys};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

/// The policy's trust: its keys, its attestations, and the fingerprint verdicts are kept by.
pub(in crate::controller::image_policy) struct Trust {
    pub keys: Arc<TrustedKeys>,
    pub rules: Vec<Rule>,
    pub fingerprint: String,
}

/// One `spec.verify.attestations` entry, ready to judge.
pub(in crate::controller::image_policy) struct Rule {
    pub name: String,
    pub predicate_type: String,
    pub conditions: Vec<Condition>,
    /// Who signs it: the entry's own identities, else the policy's keys and identities.
    pub signers: Option<Arc<TrustedKeys>>,
}

impl Trust {
    /// `keys` and the attestations of `verify`, their signers built from the same Secret data
    /// (`data`) as the keys; the fingerprint is the keys' when there are none, so verdicts
    /// kept before attestations were added stay the keys'.
    pub fn new(
        keys: TrustedKeys,
        verify: &ImageVerification,
        data: &BTreeMap<String, Vec<u8>>,
    ) -> Result<Trust, String> {
        let entries = verify.attestations();
        let mut hash = Sha256::new();
        hash.update(keys.fingerprint.as_bytes());
        let rules = entries
            .iter()
            .map(|entry| {
                hash.update(serde_json::to_vec(entry).unwrap_or_default());
                rule(entry, data, verify.requires_tlog())
            })
            .collect::<Result<Vec<_>, _>>()?;
        let fingerprint = match rules.is_empty() {
            true => keys.fingerprint.clone(),
            false => format!("att-{:x}", hash.finalize())[..36].to_string(),
        };
        Ok(Trust {
            keys: Arc::new(keys),
            rules,
            fingerprint,
        })
    }

    /// The predicate types the registry is asked for besides signatures.
    pub fn predicate_types(&self) -> Vec<String> {
        self.rules
            .iter()
            .map(|r| r.predicate_type.clone())
            .collect()
    }

    /// Whether a condition reads the clock: then a verdict holds only until it is checked
    /// again, not for good.
    pub fn reads_now(&self) -> bool {
        self.rules
            .iter()
            .flat_map(|r| &r.conditions)
            .any(Condition::reads_now)
    }

    /// `Ok(())` when every entry has an attestation among `signed` that verifies and satisfies
    /// its conditions at `now`; else the first entry's reason.
    pub fn attested(&self, signed: &[Signed], digest: &str, now: SystemTime) -> Result<(), String> {
        let unix = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        for rule in &self.rules {
            let signers = rule.signers.as_ref().unwrap_or(&self.keys);
            let found = signers.attested(signed, digest, &rule.predicate_type, now);
            let statements = found.map_err(|why| rule.refused(&why))?;
            rule.satisfied(&statements, digest, unix)
                .map_err(|why| rule.refused(&why))?;
        }
        Ok(())
    }
}

impl Rule {
    /// One of `statements` (verified) makes every condition true; else the first statement's
    /// first false condition.
    fn satisfied(
        &self,
        statements: &[serde_json::Value],
        digest: &str,
        now: i64,
    ) -> Result<(), String> {
        let mut first = None;
        for statement in statements.iter().take(MAX_STATEMENTS_JUDGED) {
            let checked = Input::new(statement, digest).and_then(|input| {
                self.conditions
                    .iter()
                    .try_for_each(|c| c.holds(&input, now))
            });
            match checked {
                Ok(()) => return Ok(()),
                Err(why) => {
                    first.get_or_insert(why);
                }
            }
        }
        Err(first.unwrap_or_else(|| "no statement".into()))
    }

    fn refused(&self, why: &str) -> String {
        format!(
            "attestation '{}' ({}): {why}",
            self.name, self.predicate_type
        )
    }
}

/// The rule of `entry`: its conditions (checked when the spec was), its own signers when it
/// names identities.
fn rule(
    entry: &AttestationRequirement,
    data: &BTreeMap<String, Vec<u8>>,
    require_tlog: bool,
) -> Result<Rule, String> {
    let conditions = entry
        .conditions
        .iter()
        .map(|c| {
            c.compile()
                .map_err(|e| format!("attestation '{}': {e}", entry.name))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let identities: Vec<(String, String)> = entry
        .match_oidc_identity
        .iter()
        .flatten()
        .map(|id| (id.issuer.clone(), id.subject.clone()))
        .collect();
    let signers = match identities.is_empty() {
        true => None,
        false => {
            // The entry's identities alone: the policy's keys do not sign it.
            let mut roots = data.clone();
            roots.retain(|name, _| !name.ends_with(".pub"));
            let keys = TrustedKeys::from_secret(&roots, &identities, require_tlog)
                .map_err(|e| format!("attestation '{}': {e}", entry.name))?;
            Some(Arc::new(keys))
        }
    };
    Ok(Rule {
        name: entry.name.clone(),
        predicate_type: entry.predicate_type.clone(),
        conditions,
        signers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Of the statements of one type, the first two that verify are judged: a registry that
    /// lists sixteen makes no more work (the third, good one, is not looked at).
    #[test]
    fn two_statements_of_a_type_are_judged_at_most() {
        let rule = Rule {
            name: "scan".into(),
            predicate_type: "https://example.com/scan".into(),
            conditions: vec![Condition::compile("predicate.ok", Some("clean")).unwrap()],
            signers: None,
        };
        let statement = |ok: bool| serde_json::json!({"predicate": {"ok": ok}});
        let digest = "sha256:ab";
        assert_eq!(
            rule.satisfied(&[statement(false), statement(true)], digest, 0),
            Ok(())
        );
        let third = [statement(false), statement(false), statement(true)];
        assert_eq!(
            rule.satisfied(&third, digest, 0),
            Err("clean (is false)".into())
        );
        assert_eq!(MAX_STATEMENTS_JUDGED, 2);
        assert_eq!(
            rule.refused("why"),
            "attestation 'scan' (https://example.com/scan): why"
        );
    }

    /// The trust of a spec: the types asked for, whether a condition reads the clock, and a
    /// fingerprint that is the keys' without attestations and another with them.
    #[test]
    fn a_trust_is_built_from_its_spec() {
        let root = include_bytes!("../../../verify/fixtures/rekor-v2/trusted_root.json");
        let data = BTreeMap::from([(crate::verify::TRUSTED_ROOT.to_string(), root.to_vec())]);
        let identity = [("^https://issuer$".to_string(), "^me$".to_string())];
        let keys = || TrustedKeys::from_secret(&data, &identity, true).unwrap();
        let verify = |attestations: serde_json::Value| -> ImageVerification {
            serde_json::from_value(serde_json::json!({"provider": "cosign",
                "matchOIDCIdentity": [{"issuer": "^https://issuer$", "subject": "^me$"}],
                "attestations": attestations}))
            .unwrap()
        };
        let plain = Trust::new(keys(), &verify(serde_json::json!([])), &data).unwrap();
        assert_eq!(plain.fingerprint, keys().fingerprint);
        assert!(plain.predicate_types().is_empty() && !plain.reads_now());
        let fresh = "now - timestamp(predicate.at) < duration('1h')";
        let entries = serde_json::json!([
            {"name": "provenance", "predicateType": "https://slsa.dev/provenance/v1"},
            {"name": "scan", "predicateType": "https://example.com/scan",
             "conditions": [{"expression": fresh}],
             "matchOIDCIdentity": [{"issuer": "^https://issuer$", "subject": "^scanner$"}]}]);
        let attested = Trust::new(keys(), &verify(entries), &data).unwrap();
        assert_eq!(
            attested.predicate_types(),
            ["https://slsa.dev/provenance/v1", "https://example.com/scan"]
        );
        assert!(attested.reads_now());
        assert!(attested.fingerprint.starts_with("att-"));
        assert_ne!(attested.fingerprint, plain.fingerprint);
        assert!(attested.rules[0].signers.is_none() && attested.rules[1].signers.is_some());
        let timeless = serde_json::json!([{"name": "p", "predicateType": "t",
            "conditions": [{"expression": "predicate.a == 1"}]}]);
        assert!(!Trust::new(keys(), &verify(timeless), &data)
            .unwrap()
            .reads_now());
    }
}
