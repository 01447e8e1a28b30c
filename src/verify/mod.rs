//! Signature verification, pure: what a policy trusts (`spec.verify`'s Secret and fields) and
//! its judgement of the signatures an image carries, as sigstore-go and notation-go judge them
//! (docs/imagepolicy.md, "spec.verify"; docs/compatibility.md). Reading the signatures from a
//! registry is `registry::signatures`; nothing here does I/O, so the verdicts are functions of
//! (trust, signatures, image name, digest, clock) that tests call directly.
//!
//! cosign signatures come in two layouts:
//! - a Sigstore bundle attached as an OCI 1.1 referrer (cosign v3's default; [`bundle`]): a
//!   DSSE envelope over an in-toto statement naming the digest;
//! - the legacy `sha256-<hex>.sig` tag ([`simple`]): simple-signing payloads naming digest and
//!   repository; beside it, `sha256-<hex>.att` holds cosign v2's attestations, each a DSSE
//!   envelope over an in-toto statement.
//!
//! Either is signed with a key or, keyless, with a certificate ([`keyless`]); notation's
//! envelopes are [`notation`]; [`trust`] judges them against what the policy trusts, and
//! [`refusal`] says why a signature does not count.

pub mod anchor;
pub mod bundle;
#[doc(hidden)]
pub mod fuzz;
pub mod key;
pub mod keyless;
pub mod notation;
pub mod path;
pub(crate) mod prehashed;
pub mod refusal;
pub mod sct;
pub mod simple;
pub mod timestamp;
pub mod tlog;
pub mod trust;
pub mod valid_for;

pub use refusal::{Check, Refusal, Refused};
pub use trust::{TrustedKeys, Verified, TRUSTED_ROOT};

/// Signatures read per image: a real image has one or two.
pub const MAX_SIGNATURES: usize = 16;
/// A simple-signing payload is a few hundred bytes.
pub const MAX_PAYLOAD_BYTES: usize = 64 << 10;
/// Trusted keys per Secret, and the size of each.
pub const MAX_KEYS: usize = 16;
pub const MAX_KEY_BYTES: usize = 16 << 10;

/// One legacy signature as stored: the payload's bytes, the signature over them, and for a
/// keyless signature its certificates (DER, leaf first) and its log entry (the
/// `dev.sigstore.cosign/bundle` annotation), if any.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignedPayload {
    pub payload: Vec<u8>,
    pub signature: Vec<u8>,
    pub certificates: Vec<Vec<u8>>,
    pub log_entry: Option<String>,
}

/// A signature as read from the registry, in either layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Signed {
    /// A simple-signing layer of the legacy `.sig` tag.
    Simple(SignedPayload),
    /// An attestation layer of the legacy `.att` tag: `payload` is its DSSE envelope's JSON as
    /// stored (its signature is inside; `signature` is empty, as cosign's annotation is).
    Attestation(SignedPayload),
    /// A Sigstore bundle (its JSON) attached as a referrer.
    Bundle(Vec<u8>),
    /// A notation envelope (its media type and bytes) attached as a referrer, and the signed
    /// manifest as the registry serves it (`None`: the digest alone is compared).
    Notation {
        media_type: String,
        bytes: Vec<u8>,
        subject: Option<Subject>,
    },
}

/// The signed manifest's media type and size as the registry serves it: a notation payload's
/// `targetArtifact` must name the same, as notation-go compares the whole descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    pub media_type: String,
    pub size: u64,
}

/// A trust document from the Secret's entry `file` (a trusted root, a trust policy): at most
/// `max` bytes, checked before it is parsed, and JSON of the `kind` named when it is not.
fn trust_document<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    file: &str,
    max: usize,
    kind: &str,
) -> Result<T, String> {
    if bytes.len() > max {
        return Err(format!("{file} is over {max} bytes"));
    }
    serde_json::from_slice(bytes).map_err(|e| format!("{file} is not {kind} ({e})"))
}

/// The tag cosign stores `digest`'s legacy signatures under.
pub fn signature_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1) + ".sig"
}

#[cfg(test)]
mod tests;
