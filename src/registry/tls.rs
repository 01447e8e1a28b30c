//! TLS material for registry connections (docs/registry.md): an extra CA, added to
//! the system roots, and a client certificate for mTLS. Verification is never skipped.
//!
//! The material comes in as the data of a Secret (`certSecretRef`), or as files from the
//! command line, and is checked here once, so a bad PEM is a clear configuration error and not
//! a handshake failure on every scan.

use super::ConfigError;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::collections::BTreeMap;

/// A validated CA and/or client certificate, as PEM.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TlsMaterial {
    ca: Option<Vec<u8>>,
    /// Certificate chain followed by the private key, the form reqwest's `Identity` reads.
    identity: Option<Vec<u8>>,
}

/// Which Secret keys a value was read from, to log a deprecation for the legacy names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyNames {
    Current,
    /// `caFile`, `certFile`, `keyFile`: deprecated, still read.
    Legacy,
}

impl TlsMaterial {
    /// Reads a `certSecretRef` Secret's data: `tls.crt` + `tls.key` and/or `ca.crt`, falling back
    /// to the legacy `certFile`, `keyFile`, `caFile`. Returns which names were used.
    pub fn from_secret_data(
        data: &BTreeMap<String, Vec<u8>>,
    ) -> Result<(Self, KeyNames), ConfigError> {
        let mut legacy = false;
        let mut get = |key: &str, old: &str| match data.get(key) {
            Some(v) => Some(v.as_slice()),
            None => {
                let v = data.get(old).map(Vec::as_slice);
                legacy |= v.is_some();
                v
            }
        };
        let cert = get("tls.crt", "certFile");
        let key = get("tls.key", "keyFile");
        let ca = get("ca.crt", "caFile");
        let material = TlsMaterial::new(ca, cert, key)?;
        let names = if legacy {
            KeyNames::Legacy
        } else {
            KeyNames::Current
        };
        Ok((material, names))
    }

    /// Checks and keeps the material; with no CA and no pair at all it is an error.
    pub fn new(
        ca: Option<&[u8]>,
        cert: Option<&[u8]>,
        key: Option<&[u8]>,
    ) -> Result<Self, ConfigError> {
        let identity = match (cert, key) {
            (Some(cert), Some(key)) => Some(check_pair(cert, key)?),
            (Some(_), None) => return Err(ConfigError::MissingPrivateKey),
            (None, Some(_)) => return Err(ConfigError::MissingCertificate),
            (None, None) => None,
        };
        let ca = ca.map(check_ca).transpose()?;
        if ca.is_none() && identity.is_none() {
            return Err(ConfigError::NoTlsMaterial);
        }
        Ok(TlsMaterial { ca, identity })
    }

    /// Feeds the material into `hasher`: the identity of an HTTP client built with it.
    pub(super) fn hash_into(&self, hasher: &mut sha2::Sha256) {
        use sha2::Digest;
        for part in [&self.ca, &self.identity] {
            let bytes = part.as_deref().unwrap_or_default();
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        }
    }

    /// Adds the CA to the system roots and presents the client certificate.
    pub(super) fn apply(
        &self,
        mut builder: reqwest::ClientBuilder,
    ) -> Result<reqwest::ClientBuilder, ConfigError> {
        if let Some(ca) = &self.ca {
            let certs =
                reqwest::Certificate::from_pem_bundle(ca).map_err(|_| ConfigError::InvalidCa)?;
            builder = builder.tls_certs_merge(certs);
        }
        if let Some(identity) = &self.identity {
            let identity =
                reqwest::Identity::from_pem(identity).map_err(|_| ConfigError::InvalidKeyPair)?;
            builder = builder.identity(identity);
        }
        Ok(builder)
    }
}

/// Says what is there, never the private key.
impl std::fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsMaterial")
            .field("ca", &self.ca.is_some())
            .field("client_certificate", &self.identity.is_some())
            .finish()
    }
}

fn check_ca(pem: &[u8]) -> Result<Vec<u8>, ConfigError> {
    let mut roots = rustls::RootCertStore::empty();
    let mut count = 0;
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|_| ConfigError::InvalidCa)?;
        roots.add(cert).map_err(|_| ConfigError::InvalidCa)?;
        count += 1;
    }
    if count == 0 {
        return Err(ConfigError::InvalidCa);
    }
    Ok(pem.to_vec())
}

/// The pair must parse and the key must belong to the certificate.
fn check_pair(cert: &[u8], key: &[u8]) -> Result<Vec<u8>, ConfigError> {
    let chain = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| ConfigError::InvalidKeyPair)?;
    if chain.is_empty() {
        return Err(ConfigError::InvalidKeyPair);
    }
    let private = PrivateKeyDer::from_pem_slice(key).map_err(|_| ConfigError::InvalidKeyPair)?;
    rustls::sign::CertifiedKey::from_der(chain, private, &rustls::crypto::ring::default_provider())
        .map_err(|_| ConfigError::InvalidKeyPair)?;
    let mut identity = cert.to_vec();
    if !identity.ends_with(b"\n") {
        identity.push(b'\n');
    }
    identity.extend_from_slice(key);
    Ok(identity)
}
