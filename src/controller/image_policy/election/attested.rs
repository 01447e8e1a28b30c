//! What the verify gate checks a digest with: the trusted keys, and `spec.verify.attestations`
//! compiled, each with who must have signed it ([`Trust`]). A digest passes when a signature
//! verifies and, for each entry, an attestation of its predicate type verifies and every one
//! that verifies makes every condition true (cosign's rule for `verify-attestation --policy`:
//! a failing scan beside a passing one holds, whatever order the registry lists them in); the
//! reason of a hold names the entry, the attestation and its first false condition.

use crate::api::{AttestationRequirement, ImageVerification};
use crate::policy::conditions::{
    Budget, Condition, Input, UnmetKind, MAX_STATEMENTS_JUDGED, POLICY_COST_LIMIT,
};
use crate::verify::{Signed, TrustedKeys};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::SystemTime;

/// The policy's trust: its keys, its attestations, and the fingerprint verdicts are kept by.
pub(in crate::controller::image_policy) struct Trust {
    pub keys: Arc<TrustedKeys>,
    pub rules: Vec<Rule>,
    pub fingerprint: String,
    /// An image signature is required besides the attestations (`imageSignature`).
    pub signature: bool,
}

/// Why a digest's attestations do not pass it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::controller::image_policy) enum Unattested {
    /// Judged and held, saying why: the verdict kept until the recheck.
    Held(String),
    /// Stopped before it was judged (its slot went to another namespace): nothing is kept,
    /// and it is judged again in the next reconcile.
    Stopped,
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
        let signature = verify.requires_signature();
        if !signature {
            hash.update(b"imageSignature: NotRequired");
        }
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
            signature,
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

    /// `Ok(())` when every entry has attestations among `signed` that verify, each of which
    /// satisfies its conditions at `now`, all within [`POLICY_COST_LIMIT`] and until `stop`
    /// is set; else the first entry's reason.
    pub fn attested(
        &self,
        signed: &[Signed],
        digest: &str,
        now: SystemTime,
        stop: Option<Arc<AtomicBool>>,
    ) -> Result<(), Unattested> {
        let unix = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let mut budget = Budget {
            left: POLICY_COST_LIMIT,
            stop,
        };
        for rule in &self.rules {
            let signers = rule.signers.as_ref().unwrap_or(&self.keys);
            let found = signers.attested(signed, digest, &rule.predicate_type, now);
            let statements = found.map_err(|why| Unattested::Held(rule.refused(&why)))?;
            rule.satisfied(&statements, digest, unix, &mut budget)
                .map_err(|unmet| match unmet {
                    Unattested::Held(why) => Unattested::Held(rule.refused(&why)),
                    Unattested::Stopped => Unattested::Stopped,
                })?;
        }
        Ok(())
    }
}

impl Rule {
    /// Every one of `statements` (verified; the same statement twice counted once) makes every
    /// condition true; else the first failing one's first false condition. Over
    /// [`MAX_STATEMENTS_JUDGED`] distinct statements hold the tag unjudged.
    fn satisfied(
        &self,
        statements: &[serde_json::Value],
        digest: &str,
        now: i64,
        budget: &mut Budget,
    ) -> Result<(), Unattested> {
        let mut distinct: Vec<&serde_json::Value> = Vec::new();
        for statement in statements {
            if !distinct.contains(&statement) {
                distinct.push(statement);
            }
        }
        let count = distinct.len();
        if count == 0 {
            return Err(Unattested::Held("no statement".into()));
        }
        if count > MAX_STATEMENTS_JUDGED {
            return Err(Unattested::Held(format!(
                "{count} attestations of this type verify; at most {MAX_STATEMENTS_JUDGED} are \
                 judged, and every one must satisfy the conditions, so the tag is held"
            )));
        }
        for (i, statement) in distinct.into_iter().enumerate() {
            let which = |why: String| match count {
                1 => Unattested::Held(why),
                _ => Unattested::Held(format!("attestation {} of {count}: {why}", i + 1)),
            };
            let input = Input::new(statement, digest).map_err(which)?;
            for condition in &self.conditions {
                condition
                    .holds_within(&input, now, budget)
                    .map_err(|unmet| match unmet.kind {
                        UnmetKind::Stopped => Unattested::Stopped,
                        _ => which(unmet.message),
                    })?;
            }
        }
        Ok(())
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

    /// Every attestation of a type that verifies is judged, in any order: one failing beside
    /// passing ones holds the tag (cosign's rule), one statement listed twice counts once,
    /// and over [`MAX_STATEMENTS_JUDGED`] hold it unjudged.
    #[test]
    fn every_statement_of_a_type_is_judged() {
        let rule = Rule {
            name: "scan".into(),
            predicate_type: "https://example.com/scan".into(),
            conditions: vec![Condition::compile("predicate.ok", Some("clean")).unwrap()],
            signers: None,
        };
        let statement = |ok: bool, n: u32| serde_json::json!({"predicate": {"ok": ok, "n": n}});
        let judge = |statements: &[serde_json::Value]| {
            let mut budget = Budget::new(POLICY_COST_LIMIT);
            rule.satisfied(statements, "sha256:ab", 0, &mut budget)
                .map_err(|unattested| match unattested {
                    Unattested::Held(why) => why,
                    Unattested::Stopped => panic!("stopped unasked"),
                })
        };
        let (good, good2, bad) = (statement(true, 1), statement(true, 2), statement(false, 3));
        assert_eq!(judge(std::slice::from_ref(&good)), Ok(()));
        assert_eq!(judge(&[good.clone(), good2.clone()]), Ok(()));
        assert_eq!(
            judge(std::slice::from_ref(&bad)),
            Err("clean (is false)".into())
        );
        // Two and three, the failing one in every place.
        let orders: [&[&serde_json::Value]; 5] = [
            &[&good, &bad],
            &[&bad, &good],
            &[&bad, &good, &good2],
            &[&good, &bad, &good2],
            &[&good, &good2, &bad],
        ];
        for order in orders {
            let statements: Vec<_> = order.iter().map(|s| (*s).clone()).collect();
            let held = judge(&statements).unwrap_err();
            assert!(
                held.ends_with("clean (is false)") && held.contains(" of "),
                "{held}"
            );
        }
        assert_eq!(judge(&[good.clone(), good.clone()]), Ok(()));
        let many: Vec<_> = (0..=MAX_STATEMENTS_JUDGED as u32)
            .map(|n| statement(true, n))
            .collect();
        let held = judge(&many).unwrap_err();
        assert!(
            held.starts_with("9 attestations of this type verify; at most 8"),
            "{held}"
        );
        assert_eq!(judge(&many[..MAX_STATEMENTS_JUDGED]), Ok(()));
        assert_eq!(judge(&[]), Err("no statement".into()));
        // Stopped by its caller, it is not judged (nothing to keep); the budget is not spent.
        let stop = Arc::new(AtomicBool::new(true));
        let mut stopped = Budget {
            left: POLICY_COST_LIMIT,
            stop: Some(stop),
        };
        let held = rule.satisfied(std::slice::from_ref(&good), "sha256:ab", 0, &mut stopped);
        assert_eq!(held, Err(Unattested::Stopped));
        assert_eq!(stopped.left, POLICY_COST_LIMIT);
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
