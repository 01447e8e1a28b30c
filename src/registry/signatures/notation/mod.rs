//! Notary Project signatures (`spec.verify.provider: notation`; docs/imagepolicy.md,
//! "Notation"), as the notation CLI attaches them through the referrers API: a JWS (notation's
//! default) or COSE envelope ([`envelope`]) whose payload names the target artifact's digest,
//! signed by the leaf of its certificate chain. The Secret holds the trust policy
//! (`trustpolicy.json`, Notary Project's format) and the trust store's CA certificates
//! (`*.crt`, `*.pem`), as Flux's OCIRepository takes them.

mod dn;
mod envelope;
mod policy;

use policy::{parse_policy, Level, Statement};

use envelope::Envelope;
use rustls_pki_types::{CertificateDer, UnixTime};
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
struct Target {
    digest: String,
}

pub use envelope::MAX_ENVELOPE_BYTES;
pub use policy::{MAX_ENTRY_BYTES, MAX_POLICIES, TRUST_POLICY};
/// CA certificates in the trust store.
pub const MAX_CERTIFICATES: usize = 32;

/// id-kp-codeSigning, as webpki takes it.
const CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];

/// The trust policy and the trust store's certificates.
#[derive(Debug, Clone)]
pub struct NotationTrust {
    statements: Vec<Statement>,
    anchors: Vec<CertificateDer<'static>>,
}

impl NotationTrust {
    /// From a Secret's `trustpolicy.json` and its `*.crt` and `*.pem` entries (PEM).
    pub fn from_secret(data: &BTreeMap<String, Vec<u8>>) -> Result<NotationTrust, String> {
        let policy = data.get(TRUST_POLICY).ok_or_else(|| {
            format!("it has no {TRUST_POLICY} entry (the Notary Project trust policy)")
        })?;
        let statements = parse_policy(policy)?;
        let mut anchors = Vec::new();
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
                anchors.push(CertificateDer::from(der));
            }
            if anchors.len() > MAX_CERTIFICATES {
                return Err(format!("over {MAX_CERTIFICATES} CA certificates"));
            }
        }
        if anchors.is_empty() {
            return Err(
                "it has no CA certificate (*.crt or *.pem entries) for the trust store".into(),
            );
        }
        Ok(NotationTrust {
            statements,
            anchors,
        })
    }

    /// Who signed `envelope` (`media_type`) for `digest` of `repository`
    /// (`registry/name`), and until when that holds (at `strict`: the signature's expiry and
    /// the signing certificate's; else for good), or why it does not count.
    pub fn verify(
        &self,
        repository: &str,
        media_type: &str,
        envelope: &[u8],
        digest: &str,
        now: SystemTime,
    ) -> Result<(String, Option<SystemTime>), String> {
        let statement = self.statement(repository)?;
        if let Some(skipped) = skip(statement) {
            return Ok((skipped, None));
        }
        let jws = Envelope::parse(media_type, envelope)?;
        let leaf = jws
            .chain
            .first()
            .ok_or("a notation signature carries no certificate")?;
        // Integrity: the leaf's key signed the protected header and payload.
        jws.check_signature(leaf)?;
        let payload: Payload = serde_json::from_slice(&jws.payload)
            .map_err(|e| format!("a notation payload is not a target descriptor ({e})"))?;
        if payload.target_artifact.digest != digest {
            return Err(format!(
                "a signature is for {}, not this digest",
                payload.target_artifact.digest
            ));
        }
        if statement.level == Level::Audit {
            return Ok((format!("trust policy '{}' (audit)", statement.name), None));
        }
        // Authenticity: the chain leads to the trust store, for code signing, valid now.
        self.check_chain(&jws.chain, now)?;
        let subject = subject_of(leaf)?;
        if let Some(identities) = &statement.identities {
            if !identities.iter().any(|want| dn::is_subset(want, &subject)) {
                let got: Vec<String> = subject.iter().map(|(k, v)| format!("{k}={v}")).collect();
                return Err(format!(
                    "certificate identity mismatch: got x509.subject {}; want one of trust policy '{}''s trustedIdentities",
                    got.join(", "),
                    statement.name
                ));
            }
        }
        let mut until = None;
        if statement.level == Level::Strict {
            if let Some(expiry) = jws.expiry {
                if now > expiry {
                    return Err(format!(
                        "the signature expired at {}",
                        httpdate::fmt_http_date(expiry)
                    ));
                }
            }
            // A verdict kept past either would elect what strict refuses.
            until = [jws.expiry, not_after(leaf)].into_iter().flatten().min();
        }
        let who: Vec<String> = subject.iter().map(|(k, v)| format!("{k}={v}")).collect();
        Ok((who.join(", "), until))
    }

    /// The statement that applies to `repository`: the one whose scopes name it, else `*`'s.
    fn statement(&self, repository: &str) -> Result<&Statement, String> {
        self.statements
            .iter()
            .find(|s| s.scopes.iter().any(|r| r == repository))
            .or_else(|| {
                self.statements
                    .iter()
                    .find(|s| s.scopes.iter().any(|r| r == "*"))
            })
            .ok_or_else(|| {
                format!("no trust policy statement's registryScopes include {repository}")
            })
    }

    /// Who "signed" an image of `repository` whose statement is `skip`: notation verifies
    /// nothing there, so no signature is needed (docs/imagepolicy.md).
    pub fn skipped(&self, repository: &str) -> Option<String> {
        self.statement(repository).ok().and_then(skip)
    }

    fn check_chain(&self, chain: &[Vec<u8>], now: SystemTime) -> Result<(), String> {
        let leaf = CertificateDer::from(chain[0].as_slice());
        let end_entity = webpki::EndEntityCert::try_from(&leaf)
            .map_err(|e| format!("a notation signature's certificate is not usable ({e:?})"))?;
        let anchors: Vec<_> = self
            .anchors
            .iter()
            .filter_map(|a| webpki::anchor_from_trusted_cert(a).ok())
            .collect();
        let intermediates: Vec<CertificateDer<'_>> = chain[1..]
            .iter()
            .map(|c| CertificateDer::from(c.as_slice()))
            .collect();
        let time = UnixTime::since_unix_epoch(
            now.duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default(),
        );
        let usage = webpki::KeyUsage::required(CODE_SIGNING);
        let verified = end_entity.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &anchors,
            &intermediates,
            time,
            usage,
            None,
            None,
        );
        verified.map(|_| ()).map_err(|e| match e {
            webpki::Error::UnknownIssuer => {
                "the signing certificate does not chain to the trust store".to_string()
            }
            webpki::Error::CertExpired { .. } => "the signing certificate expired".to_string(),
            other => format!("the signing certificate does not verify: {other:?}"),
        })
    }
}

/// What a `skip` statement says in place of a signer.
fn skip(statement: &Statement) -> Option<String> {
    (statement.level == Level::Skip).then(|| format!("trust policy '{}' (skip)", statement.name))
}

/// When the certificate `leaf` (DER) stops being valid.
fn not_after(leaf: &[u8]) -> Option<SystemTime> {
    let cert = x509_cert::Certificate::from_der(leaf).ok()?;
    Some(cert.tbs_certificate.validity.not_after.to_system_time())
}

/// The leaf's subject as attribute -> value (`CN`, `O`, ...), read as notation-go reads it.
fn subject_of(leaf: &[u8]) -> Result<dn::Dn, String> {
    let cert = x509_cert::Certificate::from_der(leaf)
        .map_err(|e| format!("a notation signature's certificate is not X.509 DER ({e})"))?;
    dn::of_name(&cert.tbs_certificate.subject)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn data(policy: &[u8], certs: &[(&str, &[u8])]) -> BTreeMap<String, Vec<u8>> {
        let mut data = BTreeMap::from([(TRUST_POLICY.to_string(), policy.to_vec())]);
        for (name, bytes) in certs {
            data.insert(name.to_string(), bytes.to_vec());
        }
        data
    }

    fn statement(name: &str) -> serde_json::Value {
        serde_json::json!({"name": name, "registryScopes": ["*"],
            "signatureVerification": {"level": "strict"}, "trustStores": ["ca:x"],
            "trustedIdentities": ["*"]})
    }

    #[test]
    fn the_trust_policy_and_store_are_bounded_and_checked() {
        let big = vec![b' '; MAX_ENTRY_BYTES + 1];
        let err = NotationTrust::from_secret(&data(&big, &[])).unwrap_err();
        assert!(err.contains("is over 262144 bytes"), "{err}");
        let many = serde_json::json!({"version": "1.0",
            "trustPolicies": vec![statement("p"); MAX_POLICIES + 1]});
        let err = NotationTrust::from_secret(&data(many.to_string().as_bytes(), &[])).unwrap_err();
        assert!(err.contains("over 32 statements"), "{err}");
        let one = serde_json::json!({"version": "1.0", "trustPolicies": [statement("p")]});
        let err = NotationTrust::from_secret(&data(one.to_string().as_bytes(), &[])).unwrap_err();
        assert!(err.contains("no CA certificate"), "{err}");
        let err =
            NotationTrust::from_secret(&data(one.to_string().as_bytes(), &[("ca.crt", &big)]))
                .unwrap_err();
        assert!(err.contains("entry 'ca.crt' is over"), "{err}");
        let err = NotationTrust::from_secret(&BTreeMap::new()).unwrap_err();
        assert!(err.contains("no trustpolicy.json entry"), "{err}");
        let bad_level = serde_json::json!({"version": "1.0", "trustPolicies": [
            {"name": "p", "registryScopes": ["*"], "signatureVerification": {"level": "lax"}}]});
        let err = parse_policy(bad_level.to_string().as_bytes()).unwrap_err();
        assert!(err.contains("unknown level 'lax'"), "{err}");
        let bad_identity = serde_json::json!({"version": "1.0", "trustPolicies": [
            {"name": "p", "registryScopes": ["*"], "signatureVerification": {"level": "strict"},
             "trustedIdentities": ["CN=x"]}]});
        let err = parse_policy(bad_identity.to_string().as_bytes()).unwrap_err();
        assert!(err.contains("is not x509.subject"), "{err}");
    }

    #[test]
    fn envelopes_are_bounded_and_must_be_notations() {
        let err = Envelope::parse("application/jose+json", &vec![b' '; MAX_ENVELOPE_BYTES + 1])
            .err()
            .unwrap();
        assert!(err.contains("over 262144 bytes"), "{err}");
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let jws = |header: serde_json::Value, x5c: usize| {
            serde_json::to_vec(&serde_json::json!({
                "protected": url.encode(header.to_string()), "payload": url.encode("{}"),
                "signature": url.encode("sig"), "header": {"x5c": vec!["AAAA"; x5c]}}))
            .unwrap()
        };
        let good = serde_json::json!({"alg": "PS256", "cty": "application/vnd.cncf.notary.payload.v1+json",
            "io.cncf.notary.signingScheme": "notary.x509", "crit": ["io.cncf.notary.signingScheme"]});
        assert!(Envelope::parse("application/jose+json", &jws(good.clone(), 1)).is_ok());
        let err = Envelope::parse("application/jose+json", &jws(good.clone(), 9))
            .err()
            .unwrap();
        assert!(err.contains("over 8 certificates"), "{err}");
        let mut unknown = good.clone();
        unknown["crit"] = serde_json::json!(["io.cncf.notary.signingScheme", "x-unknown"]);
        let err = Envelope::parse("application/jose+json", &jws(unknown, 1))
            .err()
            .unwrap();
        assert!(err.contains("critical header 'x-unknown'"), "{err}");
        let mut scheme = good;
        scheme["io.cncf.notary.signingScheme"] = serde_json::json!("notary.x509.signingAuthority");
        let err = Envelope::parse("application/jose+json", &jws(scheme, 1))
            .err()
            .unwrap();
        assert!(err.contains("only notary.x509"), "{err}");
        let err = Envelope::parse("application/cose", b"\x01").err().unwrap();
        assert!(err.contains("not a COSE_Sign1"), "{err}");
        let err = Envelope::parse("text/plain", b"{}").err().unwrap();
        assert!(err.contains("neither JWS nor COSE"), "{err}");
    }
}
