//! A Sigstore bundle over an artifact rather than an image, verified as sigstore-go's
//! `verify-bundle` does: a message signature (`cosign sign-blob`) over the artifact's bytes,
//! logged as `hashedrekord`, or a DSSE envelope whose statement names the artifact's digest.
//! The images' own layouts are [`super::layouts`]; this is what the sigstore-conformance suite
//! judges (docs/compatibility.md, "The sigstore-conformance suite"), with the same checks of
//! who signed, the log and the timestamps.

use super::super::bundle::statement::check_subject;
use super::super::bundle::{decode, Bundle, MessageSignature};
use super::super::refusal::{Check, Refused};
use super::super::tlog::Entry;
use super::made_at::Evidence;
use super::{CosignTrust, Trust, TrustedKeys, Verified, Who};
use sha2::{Digest, Sha256};
use std::time::SystemTime;

/// The message digest algorithm Sigstore's bundles name for SHA-256.
const SHA2_256: &str = "SHA2_256";

impl TrustedKeys {
    /// Who signed `bundle` over `artifact`: a trusted key, or a trusted identity (checked at
    /// `now` and the times its log and timestamps vouch for); else why not.
    pub fn verify_artifact(
        &self,
        bundle: &[u8],
        artifact: &[u8],
        now: SystemTime,
    ) -> Result<Verified, Refused> {
        let Trust::Cosign(cosign) = &self.trust else {
            return Err(
                Check::Provider.refused("a Sigstore bundle, and the policy verifies notation's")
            );
        };
        let digest = format!("sha256:{:x}", Sha256::digest(artifact));
        let parsed = Bundle::parse(bundle)?;
        let (who, signed_at) = match &parsed.message_signature {
            Some(message) => cosign.verify_message(&parsed, message, artifact, &digest, now)?,
            None => {
                let (who, kind, payload) = cosign.verify_envelope(&parsed, now)?;
                // Only now is the statement trusted enough to be read.
                check_subject(&kind, &payload, &digest)?;
                who
            }
        };
        Ok(Verified {
            who,
            until: None,
            signed_at,
        })
    }
}

impl CosignTrust {
    /// A message signature over `artifact` (whose digest is `digest`), by a trusted key or
    /// identity, logged as a `hashedrekord` of the artifact.
    fn verify_message(
        &self,
        bundle: &Bundle,
        message: &MessageSignature,
        artifact: &[u8],
        digest: &str,
        now: SystemTime,
    ) -> Result<Who, Refused> {
        let unreadable = Check::Format.because();
        // The digest is not signed, a hint; one naming another artifact is refused, as
        // sigstore-go refuses it, before anything is verified.
        if let Some(named) = &message.message_digest {
            let ours = Sha256::digest(artifact);
            let theirs = decode(&named.digest).ok();
            if named.algorithm != SHA2_256 || theirs.as_deref() != Some(&ours[..]) {
                return Err(Check::Subject.refused(format!(
                    "a message signature's digest ({} {:.100}) is not the artifact's ({digest})",
                    named.algorithm, named.digest
                )));
            }
        }
        let signature = decode(&message.signature)
            .map_err(|_| unreadable("a message signature is not base64".into()))?;
        let certificates = bundle.certificates()?;
        let signing = Evidence {
            message: artifact,
            kind: "hashedrekord",
            recorded: artifact,
            signatures: std::slice::from_ref(&signature),
            certificates: &certificates,
            log: Entry::from_bundle(&bundle.verification_material.tlog_entries),
            timestamps: bundle.timestamps()?,
        };
        self.signer(&signing, now)
    }
}
