//! `spec.verify`: the digest has a valid signature by a trusted key. The check itself (reading
//! and verifying signatures) is the registry's part; this gate judges its verdict.

use super::{Fact, Facts, Gate, Hold, Judgement, Missing, Need};

/// A valid signature is required (and, by name, the attestations `spec.verify` lists, which
/// the signature check judges with it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verify {
    pub attestations: Vec<String>,
}

impl Verify {
    /// A signature alone.
    pub const SIGNATURE: Verify = Verify {
        attestations: Vec::new(),
    };
}

impl Gate for Verify {
    fn name(&self) -> &'static str {
        "verify"
    }

    fn describe(&self) -> String {
        match self.attestations.as_slice() {
            [] => "verify cosign".into(),
            names => format!("verify cosign, attestations {}", names.join(", ")),
        }
    }

    fn needs(&self) -> Need {
        Need::of([Fact::Signature])
    }

    fn order(&self) -> u8 {
        2
    }

    fn judge(&self, facts: &Facts<'_>) -> Result<Judgement, Missing> {
        Ok(match facts.signature()? {
            Ok(_) => Judgement::Pass,
            Err(reason) => Judgement::Hold(Hold {
                gate: self.name(),
                reason: reason.to_string(),
                eligible_at: None,
            }),
        })
    }
}
