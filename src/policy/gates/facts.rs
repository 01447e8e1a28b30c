//! The facts gates judge by, as data: [`Fact`] names one, [`Need`] is a set of them, and
//! [`Facts`] holds what is known of one candidate with one accessor per fact, so a gate reads a
//! fact with `?` and a fact nobody looked up can only come back as [`Missing`], never as a pass.

use super::Platform;
use crate::policy::Bump;
use std::fmt;

/// A fact a gate may need beyond the digest and the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fact {
    /// The image's creation time and platforms (its manifest and config): a registry request.
    Image,
    /// The signature check of the digest: registry requests and verification.
    Signature,
    /// When the tag was first seen at this digest: the controller's own record, no request.
    FirstSeen,
    /// How its version rises from the tag elected now: the policy's own reading of two tags,
    /// given with the candidate, no request.
    Bump,
}

impl Fact {
    /// Every fact, in the order the walk prefers to look them up. Its length bounds the rounds
    /// of one candidate's judging: each fact is looked up at most once.
    pub const ALL: [Fact; 4] = [Fact::Image, Fact::Signature, Fact::FirstSeen, Fact::Bump];

    /// Whether looking it up asks the registry (and so charges the reconcile's budget).
    pub fn asks_registry(self) -> bool {
        match self {
            Fact::Image | Fact::Signature => true,
            Fact::FirstSeen | Fact::Bump => false,
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Fact::Image => "the image's manifest and config",
            Fact::Signature => "the signature check",
            Fact::FirstSeen => "the tag's first sighting at this digest",
            Fact::Bump => "how its version rises from the tag elected now",
        })
    }
}

/// A set of [`Fact`]s: what a gate (or a gate list) judges by.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Need(u8);

impl Need {
    /// No fact.
    pub const NONE: Need = Need(0);

    /// The set of `facts`.
    pub fn of(facts: impl IntoIterator<Item = Fact>) -> Need {
        facts.into_iter().fold(Need::NONE, Need::with)
    }

    /// This set and `fact`.
    pub fn with(self, fact: Fact) -> Need {
        Need(self.0 | fact.bit())
    }

    /// Both sets.
    pub fn union(self, other: Need) -> Need {
        Need(self.0 | other.0)
    }

    pub fn contains(self, fact: Fact) -> bool {
        self.0 & fact.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The facts of the set, in [`Fact::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Fact> {
        Fact::ALL.into_iter().filter(move |f| self.contains(*f))
    }
}

impl fmt::Debug for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// A fact a gate asked for that is not known: the walk looks it up and asks again, or, when it
/// was looked up already, holds the candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Missing(pub Fact);

/// An image as its manifest and config describe it.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImageView<'a> {
    /// The image's own creation time (a single manifest's config, or an index's annotation).
    pub created: Option<i64>,
    /// The platforms it provides, with each platform image's creation time.
    pub platforms: &'a [(Platform, Option<i64>)],
}

/// What a signature check found: `Ok(key)`, a valid signature by that key; `Err(reason)`, none.
pub type SignatureView<'a> = Result<&'a str, &'a str>;

/// What is known of one candidate when a gate judges it. Each fact is read through its
/// accessor, which answers [`Missing`] for a fact not known: there is no default to fall back
/// on.
#[derive(Clone, Debug, Default)]
pub struct Facts<'a> {
    now: i64,
    image: Option<ImageView<'a>>,
    signature: Option<SignatureView<'a>>,
    /// When a valid signature was made, as a log or timestamp authority vouches; known with
    /// the signature.
    signed_at: Option<i64>,
    first_seen: Option<i64>,
    bump: Option<Bump>,
}

impl<'a> Facts<'a> {
    /// Nothing known yet, at `now` (Unix seconds).
    pub fn at(now: i64) -> Facts<'a> {
        Facts {
            now,
            ..Facts::default()
        }
    }

    pub fn with_image(self, image: ImageView<'a>) -> Facts<'a> {
        let image = Some(image);
        Facts { image, ..self }
    }

    pub fn with_signature(self, signature: SignatureView<'a>) -> Facts<'a> {
        let signature = Some(signature);
        Facts { signature, ..self }
    }

    /// When the valid signature was made (Unix seconds), as its log or timestamp authority
    /// says: part of [`Fact::Signature`].
    pub fn with_signed_at(self, at: Option<i64>) -> Facts<'a> {
        Facts {
            signed_at: at,
            ..self
        }
    }

    /// When the tag was first seen at its digest (Unix seconds; 0: before the controller).
    pub fn with_first_seen(self, at: i64) -> Facts<'a> {
        let first_seen = Some(at);
        Facts { first_seen, ..self }
    }

    /// How the candidate's version rises from the tag elected now.
    pub fn with_bump(self, bump: Bump) -> Facts<'a> {
        let bump = Some(bump);
        Facts { bump, ..self }
    }

    /// Unix seconds.
    pub fn now(&self) -> i64 {
        self.now
    }

    /// [`Fact::Image`].
    pub fn image(&self) -> Result<ImageView<'a>, Missing> {
        self.image.ok_or(Missing(Fact::Image))
    }

    /// [`Fact::Signature`].
    pub fn signature(&self) -> Result<SignatureView<'a>, Missing> {
        self.signature.ok_or(Missing(Fact::Signature))
    }

    /// When a log or timestamp authority says the valid signature was made: `None` when no
    /// signature is valid or none carries such a time ([`Fact::Signature`]).
    pub fn signed_at(&self) -> Result<Option<i64>, Missing> {
        let signature = self.signature()?;
        Ok(self.signed_at.filter(|_| signature.is_ok()))
    }

    /// [`Fact::FirstSeen`]: a time the publisher does not write.
    pub fn first_seen(&self) -> Result<i64, Missing> {
        self.first_seen.ok_or(Missing(Fact::FirstSeen))
    }

    /// [`Fact::Bump`].
    pub fn bump(&self) -> Result<Bump, Missing> {
        self.bump.ok_or(Missing(Fact::Bump))
    }

    /// These facts with only those of `need` kept: what one gate is shown.
    pub fn only(&self, need: Need) -> Facts<'a> {
        Facts {
            now: self.now,
            image: self.image.filter(|_| need.contains(Fact::Image)),
            signature: self.signature.filter(|_| need.contains(Fact::Signature)),
            signed_at: self.signed_at.filter(|_| need.contains(Fact::Signature)),
            first_seen: self.first_seen.filter(|_| need.contains(Fact::FirstSeen)),
            bump: self.bump.filter(|_| need.contains(Fact::Bump)),
        }
    }

    /// The facts known, as a set.
    pub fn known(&self) -> Need {
        let mut known = Need::NONE;
        for (fact, here) in [
            (Fact::Image, self.image.is_some()),
            (Fact::Signature, self.signature.is_some()),
            (Fact::FirstSeen, self.first_seen.is_some()),
            (Fact::Bump, self.bump.is_some()),
        ] {
            if here {
                known = known.with(fact);
            }
        }
        known
    }
}
