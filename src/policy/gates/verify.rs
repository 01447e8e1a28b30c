//! `spec.verify`: the digest has a valid signature by a trusted key. The check itself (reading
//! and verifying signatures) is the registry's part; this gate judges its verdict.

use super::{Fact, Facts, Gate, Hold, Judgement, Missing, Need};

/// A valid signature is required (and, by name, the attestations `spec.verify` lists, which
/// the signature check judges with it).
// No Default: a default would not require the signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verify {
    pub attestations: Vec<String>,
    /// An image signature is required besides the attestations (`imageSignature: Required`).
    pub signature: bool,
}

impl Verify {
    /// A signature alone.
    pub const SIGNATURE: Verify = Verify {
        attestations: Vec::new(),
        signature: true,
    };
}

impl Gate for Verify {
    fn name(&self) -> &'static str {
        "verify"
    }

    fn describe(&self) -> String {
        match (self.attestations.as_slice(), self.signature) {
            ([], _) => "verify cosign".into(),
            (names, true) => format!("verify cosign, attestations {}", names.join(", ")),
            (names, false) => format!(
                "verify cosign attestations {} (no image signature required)",
                names.join(", ")
            ),
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
