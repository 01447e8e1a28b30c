//! What a policy trusts (`spec.verify`'s Secret and fields) and the judgement of an image's
//! signatures against it: a key-signed signature verifies with one of the `*.pub` keys; a
//! keyless one carries a certificate that chains to the trusted root (the Secret's
//! `trusted_root.json`, or Sigstore's public-good root the controller puts in its place) and
//! names one of the `matchOIDCIdentity` identities, and is in the transparency log unless the
//! policy accepts that it is not.

mod artifact;
mod attested;
mod layouts;
mod made_at;

use super::key::PublicKey;
use super::keyless::{Identity, Keyless, NoSigner, TrustedRoot, MAX_IDENTITIES};
use super::notation::NotationTrust;
use super::path::Budget;
use super::refusal::{Check, Refusal, Refused};
use super::{signature_tag, Signed, MAX_KEYS, MAX_KEY_BYTES};
use crate::reference::ImageReference;
use made_at::{made_at, Evidence};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// The Secret entry that holds a Sigstore trusted root.
pub const TRUSTED_ROOT: &str = "trusted_root.json";

/// A signature that counts: who made it, until when the verdict holds (`None`: for good; a
/// notation signature at `strict` holds until its expiry or its certificate's), and the
/// earliest time a trusted log or timestamp authority vouches it was made at (Unix seconds; a
/// keyless signature's only: a key's signature is not looked up in a log).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    pub who: String,
    pub until: Option<SystemTime>,
    pub signed_at: Option<i64>,
}

/// Who signed (a key's entry name, or a keyless identity), and when the log or a timestamp
/// authority says (the earliest of their times).
type Who = (String, Option<i64>);

/// What a policy trusts, and its fingerprint (what a cached verdict is keyed by: other keys,
/// roots, identities or log rule, another verdict).
pub struct TrustedKeys {
    trust: Trust,
    pub fingerprint: String,
}

/// One provider's trust: only its signatures are read.
enum Trust {
    Cosign(CosignTrust),
    /// The trust policy and store of `provider: notation`.
    Notation(NotationTrust),
}

/// `provider: cosign`: keys, and for keyless signatures a root and identities.
struct CosignTrust {
    keys: Vec<(String, PublicKey)>,
    keyless: Option<Keyless>,
    /// A keyless signature must have a transparency-log entry.
    require_tlog: bool,
}

impl TrustedKeys {
    /// The `*.pub` entries of a Secret's data (PEM `PUBLIC KEY`, ECDSA P-256, as
    /// `cosign generate-key-pair` writes `cosign.pub`), and, for keyless signatures, its
    /// `trusted_root.json` with the `(issuer, subject)` expressions of `identities`.
    pub fn from_secret(
        data: &BTreeMap<String, Vec<u8>>,
        identities: &[(String, String)],
        require_tlog: bool,
    ) -> Result<TrustedKeys, String> {
        Self::cosign(data, identities, require_tlog)
    }

    /// Notation's trust: the Secret's `trustpolicy.json` and CA certificates.
    pub fn notation(data: &BTreeMap<String, Vec<u8>>) -> Result<TrustedKeys, String> {
        let trust = NotationTrust::from_secret(data)?;
        let mut hash = Sha256::new();
        for (name, bytes) in data {
            hash.update(name.as_bytes());
            hash.update([0]);
            hash.update(bytes);
            hash.update([0]);
        }
        Ok(TrustedKeys {
            trust: Trust::Notation(trust),
            fingerprint: format!("notation-{:x}", hash.finalize())[..32].to_string(),
        })
    }

    /// Whether only notation signatures count.
    pub fn is_notation(&self) -> bool {
        matches!(self.trust, Trust::Notation(_))
    }

    fn cosign(
        data: &BTreeMap<String, Vec<u8>>,
        identities: &[(String, String)],
        require_tlog: bool,
    ) -> Result<TrustedKeys, String> {
        let mut keys = Vec::new();
        let mut hash = Sha256::new();
        let mut fingerprint = |part: &[u8]| {
            hash.update(part);
            hash.update([0]);
        };
        for (name, bytes) in data.iter().filter(|(n, _)| n.ends_with(".pub")) {
            if keys.len() == MAX_KEYS {
                return Err(format!("more than {MAX_KEYS} *.pub entries"));
            }
            if bytes.len() > MAX_KEY_BYTES {
                return Err(format!("entry '{name}' is over {MAX_KEY_BYTES} bytes"));
            }
            let text = std::str::from_utf8(bytes)
                .map_err(|_| format!("entry '{name}' is not PEM text"))?;
            let key = PublicKey::from_pem(text).map_err(|e| {
                format!(
                    "entry '{name}' is not an ECDSA P-256 or P-384 public key in PEM ({e}); \
                     `cosign generate-key-pair` writes one (cosign.pub)"
                )
            })?;
            fingerprint(name.as_bytes());
            fingerprint(bytes);
            keys.push((name.clone(), key));
        }
        let keyless = if identities.is_empty() {
            None
        } else {
            if identities.len() > MAX_IDENTITIES {
                return Err(format!(
                    "more than {MAX_IDENTITIES} matchOIDCIdentity entries"
                ));
            }
            let root = data.get(TRUSTED_ROOT).ok_or_else(|| {
                format!(
                    "it has no {TRUSTED_ROOT} entry, which matchOIDCIdentity needs (the Sigstore \
                     trusted root whose certificate authorities issue the signing certificates)"
                )
            })?;
            fingerprint(root);
            let identities = identities
                .iter()
                .map(|(issuer, subject)| {
                    fingerprint(issuer.as_bytes());
                    fingerprint(subject.as_bytes());
                    Identity::new(issuer, subject)
                })
                .collect::<Result<Vec<_>, _>>()?;
            let in_root = |e: String| format!("entry '{TRUSTED_ROOT}': {e}");
            let root = TrustedRoot::parse_kept(root).map_err(in_root)?;
            Some(Keyless { root, identities })
        };
        if keys.is_empty() && keyless.is_none() {
            return Err("it has no *.pub entry (a cosign public key, e.g. cosign.pub)".into());
        }
        fingerprint(if require_tlog { b"tlog" } else { b"no tlog" });
        let fingerprint = format!("{:x}", hash.finalize())[..32].to_string();
        Ok(TrustedKeys {
            trust: Trust::Cosign(CosignTrust {
                keys,
                keyless,
                require_tlog,
            }),
            fingerprint,
        })
    }

    /// Who (a key's entry name, or a keyless identity) signed one of `signatures` for `digest`
    /// in `image`'s repository, or why none did; certificates are checked at `now`.
    pub fn verify(
        &self,
        signatures: &[Signed],
        image: &ImageReference,
        digest: &str,
        now: SystemTime,
    ) -> Result<String, Refusal> {
        self.verify_until(signatures, image, digest, now)
            .map(|verified| verified.who)
    }

    /// [`TrustedKeys::verify`], with until when the verdict holds and when it was signed.
    pub fn verify_until(
        &self,
        signatures: &[Signed],
        image: &ImageReference,
        digest: &str,
        now: SystemTime,
    ) -> Result<Verified, Refusal> {
        // At notation's `skip`, nothing is verified: an unsigned image passes too.
        if let Trust::Notation(notation) = &self.trust {
            if let Some(skipped) = notation.skipped(&image.canonical()) {
                let (who, until, signed_at) = (skipped, None, None);
                return Ok(Verified {
                    who,
                    until,
                    signed_at,
                });
            }
        }
        // Attestations are not signatures: those that say so are not verified as one (what a
        // bundle claims can only spare it the verification it would fail).
        let claimed = |s: &&Signed| match s {
            Signed::Bundle(bytes) => attested::claimed_predicate(bytes)
                .is_some_and(|p| p != super::bundle::statement::SIGNING_PREDICATE),
            Signed::Attestation(_) => true,
            _ => false,
        };
        let attestations = signatures.iter().filter(claimed).count();
        let signatures: Vec<&Signed> = signatures.iter().filter(|s| !claimed(s)).collect();
        if signatures.is_empty() && attestations > 0 {
            return Err(Refusal::Unsigned(format!(
                "no cosign signature among its referrers, {attestations} attestation{}; no tag {}",
                if attestations == 1 { "" } else { "s" },
                signature_tag(digest)
            )));
        }
        if signatures.is_empty() {
            return Err(Refusal::Unsigned(match self.trust {
                Trust::Notation(_) => "no notation signature among its referrers".into(),
                Trust::Cosign(_) => format!(
                    "no cosign bundle among its referrers, no tag {}",
                    signature_tag(digest)
                ),
            }));
        }
        let mut why = Vec::new();
        for signed in &signatures {
            match self.verify_one(signed, image, digest, now) {
                Ok(key) => return Ok(key),
                Err(refused) if !why.contains(&refused) => why.push(refused),
                Err(_) => {}
            }
        }
        Err(Refusal::NoneValid {
            count: signatures.len(),
            refused: why,
        })
    }

    /// One signature, by its provider's rules.
    fn verify_one(
        &self,
        signed: &Signed,
        image: &ImageReference,
        digest: &str,
        now: SystemTime,
    ) -> Result<Verified, Refused> {
        let cosign = |(who, signed_at): Who| Verified {
            who,
            until: None,
            signed_at,
        };
        match (&self.trust, signed) {
            (Trust::Cosign(trust), Signed::Simple(signed)) => {
                trust.verify_simple(signed, image, digest, now).map(cosign)
            }
            (Trust::Cosign(trust), Signed::Bundle(bytes)) => {
                trust.verify_bundle(bytes, digest, now).map(cosign)
            }
            (
                Trust::Notation(notation),
                Signed::Notation {
                    media_type,
                    bytes,
                    subject,
                },
            ) => {
                let target = (digest, subject.as_ref());
                let verified = notation.verify(&image.canonical(), media_type, bytes, target, now);
                verified.map(|(who, until)| Verified {
                    who,
                    until,
                    signed_at: None,
                })
            }
            (Trust::Cosign(_), Signed::Attestation(_)) => {
                Err(Check::Format
                    .refused("an attestation (the .att tag), which is not a signature"))
            }
            (Trust::Cosign(_), Signed::Notation { .. }) => {
                Err(Check::Provider
                    .refused("a notation signature, and the policy verifies cosign's"))
            }
            (Trust::Notation(_), _) => {
                Err(Check::Provider
                    .refused("a cosign signature, and the policy verifies notation's"))
            }
        }
    }
}

impl CosignTrust {
    /// Who made `signing`: a trusted key, or, with certificates, a trusted identity whose
    /// certificate's key verifies it, checked at every time the log or a timestamp authority
    /// says it was made (else now).
    fn signer(&self, signing: &Evidence<'_>, now: SystemTime) -> Result<Who, Refused> {
        let Some(leaf) = signing.certificates.first() else {
            return self.key_signer(signing).map(|who| (who, None));
        };
        let Some(keyless) = &self.keyless else {
            return Err(Check::Authenticity.refused(
                "a keyless signature (a certificate), and the policy trusts keys only \
                 (spec.verify.matchOIDCIdentity names none)",
            ));
        };
        // One budget for every path this signature's certificates make us build.
        let budget = Budget::default();
        let made = made_at(keyless, self.require_tlog, signing, leaf, &budget)?;
        // Every established time, the timestamps' said so when the certificate fails there.
        let at = |t: &i64| SystemTime::UNIX_EPOCH + Duration::from_secs((*t).max(0) as u64);
        let signed_at = made.logged.iter().chain(&made.stamped).min().copied();
        let mut times: Vec<(SystemTime, bool)> =
            made.logged.iter().map(|t| (at(t), false)).collect();
        times.extend(made.stamped.iter().map(|t| (at(t), true)));
        if times.is_empty() {
            times.push((now, false));
        }
        let mut signer = None;
        for (at, stamped) in times {
            let vouched = keyless
                .signer_within(signing.certificates, at, &budget)
                .map_err(|e| no_signer(e, stamped.then_some(at)));
            signer = Some(vouched?);
        }
        let (key, who) = signer.expect("one time at least");
        let digest = Sha256::digest(signing.message);
        if !signing
            .signatures
            .iter()
            .any(|s| key.verifies(signing.message, &digest, s))
        {
            return Err(
                Check::Integrity.refused("signature does not verify with its certificate's key")
            );
        }
        Ok((who, signed_at))
    }

    /// Which trusted key (`*.pub`) made `signing`.
    fn key_signer(&self, signing: &Evidence<'_>) -> Result<String, Refused> {
        // The signed bytes are hashed once, not once per key: a signed payload may be
        // 256 KiB, and every key (16) is tried.
        let digest = Sha256::digest(signing.message);
        self.keys
            .iter()
            .find(|(_, key)| {
                signing
                    .signatures
                    .iter()
                    .any(|s| key.verifies(signing.message, &digest, s))
            })
            .map(|(name, _)| name.clone())
            .ok_or_else(|| {
                Check::Authenticity.refused("signature does not verify with any trusted key")
            })
    }
}

/// Why no certificate vouched for a signer at a time, refused at the check that failed; at a
/// timestamp's time (`stamped`), saying so of the certificate: it must be valid when the
/// authority says the signature was made.
fn no_signer(e: NoSigner, stamped: Option<SystemTime>) -> Refused {
    let check = match e {
        NoSigner::Time(_) => Check::Time,
        NoSigner::Certificate(_) | NoSigner::Identity(_) => Check::Authenticity,
    };
    match (stamped, &e) {
        (Some(at), NoSigner::Certificate(_) | NoSigner::Time(_)) => check.refused(format!(
            "at its timestamp's time {}: {e}",
            httpdate::fmt_http_date(at)
        )),
        _ => check.refused(e.to_string()),
    }
}
