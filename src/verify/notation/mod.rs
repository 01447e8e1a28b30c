//! Notary Project signatures (`spec.verify.provider: notation`; docs/imagepolicy.md,
//! "Notation"), as the notation CLI attaches them through the referrers API: a JWS (notation's
//! default) or COSE envelope ([`envelope`]) whose payload names the target artifact's digest,
//! signed by the leaf of its certificate chain. The Secret holds the trust policy
//! (`trustpolicy.json`, Notary Project's format) and the trust store's CA certificates
//! (`*.crt`, `*.pem`), as Flux's OCIRepository takes them.

mod chain;
mod dn;
mod envelope;
mod policy;

use super::refusal::{Check, Refused};
use policy::{parse_policy, Level, Statement, VerifyTimestamp};

use envelope::Envelope;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::SystemTime;
use x509_cert::der::Decode;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Payload {
    target_artifact: Target,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Target {
    digest: String,
    #[serde(default)]
    media_type: String,
    #[serde(default)]
    size: u64,
}

pub use envelope::MAX_ENVELOPE_BYTES;
pub use policy::{MAX_ENTRY_BYTES, MAX_POLICIES, TRUST_POLICY};
/// CA certificates in the trust store.
pub const MAX_CERTIFICATES: usize = 32;

/// The trust policy and the trust store's certificates.
#[derive(Debug, Clone)]
pub struct NotationTrust {
    statements: Vec<Statement>,
    /// The trust store's certificates (DER): a chain is authentic when it holds one.
    store: Vec<Vec<u8>>,
}

impl NotationTrust {
    /// From a Secret's `trustpolicy.json` and its `*.crt` and `*.pem` entries (PEM).
    pub fn from_secret(data: &BTreeMap<String, Vec<u8>>) -> Result<NotationTrust, String> {
        let policy = data.get(TRUST_POLICY).ok_or_else(|| {
            format!("it has no {TRUST_POLICY} entry (the Notary Project trust policy)")
        })?;
        let statements = parse_policy(policy)?;
        let mut store = Vec::new();
        for (name, bytes) in data
            .iter()
            .filter(|(n, _)| n.ends_with(".crt") || n.ends_with(".pem"))
        {
            if bytes.len() > MAX_ENTRY_BYTES {
                return Err(format!("entry '{name}' is over {MAX_ENTRY_BYTES} bytes"));
            }
            let certs = x509_cert::Certificate::load_pem_chain(bytes)
                .map_err(|e| format!("entry '{name}' is not PEM certificates ({e})"))?;
            for cert in certs {
                let der = x509_cert::der::Encode::to_der(&cert)
                    .map_err(|e| format!("entry '{name}': {e}"))?;
                store.push(der);
            }
            if store.len() > MAX_CERTIFICATES {
                return Err(format!("over {MAX_CERTIFICATES} CA certificates"));
            }
        }
        if store.is_empty() {
            return Err(
                "it has no CA certificate (*.crt or *.pem entries) for the trust store".into(),
            );
        }
        Ok(NotationTrust { statements, store })
    }

    /// Who signed `envelope` (`media_type`) for `digest` of `repository`
    /// (`registry/name`), served as `subject` when known, and until when that holds (while its enforced expiry and its chain's
    /// validity last; else for good), or why it does not count. The checks are notation-go's,
    /// in its order: integrity (always), then authenticity with the trusted identities, expiry
    /// and the authentic timestamp, each failing the signature only where the statement's
    /// level (or override) enforces it.
    pub fn verify(
        &self,
        repository: &str,
        media_type: &str,
        envelope: &[u8],
        (digest, subject): (&str, Option<&super::Subject>),
        now: SystemTime,
    ) -> Result<(String, Option<SystemTime>), Refused> {
        let statement = self.statement(repository)?;
        if let Some(skipped) = skip(statement) {
            return Ok((skipped, None));
        }
        let unreadable = Check::Format.because();
        let envelope = Envelope::parse(media_type, envelope).map_err(&unreadable)?;
        let chain = integrity(&envelope)?;
        target_of(&envelope, digest, subject)?;
        let enforced = statement.enforced;
        let subject = subject_of(&envelope.chain[0]).map_err(&unreadable)?;
        if enforced.authenticity {
            self.authenticity(statement, &chain, &subject)?;
        }
        let until = times(statement, &envelope, &chain, now)?;
        if !enforced.authenticity {
            let level = level_name(statement.level);
            return Ok((
                format!("trust policy '{}' ({level})", statement.name),
                until,
            ));
        }
        let who: Vec<String> = subject.iter().map(|(k, v)| format!("{k}={v}")).collect();
        Ok((who.join(", "), until))
    }

    /// Authenticity: the chain ends in the trust store, and the leaf is a trusted identity.
    fn authenticity(
        &self,
        statement: &Statement,
        chain: &[chain::Cert],
        subject: &dn::Dn,
    ) -> Result<(), Refused> {
        if !chain::authentic(chain, &self.store) {
            return Err(Check::Authenticity
                .refused("the signing certificate does not chain to the trust store"));
        }
        let Some(identities) = &statement.identities else {
            return Ok(());
        };
        if identities.iter().any(|want| dn::is_subset(want, subject)) {
            return Ok(());
        }
        let got: Vec<String> = subject.iter().map(|(k, v)| format!("{k}={v}")).collect();
        Err(Check::Authenticity.refused(format!(
            "certificate identity mismatch: got x509.subject {}; want one of trust policy '{}''s trustedIdentities",
            got.join(", "),
            statement.name
        )))
    }

    /// The statement that applies to `repository`: the one whose scopes name it, else `*`'s.
    fn statement(&self, repository: &str) -> Result<&Statement, Refused> {
        self.statements
            .iter()
            .find(|s| s.scopes.iter().any(|r| r == repository))
            .or_else(|| {
                self.statements
                    .iter()
                    .find(|s| s.scopes.iter().any(|r| r == "*"))
            })
            .ok_or_else(|| {
                let reason =
                    format!("no trust policy statement's registryScopes include {repository}");
                Check::Policy.refused(reason)
            })
    }

    /// Who "signed" an image of `repository` whose statement is `skip`: notation verifies
    /// nothing there, so no signature is needed (docs/imagepolicy.md).
    pub fn skipped(&self, repository: &str) -> Option<String> {
        self.statement(repository).ok().and_then(skip)
    }
}

/// What a `skip` statement says in place of a signer.
/// Integrity: the times, the chain, and the leaf's key signed the payload. The chain, read.
fn integrity(envelope: &Envelope) -> Result<Vec<chain::Cert>, Refused> {
    envelope.check_times()?;
    let chain = chain::read(&envelope.chain)?;
    let broken = Check::Integrity.because();
    chain::check(&chain, envelope.alg()).map_err(&broken)?;
    envelope
        .check_signature(&envelope.chain[0])
        .map_err(&broken)?;
    Ok(chain)
}

/// The payload names this digest, and, when the registry's descriptor is known, its media
/// type and size (notation-go compares the whole descriptor).
fn target_of(
    envelope: &Envelope,
    digest: &str,
    served: Option<&super::Subject>,
) -> Result<(), Refused> {
    let payload: Payload = serde_json::from_slice(&envelope.payload).map_err(|e| {
        Check::Format.refused(format!(
            "a notation payload is not a target descriptor ({e})"
        ))
    })?;
    let target = &payload.target_artifact;
    if target.digest != digest {
        return Err(Check::Subject.refused(format!(
            "a signature is for {}, not this digest",
            target.digest
        )));
    }
    match served {
        Some(served)
            if (target.media_type.as_str(), target.size)
                != (served.media_type.as_str(), served.size) =>
        {
            Err(Check::Subject.refused(format!(
                "a signature is for {digest} as {}, {} bytes; the registry serves {}, {} bytes",
                target.media_type, target.size, served.media_type, served.size
            )))
        }
        _ => Ok(()),
    }
}

/// The times the level enforces: the signature's expiry, and the chain's validity now (a tsa
/// store asks a countersignature, not read here). Until when the verdict holds.
fn times(
    statement: &Statement,
    envelope: &Envelope,
    chain: &[chain::Cert],
    now: SystemTime,
) -> Result<Option<SystemTime>, Refused> {
    let enforced = statement.enforced;
    let mut until = None;
    if let (true, Some(expiry)) = (enforced.expiry, envelope.expiry) {
        if now > expiry {
            return Err(Check::Time.refused(format!(
                "the signature expired at {}",
                httpdate::fmt_http_date(expiry)
            )));
        }
        until = Some(expiry);
    }
    if !enforced.authentic_timestamp {
        return Ok(until);
    }
    let valid = chain::valid_at(chain, now);
    // A tsa store makes notation-go require a countersignature, which is not read here:
    // refused rather than elected on the certificates' dates alone.
    let countersigned = match statement.timestamped {
        None => false,
        Some(VerifyTimestamp::AfterCertExpiry) => valid.is_err(),
        Some(VerifyTimestamp::Always) => true,
    };
    if countersigned {
        return Err(Check::Policy.refused(format!(
            "trust policy '{}' names a tsa trust store, so notation requires a timestamp countersignature, which this controller does not read",
            statement.name
        )));
    }
    valid?;
    // A verdict kept past this would elect what the level refuses.
    Ok(until.into_iter().chain(chain::not_after(chain)).min())
}

fn skip(statement: &Statement) -> Option<String> {
    (statement.level == Level::Skip).then(|| format!("trust policy '{}' (skip)", statement.name))
}

/// A level as the trust policy writes it.
fn level_name(level: Level) -> &'static str {
    match level {
        Level::Strict => "strict",
        Level::Permissive => "permissive",
        Level::Audit => "audit",
        Level::Skip => "skip",
    }
}

/// The leaf's subject as attribute -> value (`CN`, `O`, ...), read as notation-go reads it.
fn subject_of(leaf: &[u8]) -> Result<dn::Dn, String> {
    let cert = x509_cert::Certificate::from_der(leaf)
        .map_err(|e| format!("a notation signature's certificate is not X.509 DER ({e})"))?;
    dn::of_name(&cert.tbs_certificate.subject)
}

#[cfg(test)]
mod tests;
