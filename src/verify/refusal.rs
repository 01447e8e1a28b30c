//! Why a signature does not count, typed by the check it failed: what a caller decides by
//! (and tests assert on) is the [`Check`]; what a user reads is the reason, worded as before
//! and shown in a held-back tag's `reason`.

use std::fmt;

/// The check a signature failed, in the order sigstore-go and notation-go run theirs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Check {
    /// Not something the provider writes: a bundle, envelope, certificate or payload that does
    /// not read, or holds no signature.
    Format,
    /// Another provider's signature (a notation envelope where cosign's are verified, or the
    /// reverse).
    Provider,
    /// The signature (or its certificate chain) does not verify with the key that claims it.
    Integrity,
    /// Not made by what the policy trusts: no trusted key, a certificate outside the trusted
    /// root or store, another identity.
    Authenticity,
    /// Not in the transparency log as the policy requires, or its entry does not verify.
    Log,
    /// Outside its validity: expired, or signed outside its certificate's life.
    Time,
    /// Signed for another image: another digest, repository or target descriptor.
    Subject,
    /// The trust policy cannot judge it: no statement applies, or it asks for a timestamp
    /// countersignature, which is not read.
    Policy,
}

impl Check {
    /// A refusal at this check with `reason`.
    pub fn refused(self, reason: impl Into<String>) -> Refused {
        Refused {
            check: self,
            reason: reason.into(),
        }
    }

    /// [`Check::refused`] for `map_err`.
    pub fn because(self) -> impl Fn(String) -> Refused {
        move |reason| self.refused(reason)
    }
}

/// One signature refused: the check, and the reason a user reads.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Refused {
    pub check: Check,
    pub reason: String,
}

/// Why an image's signatures do not make it signed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No signature of the policy's provider was found; says where it was looked for.
    #[error("no signature ({0})")]
    Unsigned(String),
    /// `count` signatures were read and none counts: each distinct refusal once, in order.
    #[error("{}", NoneValid { count: *count, refused })]
    NoneValid { count: usize, refused: Vec<Refused> },
    /// The verification itself did not finish (it panicked): nothing is known.
    #[error("verifying the signatures did not finish: {0}")]
    Unfinished(String),
}

impl Refusal {
    /// The checks the signatures failed (none when there was no signature).
    pub fn checks(&self) -> Vec<Check> {
        match self {
            Refusal::Unsigned(_) | Refusal::Unfinished(_) => Vec::new(),
            Refusal::NoneValid { refused, .. } => refused.iter().map(|r| r.check).collect(),
        }
    }

    /// This refusal and `more`'s, of other signatures of the same image, as one: as if all the
    /// signatures had been judged together, without judging any twice.
    pub fn and(self, more: Refusal) -> Refusal {
        match (self, more) {
            (unfinished @ Refusal::Unfinished(_), _) | (_, unfinished @ Refusal::Unfinished(_)) => {
                unfinished
            }
            (Refusal::Unsigned(_), more) => more,
            (refusal, Refusal::Unsigned(_)) => refusal,
            (
                Refusal::NoneValid { count, mut refused },
                Refusal::NoneValid {
                    count: more,
                    refused: others,
                },
            ) => {
                for other in others {
                    if !refused.contains(&other) {
                        refused.push(other);
                    }
                }
                Refusal::NoneValid {
                    count: count + more,
                    refused,
                }
            }
        }
    }
}

/// "2 signatures, none valid: a; b".
struct NoneValid<'a> {
    count: usize,
    refused: &'a [Refused],
}

impl fmt::Display for NoneValid<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = if self.count == 1 { "" } else { "s" };
        write!(f, "{} signature{plural}, none valid: ", self.count)?;
        for (i, refused) in self.refused.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            f.write_str(&refused.reason)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_reads_as_before_and_keeps_its_checks() {
        let refusal = Refusal::NoneValid {
            count: 2,
            refused: vec![
                Check::Subject.refused("a signature is for sha256:1, not this digest"),
                Check::Authenticity.refused("signature does not verify with any trusted key"),
            ],
        };
        assert_eq!(
            refusal.to_string(),
            "2 signatures, none valid: a signature is for sha256:1, not this digest; \
             signature does not verify with any trusted key"
        );
        assert_eq!(refusal.checks(), [Check::Subject, Check::Authenticity]);
        let one = Refusal::NoneValid {
            count: 1,
            refused: vec![Check::Format.because()(
                "a bundle holds no signature".into(),
            )],
        };
        assert_eq!(
            one.to_string(),
            "1 signature, none valid: a bundle holds no signature"
        );
        let unsigned = Refusal::Unsigned("no notation signature among its referrers".into());
        assert_eq!(
            unsigned.to_string(),
            "no signature (no notation signature among its referrers)"
        );
        assert!(unsigned.checks().is_empty());
    }

    /// Two sets of signatures refused read as one set: counts added, reasons said once; no
    /// signature is no reason; a verification that did not finish is said.
    #[test]
    fn refusals_of_two_sets_read_as_one() {
        let none_valid = |count, reasons: &[&str]| Refusal::NoneValid {
            count,
            refused: reasons
                .iter()
                .map(|r| Check::Authenticity.refused(*r))
                .collect(),
        };
        let unsigned = || Refusal::Unsigned("no cosign bundle".into());
        assert_eq!(
            none_valid(1, &["a"]).and(none_valid(2, &["a", "b"])),
            none_valid(3, &["a", "b"])
        );
        assert_eq!(unsigned().and(none_valid(2, &["b"])), none_valid(2, &["b"]));
        assert_eq!(none_valid(1, &["a"]).and(unsigned()), none_valid(1, &["a"]));
        assert_eq!(unsigned().and(unsigned()), unsigned());
        let unfinished = Refusal::Unfinished("panicked".into());
        assert_eq!(none_valid(1, &["a"]).and(unfinished.clone()), unfinished);
        assert_eq!(unfinished.clone().and(unsigned()), unfinished);
        assert_eq!(
            unfinished.to_string(),
            "verifying the signatures did not finish: panicked"
        );
        assert!(unfinished.checks().is_empty());
    }
}
