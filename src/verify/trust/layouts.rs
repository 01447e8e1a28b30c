//! cosign's two layouts, read and verified: a Sigstore bundle's DSSE envelope (cosign v3's
//! default), and the legacy layers: simple signing (`sha256-<hex>.sig`) and attestations'
//! envelopes (`sha256-<hex>.att`). Who signed is [`CosignTrust::signer`]'s to say; what the
//! signed payload says is read only after.

use super::super::bundle::statement::check_statement;
use super::super::bundle::{Bundle, Envelope};
use super::super::refusal::{Check, Refused};
use super::super::simple::check_payload;
use super::super::tlog::Entry;
use super::super::{Signed, SignedPayload};
use super::made_at::Evidence;
use super::{CosignTrust, Who};
use crate::reference::ImageReference;
use std::time::SystemTime;

impl CosignTrust {
    /// A bundle's DSSE envelope, signed by a trusted key or a trusted identity, over a
    /// statement naming `digest`.
    pub(super) fn verify_bundle(
        &self,
        bytes: &[u8],
        digest: &str,
        now: SystemTime,
    ) -> Result<Who, Refused> {
        let bundle = Bundle::parse(bytes)?;
        let (who, payload_type, payload) = self.verify_envelope(&bundle, now)?;
        // Only now is the statement trusted enough to be read.
        check_statement(&payload_type, &payload, digest)?;
        Ok(who)
    }

    /// Who signed a bundle's DSSE envelope (a trusted key or identity), and its payload's type
    /// and bytes, not yet read.
    pub(super) fn verify_envelope(
        &self,
        bundle: &Bundle,
        now: SystemTime,
    ) -> Result<(Who, String, Vec<u8>), Refused> {
        let Some(envelope) = &bundle.dsse_envelope else {
            return Err(Check::Format.refused(match bundle.message_signature {
                Some(_) => "a bundle holds a message signature, which names no image",
                None => "a bundle holds no signature",
            }));
        };
        let decoded = envelope.decode()?;
        let certificates = bundle.certificates()?;
        let log = Entry::from_bundle(&bundle.verification_material.tlog_entries);
        let signing = Evidence {
            message: &decoded.signed,
            kind: "dsse",
            recorded: &decoded.payload,
            signatures: &decoded.signatures,
            certificates: &certificates,
            log,
            timestamps: bundle.timestamps()?,
        };
        let who = self.signer(&signing, now)?;
        Ok((who, envelope.payload_type.clone(), decoded.payload))
    }

    /// A legacy simple-signing layer, signed by a trusted key or identity, whose payload names
    /// `digest` and `image`'s repository.
    pub(super) fn verify_simple(
        &self,
        signed: &SignedPayload,
        image: &ImageReference,
        digest: &str,
        now: SystemTime,
    ) -> Result<Who, Refused> {
        let log = annotated_log(signed);
        let signing = Evidence {
            message: &signed.payload,
            kind: "hashedrekord",
            recorded: &signed.payload,
            signatures: std::slice::from_ref(&signed.signature),
            certificates: &signed.certificates,
            log,
            timestamps: Vec::new(),
        };
        let who = self.signer(&signing, now)?;
        // Only now is the payload trusted enough to be read.
        check_payload(&signed.payload, image, digest)?;
        Ok(who)
    }

    /// Who signed an attestation (a bundle's envelope, or a legacy layer's), and its payload's
    /// type and bytes, not yet read.
    pub(super) fn verify_attestation(
        &self,
        signed: &Signed,
        now: SystemTime,
    ) -> Result<(Who, String, Vec<u8>), Refused> {
        match signed {
            Signed::Bundle(bytes) => {
                let bundle = Bundle::parse(bytes)?;
                self.verify_envelope(&bundle, now)
            }
            Signed::Attestation(layer) => self.verify_attestation_layer(layer, now),
            Signed::Simple(_) | Signed::Notation { .. } => {
                Err(Check::Format.refused("a signature, which is not an attestation"))
            }
        }
    }

    /// Who signed a legacy attestation layer's DSSE envelope, and its payload's type and
    /// bytes, not yet read. Its log entry (the layer's annotation, as for a signature) must
    /// record the envelope as stored, as cosign compares it.
    fn verify_attestation_layer(
        &self,
        signed: &SignedPayload,
        now: SystemTime,
    ) -> Result<(Who, String, Vec<u8>), Refused> {
        let unreadable = Check::Format.because();
        let envelope: Envelope = serde_json::from_slice(&signed.payload)
            .map_err(|e| unreadable(format!("an attestation is not a DSSE envelope ({e})")))?;
        let decoded = envelope.decode()?;
        let log = annotated_log(signed);
        let signing = Evidence {
            message: &decoded.signed,
            kind: "attestation",
            recorded: &signed.payload,
            signatures: &decoded.signatures,
            certificates: &signed.certificates,
            log,
            timestamps: Vec::new(),
        };
        let who = self.signer(&signing, now)?;
        Ok((who, envelope.payload_type, decoded.payload))
    }
}

/// A legacy layer's log entry: its `dev.sigstore.cosign/bundle` annotation, if any.
fn annotated_log(signed: &SignedPayload) -> Result<Vec<Entry>, String> {
    match &signed.log_entry {
        Some(text) => Entry::from_annotation(text).map(|e| vec![e]),
        None => Ok(Vec::new()),
    }
}
