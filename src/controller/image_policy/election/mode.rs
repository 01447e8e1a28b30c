//! Whether any gate is on, decided once per reconcile from the gate list: the one value every
//! step of the election asks instead of looking at the gates again.

use crate::policy::Gates;

/// How this policy elects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// No gate: Flux's election. The best tag alone, its digest asked for when and as Flux asks
    /// (a tag gone since the scan fails the election), a failure in Flux's words.
    Flux,
    /// Gates: the walk from the best down. Candidates' digests are trusted for a while, a tag
    /// gone since the scan is skipped, the images and first sightings the gates judge by are
    /// read, and a failure names the candidate whose gates could not be checked.
    Gated,
}

impl Mode {
    /// The mode of a gate list: an empty one is Flux's.
    pub fn of(gates: &Gates) -> Mode {
        match gates.any() {
            true => Mode::Gated,
            false => Mode::Flux,
        }
    }

    /// Whether candidates after the best may be walked (so the tags are kept for ranking).
    pub fn walks_on(self) -> bool {
        self == Mode::Gated
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{gate, Verify};

    #[test]
    fn only_an_empty_gate_list_elects_as_flux_does() {
        assert_eq!(Mode::of(&Gates::of([])), Mode::Flux);
        assert!(!Mode::Flux.walks_on());
        let gated = Mode::of(&Gates::of([gate(Verify::SIGNATURE)]));
        assert_eq!(gated, Mode::Gated);
        assert!(gated.walks_on());
    }
}
