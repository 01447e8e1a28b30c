//! Keyless cosign signatures (docs/imagepolicy.md, "Keyless"): the signature's certificate must
//! chain, for code signing and valid now, to a certificate authority of the trusted root the
//! user supplies (`trusted_root.json`, Sigstore's format; nothing is fetched), and name one of
//! the policy's identities: the OIDC issuer (Fulcio's extension) and a subject alternative name,
//! each matched by a regular expression, as cosign and Flux match them.

use super::key::PublicKey;
use super::path::{Budget, Pool, Verification};
use super::valid_for::ValidFor;
use regex::Regex;
use rustls_pki_types::{CertificateDer, UnixTime};
use std::sync::Arc;
use std::time::SystemTime;
use x509_cert::der::Decode;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::SubjectAltName;

/// A trusted root of a few certificate authorities, logs and timestamp authorities is a few KiB;
/// Sigstore's public-good one is about 8 KiB.
pub const MAX_ROOT_BYTES: usize = 256 << 10;
/// Certificate authorities, certificates per chain, identities.
pub const MAX_AUTHORITIES: usize = 16;
pub const MAX_CHAIN: usize = 8;
pub const MAX_IDENTITIES: usize = 16;
/// An identity's regular expression, before it is compiled (a tenant writes it).
pub const MAX_PATTERN_BYTES: usize = 1024;

/// id-kp-codeSigning (1.3.6.1.5.5.7.3.3), as webpki takes it.
const CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];
/// Fulcio's OIDC issuer extensions: v2 (a DER UTF8String) and v1 (the raw text).
const ISSUER_V2: &str = "1.3.6.1.4.1.57264.1.8";
const ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";

/// The certificate authorities of a `trusted_root.json`.
#[derive(Debug, Clone)]
pub struct TrustedRoot {
    authorities: Vec<Authority>,
    /// Its transparency logs' keys.
    pub logs: super::tlog::LogKeys,
    /// Its timestamp authorities.
    pub timestamps: Vec<super::timestamp::Authority>,
    /// Its certificate transparency logs whose keys can be read.
    pub ctlogs: super::tlog::LogKeys,
    /// Whether it names any CT log: then a signing certificate must carry an SCT of one of
    /// [`TrustedRoot::ctlogs`], even when no key it names can be read (sigstore-go: "only able
    /// to verify 0 SCT entries"), never none at all.
    pub ctlogs_named: bool,
}

/// Whether a certificate's basic constraints make it a CA.
fn is_ca(cert: &x509_cert::Certificate) -> bool {
    cert.tbs_certificate.extensions.iter().flatten().any(|ext| {
        ext.extn_id.to_string() == "2.5.29.19"
            && x509_cert::ext::pkix::BasicConstraints::from_der(ext.extn_value.as_bytes())
                .is_ok_and(|b| b.ca)
    })
}

/// One authority: its chain's last certificate is the trust anchor, the others intermediates,
/// trusted for signatures made within `valid`.
#[derive(Debug, Clone)]
struct Authority {
    anchor: CertificateDer<'static>,
    intermediates: Arc<Pool>,
    valid: ValidFor,
}

impl TrustedRoot {
    /// A `trusted_root.json`, read in named steps (`written.rs`): the document within its
    /// bounds, its logs, its certificate and timestamp authorities as sigstore-go splits them.
    pub fn parse(bytes: &[u8]) -> Result<TrustedRoot, String> {
        let root = written::read(bytes)?;
        let ctlogs_named = !root.ctlogs.is_empty();
        // The logs first, then the authorities: the order their refusals were always told in.
        let logs = super::tlog::LogKeys::from_written(root.tlogs)?;
        let ctlogs = super::tlog::LogKeys::from_written(root.ctlogs)?;
        let trusted = TrustedRoot {
            authorities: written::certificate_authorities(root.certificate_authorities)?,
            logs,
            timestamps: written::timestamp_authorities(root.timestamp_authorities)?,
            ctlogs_named,
            ctlogs,
        };
        if trusted.authorities.is_empty() {
            return Err("trusted_root.json names no certificate authority".into());
        }
        Ok(trusted)
    }

    /// Checks that `leaf` chains for code signing at `time` to one of the authorities `trusted`
    /// keeps, through that authority's own certificates only, one authority at a time, as
    /// sigstore-go builds it: an intermediate the signature carries is never used (one the root
    /// never lists, or one of an authority whose `validFor` had ended, let a leaf through).
    fn chain(
        &self,
        leaf: (&webpki::EndEntityCert<'_>, &[u8]),
        trusted: impl Fn(&&Authority) -> bool,
        time: std::time::Duration,
        budget: &Budget,
    ) -> Result<&Authority, webpki::Error> {
        let mut refusal = webpki::Error::UnknownIssuer;
        for authority in self.authorities.iter().filter(trusted) {
            let verification = Verification {
                time: UnixTime::since_unix_epoch(time),
                // As Go's x509 (sigstore-go) checks it: a certificate with no extended key
                // usage allows any; one with some must allow code signing, or any.
                usage: super::path::Usage {
                    oid: CODE_SIGNING,
                    arcs: &[1, 3, 6, 1, 5, 5, 7, 3, 3],
                },
                pools: &[&authority.intermediates],
                budget,
            };
            let verified = super::path::verify(leaf.0, leaf.1, &authority.anchor, &verification);
            match verified {
                Ok(_) => return Ok(authority),
                // What an authority that issued the leaf says (expired, not yet valid) says
                // more than another's "unknown issuer".
                Err(webpki::Error::UnknownIssuer) => {}
                Err(other) => refusal = other,
            }
        }
        Err(refusal)
    }
}

/// An identity the policy trusts (`spec.verify.matchOIDCIdentity`).
#[derive(Debug, Clone)]
pub struct Identity {
    pub issuer: Regex,
    pub subject: Regex,
}

impl Identity {
    /// Compiles an identity's expressions, bounded (they are a tenant's).
    pub fn new(issuer: &str, subject: &str) -> Result<Identity, String> {
        let compile = |field: &str, pattern: &str| {
            if pattern.len() > MAX_PATTERN_BYTES {
                return Err(format!(
                    "matchOIDCIdentity {field} is over {MAX_PATTERN_BYTES} bytes"
                ));
            }
            regex::RegexBuilder::new(pattern)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| {
                    format!(
                        "matchOIDCIdentity {field} {pattern:?} is not a regular expression: {e}"
                    )
                })
        };
        Ok(Identity {
            issuer: compile("issuer", issuer)?,
            subject: compile("subject", subject)?,
        })
    }
}

/// What keyless verification trusts: the root (its certificate authorities and log keys) and
/// the identities.
#[derive(Debug, Clone)]
pub struct Keyless {
    pub root: TrustedRoot,
    pub identities: Vec<Identity>,
}

impl Keyless {
    /// The signing key `chain` (DER, leaf first) vouches for and who it names, once the leaf
    /// chains to the root for code signing at `now` and names a trusted identity.
    pub fn signer(
        &self,
        chain: &[Vec<u8>],
        now: SystemTime,
    ) -> Result<(PublicKey, String), String> {
        let signer = self.signer_within(chain, now, &Budget::default());
        signer.map_err(|e| e.to_string())
    }

    /// [`Keyless::signer`], its paths built within `budget`, the signature's.
    pub fn signer_within(
        &self,
        chain: &[Vec<u8>],
        now: SystemTime,
        budget: &Budget,
    ) -> Result<(PublicKey, String), NoSigner> {
        let Some(leaf) = chain.first() else {
            return Err(NoSigner::Certificate(
                "a keyless signature carries no certificate".into(),
            ));
        };
        if chain.len() > MAX_CHAIN {
            return Err(NoSigner::Certificate(format!(
                "a signature's certificate chain is over {MAX_CHAIN} certificates"
            )));
        }
        let leaf_der = CertificateDer::from(leaf.as_slice());
        let end_entity = webpki::EndEntityCert::try_from(&leaf_der).map_err(|e| {
            format!("a signature's certificate is not a usable X.509 certificate ({e})")
        })?;
        let seconds = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let valid_then = |a: &&Authority| a.valid.contains(seconds.as_secs() as i64);
        let leaf_pair = (&end_entity, leaf.as_slice());
        let chained = self.root.chain(leaf_pair, valid_then, seconds, budget);
        if let Err(webpki::Error::UnknownIssuer) = chained {
            // Say so when only an authority the root no longer trusted then would vouch.
            let others = |a: &&Authority| !valid_then(a);
            if self.root.chain(leaf_pair, others, seconds, budget).is_ok() {
                return Err(NoSigner::Time(format!(
                    "the signing certificate chains to a certificate authority the trusted root did not trust at {} (its validFor)",
                    httpdate::fmt_http_date(now)
                )));
            }
        }
        let authority = chained.map_err(chain_error)?;
        super::anchor::valid_at(&authority.anchor, seconds.as_secs() as i64)
            .map_err(NoSigner::Time)?;
        if self.root.ctlogs_named {
            let mut issuers: Vec<&[u8]> = authority.intermediates.ders().collect();
            issuers.push(&authority.anchor);
            super::sct::verify(leaf, &issuers, &self.root.ctlogs, budget)?;
        }
        let (issuer, subject, key) = read_leaf(leaf)?;
        let matched = self.identities.iter().any(|id| {
            issuer.as_deref().is_some_and(|i| id.issuer.is_match(i))
                && subject.as_deref().is_some_and(|s| id.subject.is_match(s))
        });
        if !matched {
            let want: Vec<String> = self
                .identities
                .iter()
                .map(|id| format!("issuer ~ {}, subject ~ {}", id.issuer, id.subject))
                .collect();
            return Err(NoSigner::Identity(format!(
                "certificate identity mismatch: got issuer {}, subject {}; want {}",
                issuer.as_deref().unwrap_or("(none)"),
                subject.as_deref().unwrap_or("(none)"),
                want.join(" or ")
            )));
        }
        let who = format!(
            "{} ({})",
            subject.as_deref().unwrap_or_default(),
            issuer.as_deref().unwrap_or_default()
        );
        Ok((key, who))
    }
}

/// Why a certificate chain vouches for no signer: the certificate (it does not chain to the
/// root), its time (it, or the authority it chains to, is not valid when the signature was
/// made), or the identity it names (not one the policy trusts). A caller that checks at a
/// timestamp's time says so of the first two, not of the third.
#[derive(Debug, thiserror::Error)]
pub enum NoSigner {
    #[error("{0}")]
    Certificate(String),
    #[error("{0}")]
    Time(String),
    #[error("{0}")]
    Identity(String),
}

impl From<String> for NoSigner {
    fn from(reason: String) -> Self {
        NoSigner::Certificate(reason)
    }
}

/// What a chain failure says.
fn chain_error(e: webpki::Error) -> NoSigner {
    match e {
        webpki::Error::CertExpired { not_after, .. } => NoSigner::Time(format!(
            "the signing certificate expired at {}",
            httpdate::fmt_http_date(
                SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(not_after.as_secs())
            )
        )),
        webpki::Error::CertNotValidYet { .. } => {
            NoSigner::Time("the signing certificate is not valid yet".into())
        }
        webpki::Error::UnknownIssuer => NoSigner::Certificate(
            "the signing certificate does not chain to the trusted root".into(),
        ),
        webpki::Error::MaximumSignatureChecksExceeded => {
            NoSigner::Certificate(super::path::OVER_BUDGET.into())
        }
        other => NoSigner::Certificate(format!(
            "the signing certificate does not verify: {other:?}"
        )),
    }
}

/// Fulcio's username SAN (an otherName).
const OTHER_NAME_SAN: &str = "1.3.6.1.4.1.57264.1.7";

/// The leaf's OIDC issuer, its subject (the one subject alternative name sigstore-go reads:
/// the first URI, else the first email address, else Fulcio's username otherName) and its
/// public key.
fn read_leaf(leaf: &[u8]) -> Result<(Option<String>, Option<String>, PublicKey), String> {
    let cert = x509_cert::Certificate::from_der(leaf)
        .map_err(|e| format!("a signature's certificate is not X.509 DER ({e})"))?;
    let tbs = &cert.tbs_certificate;
    let mut issuer = None;
    let (mut uri, mut email, mut other) = (None, None, None);
    for ext in tbs.extensions.iter().flatten() {
        let id = ext.extn_id.to_string();
        let value = ext.extn_value.as_bytes();
        if id == ISSUER_V2 {
            let text = x509_cert::der::asn1::Utf8StringRef::from_der(value).map(|s| s.to_string());
            issuer = text.ok().or(issuer);
        } else if id == ISSUER_V1 && issuer.is_none() {
            issuer = std::str::from_utf8(value).ok().map(str::to_string);
        } else if id == "2.5.29.17" {
            let names = SubjectAltName::from_der(value)
                .map_err(|e| format!("a signature's certificate has a malformed SAN ({e})"))?;
            for name in names.0 {
                match name {
                    GeneralName::UniformResourceIdentifier(s) if uri.is_none() => {
                        uri = Some(s.to_string())
                    }
                    GeneralName::Rfc822Name(s) if email.is_none() => email = Some(s.to_string()),
                    GeneralName::OtherName(o)
                        if other.is_none() && o.type_id.to_string() == OTHER_NAME_SAN =>
                    {
                        other = o
                            .value
                            .decode_as::<x509_cert::der::asn1::Utf8StringRef<'_>>()
                            .ok()
                            .map(|s| s.to_string());
                    }
                    _ => {}
                }
            }
        }
    }
    let key = PublicKey::from_spki(&tbs.subject_public_key_info)
        .map_err(|e| format!("a signature's certificate key is {e}"))?;
    Ok((issuer, uri.or(email).or(other), key))
}

mod kept;
mod written;

#[cfg(test)]
mod tests;
