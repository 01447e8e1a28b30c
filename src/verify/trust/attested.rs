//! Attestations (`spec.verify.attestations`): the in-toto statements of one predicate type
//! about an image, each in a bundle (cosign v3) or a legacy `.att` layer (cosign v2) signed by
//! what the policy (or the entry) trusts. Cosign only: notation has no attestations. Which statement satisfies the entry's conditions is
//! the caller's to judge; here only what verifies is returned, read after it verified.

use super::super::bundle::statement::check_attestation;
use super::super::bundle::{Bundle, Envelope};
use super::super::Signed;
use super::{Trust, TrustedKeys};
use std::time::SystemTime;

impl TrustedKeys {
    /// The statements of `predicate_type` naming `digest` among the `signed` bundles and
    /// legacy attestation layers, each signed by a trusted key or identity (checked at `now`
    /// and the times its log and timestamps vouch for); when there is none, why.
    pub fn attested(
        &self,
        signed: &[Signed],
        digest: &str,
        predicate_type: &str,
        now: SystemTime,
    ) -> Result<Vec<serde_json::Value>, String> {
        let Trust::Cosign(cosign) = &self.trust else {
            return Err("notation signs no attestation".into());
        };
        let mut found = Vec::new();
        let mut why = Vec::new();
        let mut read = 0;
        for signed in signed {
            let Some(claimed) = claim(signed) else {
                continue;
            };
            // What an attestation claims before it verifies only spares the verification of
            // another type's: what is returned is checked again once verified.
            if claimed.is_some_and(|claimed| claimed != predicate_type) {
                continue;
            }
            read += 1;
            let checked = cosign
                .verify_attestation(signed, now)
                .and_then(|(_, kind, payload)| {
                    check_attestation(&kind, &payload, digest, predicate_type)
                });
            match checked {
                Ok(statement) => found.push(statement),
                Err(refused) if !why.contains(&refused) => why.push(refused),
                Err(_) => {}
            }
        }
        let reasons: Vec<String> = why.iter().map(|r| r.reason.clone()).collect();
        match (found.is_empty(), read) {
            (false, _) => Ok(found),
            (true, 0) => {
                Err("no attestation of that type among its referrers or its .att tag".into())
            }
            (true, 1) => Err(format!("1 attestation, not valid: {}", reasons.join("; "))),
            (true, count) => Err(format!(
                "{count} attestations, none valid: {}",
                reasons.join("; ")
            )),
        }
    }
}

/// What an attestation (a bundle or a legacy layer) claims its predicate type is, read
/// without verifying anything (`Some(None)`: it does not say); `None` for a signature.
fn claim(signed: &Signed) -> Option<Option<String>> {
    match signed {
        Signed::Bundle(bytes) => Some(claimed_predicate(bytes)),
        Signed::Attestation(layer) => Some(envelope_predicate(&layer.payload)),
        Signed::Simple(_) | Signed::Notation { .. } => None,
    }
}

/// The predicate type a bundle's statement claims, read without verifying anything.
pub(super) fn claimed_predicate(bytes: &[u8]) -> Option<String> {
    statement_predicate(&Bundle::parse(bytes).ok()?.dsse_envelope?)
}

/// The predicate type a legacy attestation layer's statement claims, unverified.
fn envelope_predicate(bytes: &[u8]) -> Option<String> {
    statement_predicate(&serde_json::from_slice(bytes).ok()?)
}

fn statement_predicate(envelope: &Envelope) -> Option<String> {
    let decoded = envelope.decode().ok()?;
    #[derive(serde::Deserialize)]
    struct Claim {
        #[serde(rename = "predicateType")]
        predicate_type: String,
    }
    let claim: Claim = serde_json::from_slice(&decoded.payload).ok()?;
    Some(claim.predicate_type)
}

#[cfg(test)]
mod tests;
