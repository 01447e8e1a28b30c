//! RFC 3161 timestamps of a timestamp authority the trusted root names (`timestampAuthorities`):
//! what says when a signature logged in Rekor v2 was made. A bundle keeps them in
//! `verificationMaterial.timestampVerificationData.rfc3161Timestamps`, each a DER
//! `TimeStampResp`. One counts, as sigstore-go and Sigstore's timestamp-authority verify it,
//! when the response was granted and its token is a CMS SignedData of one signer over a TSTInfo
//! whose message imprint is the hash of this signature; the signer's certificate chains, for
//! time stamping and at the token's time, to the authority's root (and is the authority's leaf
//! when the root names one), has one critical extended key usage, time stamping; the signature
//! over the signed attributes verifies and their message digest is the TSTInfo's; and the time
//! lies in the authority's `validFor`. Parsing is RustCrypto's `x509-tsp` and `cms`; the chain
//! is rustls-webpki's, as for signing certificates.

mod fraction;
mod usage;

use super::path::{Budget, Pool, Verification};
use super::valid_for::ValidFor;
use cms::cert::CertificateChoices;
use cms::signed_data::{SignedData, SignerIdentifier, SignerInfo};
use fraction::whole_second;
use rustls_pki_types::{CertificateDer, UnixTime};
use sha2::{Digest, Sha256, Sha384, Sha512};
use std::sync::Arc;
use usage::only_time_stamping;
#[cfg(test)]
use usage::TIME_STAMPING_OID;
use x509_cert::der::asn1::OctetString;
use x509_cert::der::{Decode, Encode};
use x509_tsp::{TimeStampResp, TstInfo};

/// Timestamps read per signature (sigstore-go refuses more than 32).
pub const MAX_TIMESTAMPS: usize = 32;

/// id-kp-timeStamping (1.3.6.1.5.5.7.3.8), as webpki takes it.
const TIME_STAMPING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x08];
const SIGNED_DATA: &str = "1.2.840.113549.1.7.2";
const TST_INFO: &str = "1.2.840.113549.1.9.16.1.4";
const MESSAGE_DIGEST: &str = "1.2.840.113549.1.9.4";
const SIGNING_TIME: &str = "1.2.840.113549.1.9.5";

/// One timestamp authority of the trusted root.
#[derive(Debug, Clone)]
pub struct Authority {
    pub anchor: CertificateDer<'static>,
    /// The chain's certificates between its leaf and its anchor, read once.
    pub intermediates: Arc<Pool>,
    /// The chain's first certificate when it is not a CA: the one certificate that may sign.
    pub leaf: Option<Vec<u8>>,
    pub valid: ValidFor,
    pub uri: String,
}

/// The hashes a message imprint or digest may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::verify) enum Hash {
    Sha256,
    Sha384,
    Sha512,
}

impl Hash {
    fn of_oid(oid: &str) -> Result<Hash, String> {
        match oid {
            "2.16.840.1.101.3.4.2.1" => Ok(Hash::Sha256),
            "2.16.840.1.101.3.4.2.2" => Ok(Hash::Sha384),
            "2.16.840.1.101.3.4.2.3" => Ok(Hash::Sha512),
            "1.3.14.3.2.26" => Err("its hash is SHA-1, which is too weak".into()),
            other => Err(format!("its hash ({other}) is not SHA-256, -384 or -512")),
        }
    }

    fn digest(self, bytes: &[u8]) -> Vec<u8> {
        match self {
            Hash::Sha256 => Sha256::digest(bytes).to_vec(),
            Hash::Sha384 => Sha384::digest(bytes).to_vec(),
            Hash::Sha512 => Sha512::digest(bytes).to_vec(),
        }
    }
}

/// The times (Unix seconds) `response` vouches `signature` existed at, and the authority's
/// URI, by the first authority of `authorities` it verifies with; else why each refused. A
/// genTime with a fraction of a second is both its second and the next: what must hold at it
/// (a certificate's validity, whose bounds are whole seconds) must hold at both, as Go
/// compares the exact time. Paths to the authorities' roots are built within `budget`, the
/// signature's.
pub fn verify(
    authorities: &[Authority],
    response: &[u8],
    signature: &[u8],
    budget: &Budget,
) -> Result<(Vec<i64>, String), String> {
    let token = Token::parse(response, signature)?;
    let carried = Pool::new(token.certificates.iter().map(Vec::as_slice));
    let mut why = Vec::new();
    for authority in authorities {
        match token.verify(authority, &carried, budget) {
            Ok(()) => return Ok((token.times(), authority.uri.clone())),
            Err(e) => why.push(e),
        }
    }
    if why.is_empty() {
        return Err("the trusted root names no timestamp authority".into());
    }
    Err(why.join("; "))
}

/// A response's token, read and checked as far as no authority is needed.
struct Token {
    /// genTime's whole second.
    time: i64,
    /// Whether genTime has a fraction of a second past it.
    fraction: bool,
    signer: Vec<u8>,
    certificates: Vec<Vec<u8>>,
    /// The bytes signed (the signed attributes as a SET, or the TSTInfo) and the signature.
    signed: Vec<u8>,
    signature: Vec<u8>,
    hash: Hash,
    /// The signed attributes' signingTime (Unix seconds), when there and readable.
    signing_time: Option<i64>,
}

impl Token {
    fn parse(response: &[u8], signature: &[u8]) -> Result<Token, String> {
        let data = signed_data(response)?;
        let (info_der, time, fraction) = tst_info(&data, signature)?;
        let certificates: Vec<Vec<u8>> = data
            .certificates
            .iter()
            .flat_map(|set| set.0.iter())
            .filter_map(|c| match c {
                CertificateChoices::Certificate(cert) => cert.to_der().ok(),
                CertificateChoices::Other(_) => None,
            })
            .collect();
        let [signer_info] = data.signer_infos.0.as_slice() else {
            return Err("a timestamp's token has not exactly one signer".into());
        };
        let SignerIdentifier::IssuerAndSerialNumber(sid) = &signer_info.sid else {
            return Err("a timestamp's signer is not named by issuer and serial number".into());
        };
        let signer = certificates
            .iter()
            .find(|der| {
                x509_cert::Certificate::from_der(der).is_ok_and(|c| {
                    c.tbs_certificate.issuer == sid.issuer
                        && c.tbs_certificate.serial_number == sid.serial_number
                })
            })
            .cloned()
            .unwrap_or_default();
        let hash = Hash::of_oid(&signer_info.digest_alg.oid.to_string())?;
        let signed = signed_bytes(signer_info, hash, info_der)?;
        Ok(Token {
            time,
            fraction,
            signing_time: signing_time(signer_info),
            signer,
            certificates,
            signed,
            signature: signer_info.signature.as_bytes().to_vec(),
            hash,
        })
    }

    /// The whole seconds genTime must be judged at: its own, and the next when it has a
    /// fraction.
    fn times(&self) -> Vec<i64> {
        match self.fraction {
            true => vec![self.time, self.time.saturating_add(1)],
            false => vec![self.time],
        }
    }

    /// Whether `authority` vouches for this token, through its own certificates and those the
    /// token carries (`carried`).
    fn verify(&self, authority: &Authority, carried: &Pool, budget: &Budget) -> Result<(), String> {
        let uri = &authority.uri;
        // Certificates, but not the signer's: digitorus/pkcs7 refuses that ("no certificate
        // for signer"); the authority's leaf stands in only for a token with none at all.
        if self.signer.is_empty() && !self.certificates.is_empty() {
            return Err(format!(
                "{uri}: the token's signer is not among the certificates it carries"
            ));
        }
        // A token without certificates is signed by the authority's own leaf.
        let signer = match (&authority.leaf, self.signer.is_empty()) {
            (Some(leaf), true) => leaf.clone(),
            (Some(leaf), false) if *leaf != self.signer => {
                return Err(format!(
                    "{uri}: the token's signer is not the authority's certificate"
                ))
            }
            (_, true) => {
                return Err(format!(
                    "{uri}: the token carries no certificate, and the authority names no leaf"
                ))
            }
            (_, false) => self.signer.clone(),
        };
        let der = CertificateDer::from(signer.as_slice());
        let leaf = webpki::EndEntityCert::try_from(&der)
            .map_err(|e| format!("{uri}: the token's signer is not a usable certificate ({e})"))?;
        webpki::anchor_from_trusted_cert(&authority.anchor)
            .map_err(|e| format!("{uri}: its root certificate is not usable ({e})"))?;
        for time in self.times() {
            self.chains_at(authority, carried, budget, (&leaf, &signer), time)?;
        }
        self.signed_within_validity(&signer)
            .map_err(|e| format!("{uri}: {e}"))?;
        // Sigstore's timestamp-authority: the signer's one usage is time stamping, critical.
        only_time_stamping(&signer).map_err(|e| format!("{uri}: {e}"))?;
        if !self.signature_verifies(&signer) {
            return Err(format!("{uri}: the token's signature does not verify"));
        }
        Ok(())
    }

    /// The signer chains to `authority`'s root at `time`, within the root's and the
    /// authority's validity.
    fn chains_at(
        &self,
        authority: &Authority,
        carried: &Pool,
        budget: &Budget,
        (leaf, signer): (&webpki::EndEntityCert<'_>, &[u8]),
        time: i64,
    ) -> Result<(), String> {
        let uri = &authority.uri;
        let at = std::time::Duration::from_secs(time.max(0) as u64);
        // The authority's certificates first, then the token's, as sigstore-go pools them.
        let verification = Verification {
            time: UnixTime::since_unix_epoch(at),
            // Go's reading, for the signer and its intermediates: none, time stamping, or any;
            // the signer's own is then time stamping alone (`only_time_stamping`).
            usage: super::path::Usage {
                oid: TIME_STAMPING,
                arcs: &[1, 3, 6, 1, 5, 5, 7, 3, 8],
            },
            pools: &[&authority.intermediates, carried],
            budget,
        };
        super::path::verify(leaf, signer, &authority.anchor, &verification).map_err(
            |e| match e {
                webpki::Error::MaximumSignatureChecksExceeded => {
                    format!("{uri}: {}", super::path::OVER_BUDGET)
                }
                e => format!(
                    "{uri}: the token's signer does not chain to it at the token's time ({e:?})"
                ),
            },
        )?;
        super::anchor::valid_at(&authority.anchor, time).map_err(|e| format!("{uri}: {e}"))?;
        if !authority.valid.contains(time) {
            return Err(format!(
                "{uri}: the timestamp's time {time} is outside the authority's validFor"
            ));
        }
        Ok(())
    }

    /// A signingTime within the signer's validity, bounds included, as digitorus/pkcs7 asks
    /// it of a token whose signed attributes carry one.
    fn signed_within_validity(&self, signer: &[u8]) -> Result<(), String> {
        let Some(at) = self.signing_time else {
            return Ok(());
        };
        let cert = x509_cert::Certificate::from_der(signer).map_err(|e| e.to_string())?;
        let validity = &cert.tbs_certificate.validity;
        let seconds = |t: x509_cert::time::Time| t.to_unix_duration().as_secs() as i64;
        let (from, to) = (seconds(validity.not_before), seconds(validity.not_after));
        match (from..=to).contains(&at) {
            true => Ok(()),
            false => Err(format!(
                "the token's signingTime {at} is outside its signer's validity ({from} to {to})"
            )),
        }
    }

    /// The signer's key (ECDSA P-256 or P-384 with SHA-256, -384 or -512, or RSA PKCS #1 v1.5)
    /// verifies the signature.
    fn signature_verifies(&self, signer: &[u8]) -> bool {
        use ring::signature as s;
        let Ok(cert) = x509_cert::Certificate::from_der(signer) else {
            return false;
        };
        let spki = &cert.tbs_certificate.subject_public_key_info;
        let curve = spki
            .algorithm
            .parameters
            .as_ref()
            .and_then(|p| p.decode_as::<x509_cert::der::asn1::ObjectIdentifier>().ok())
            .map(|o| o.to_string());
        let algorithm: &dyn s::VerificationAlgorithm = match (
            spki.algorithm.oid.to_string().as_str(),
            curve.as_deref(),
            self.hash,
        ) {
            ("1.2.840.10045.2.1", Some("1.2.840.10045.3.1.7"), Hash::Sha256) => {
                &s::ECDSA_P256_SHA256_ASN1
            }
            ("1.2.840.10045.2.1", Some("1.2.840.10045.3.1.7"), Hash::Sha384) => {
                &s::ECDSA_P256_SHA384_ASN1
            }
            ("1.2.840.10045.2.1", Some("1.3.132.0.34"), Hash::Sha256) => &s::ECDSA_P384_SHA256_ASN1,
            ("1.2.840.10045.2.1", Some("1.3.132.0.34"), Hash::Sha384) => &s::ECDSA_P384_SHA384_ASN1,
            // Go verifies a digest longer than the curve, truncated; ring has no such pair.
            ("1.2.840.10045.2.1", Some(curve), Hash::Sha512) => {
                let digest = Hash::Sha512.digest(&self.signed);
                let key = spki.subject_public_key.raw_bytes();
                return super::prehashed::ecdsa_verifies(curve, key, &digest, &self.signature);
            }
            ("1.2.840.113549.1.1.1", _, Hash::Sha256) => &s::RSA_PKCS1_2048_8192_SHA256,
            ("1.2.840.113549.1.1.1", _, Hash::Sha384) => &s::RSA_PKCS1_2048_8192_SHA384,
            ("1.2.840.113549.1.1.1", _, Hash::Sha512) => &s::RSA_PKCS1_2048_8192_SHA512,
            _ => return false,
        };
        s::UnparsedPublicKey::new(algorithm, spki.subject_public_key.raw_bytes())
            .verify(&self.signed, &self.signature)
            .is_ok()
    }
}

#[cfg(test)]
pub(super) mod tests;

fn malformed(what: &'static str) -> impl Fn(x509_cert::der::Error) -> String {
    move |e| format!("{what} ({e})")
}

/// The response's token, granted, as CMS signed data.
fn signed_data(response: &[u8]) -> Result<SignedData, String> {
    let response = TimeStampResp::from_der(response)
        .map_err(malformed("a timestamp is not an RFC 3161 response"))?;
    let status = response.status.status as u8;
    if status > 1 {
        return Err(format!(
            "a timestamp's response was not granted (status {status})"
        ));
    }
    let token = response
        .time_stamp_token
        .ok_or("a timestamp's response carries no token")?;
    if token.content_type.to_string() != SIGNED_DATA {
        return Err("a timestamp's token is not CMS signed data".into());
    }
    token
        .content
        .decode_as()
        .map_err(malformed("a timestamp's token is not CMS signed data"))
}

/// The token's TSTInfo as signed (its DER) and its time, once its message imprint is found to
/// be of `signature`.
fn tst_info(data: &SignedData, signature: &[u8]) -> Result<(Vec<u8>, i64, bool), String> {
    let content = &data.encap_content_info;
    if content.econtent_type.to_string() != TST_INFO {
        return Err("a timestamp's token does not hold a TSTInfo".into());
    }
    let info_der = content
        .econtent
        .as_ref()
        .ok_or("a timestamp's token holds no TSTInfo")?
        .decode_as::<OctetString>()
        .map_err(malformed("a timestamp's TSTInfo is not an octet string"))?
        .into_bytes();
    // RFC 3161 allows fractions of a second in genTime (Go reads them; der does not): read
    // the same TSTInfo with the whole second. The signed bytes stay `info_der`.
    let mut fraction = false;
    let info = TstInfo::from_der(&info_der)
        .or_else(|e| {
            let (whole, past) = whole_second(&info_der).ok_or(e)?;
            fraction = past;
            TstInfo::from_der(&whole)
        })
        .map_err(malformed("a timestamp's TSTInfo does not parse"))?;
    let imprint = &info.message_imprint;
    let imprint_hash = Hash::of_oid(&imprint.hash_algorithm.oid.to_string())?;
    if imprint.hashed_message.as_bytes() != imprint_hash.digest(signature).as_slice() {
        return Err("a timestamp is of another signature (its message imprint)".into());
    }
    let time = info.gen_time.to_unix_duration().as_secs() as i64;
    Ok((info_der, time, fraction))
}

/// What the signer signed: the TSTInfo itself, or the signed attributes whose message digest
/// is the TSTInfo's.
fn signed_bytes(signer: &SignerInfo, hash: Hash, info_der: Vec<u8>) -> Result<Vec<u8>, String> {
    let Some(attributes) = &signer.signed_attrs else {
        return Ok(info_der);
    };
    let digest = attributes
        .iter()
        .find(|a| a.oid.to_string() == MESSAGE_DIGEST)
        .and_then(|a| a.values.iter().next())
        .and_then(|v| v.decode_as::<OctetString>().ok())
        .ok_or("a timestamp's signed attributes have no message digest")?;
    if digest.as_bytes() != hash.digest(&info_der).as_slice() {
        return Err("a timestamp's signed attributes are of another TSTInfo".into());
    }
    attributes.to_der().map_err(|e| e.to_string())
}

/// The signed `signingTime`, as digitorus/pkcs7 reads it: one that does not parse is none.
fn signing_time(signer: &SignerInfo) -> Option<i64> {
    signer
        .signed_attrs
        .iter()
        .flat_map(|attributes| attributes.iter())
        .find(|a| a.oid.to_string() == SIGNING_TIME)
        .and_then(|a| a.values.iter().next())
        .and_then(|v| v.to_der().ok())
        .and_then(|der| x509_cert::time::Time::from_der(&der).ok())
        .map(|t| t.to_unix_duration().as_secs() as i64)
}
