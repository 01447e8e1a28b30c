//! Authenticated delivery to the notification-controller, as Flux's RFC "Authenticate
//! in-cluster HTTP traffic" (fluxcd/flux2 #6032) asks of every event client: verified TLS
//! against the Flux CA bundle, and the Pod's projected ServiceAccount token (audience
//! `toolkit.fluxcd.io`) as a bearer token, read at each request (the kubelet rotates it) and
//! sent only over verified TLS. While servers still take plain HTTP, an `http://` address is
//! tried over verified TLS first and falls back to plain HTTP without the token, as the RFC's
//! clients do.

use super::NotifyError;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// A token is a JWT of a few KiB: a file past this is not one.
const MAX_TOKEN_BYTES: u64 = 16 * 1024;

/// Where the CA bundle and the token are (`--events-ca-file`, `--events-token-file`).
#[derive(Clone, Debug, Default)]
pub struct EventsAuth {
    pub ca_file: Option<PathBuf>,
    pub token_file: Option<PathBuf>,
}

/// The client that verifies the notification-controller against the CA bundle, built again
/// when the bundle's file changes (a mounted ConfigMap is updated in place). A bundle not
/// there (an optional ConfigMap not created yet) is none: plain HTTP for an `http://` address.
#[derive(Debug)]
pub(super) struct Verified {
    path: PathBuf,
    built: Mutex<Built>,
}

/// When the bundle's file was changed, and the client trusting it (none without the file).
type Built = (Option<SystemTime>, Option<reqwest::Client>);

impl Verified {
    pub fn new(path: &Path) -> Result<Verified, NotifyError> {
        let built = build(path)?;
        Ok(Verified {
            path: path.to_path_buf(),
            built: Mutex::new(built),
        })
    }

    /// The client for the bundle as it is now; `None` while there is none.
    pub fn client(&self) -> Result<Option<reqwest::Client>, NotifyError> {
        let changed = modified(&self.path);
        let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
        if changed != built.0 {
            *built = build(&self.path)?;
        }
        Ok(built.1.clone())
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// A client trusting the system roots and the bundle at `path`.
fn build(path: &Path) -> Result<Built, NotifyError> {
    let unreadable = |why: String| NotifyError::Auth(format!("{}: {why}", path.display()));
    let Some(modified) = modified(path) else {
        return Ok((None, None));
    };
    let pem = std::fs::read(path).map_err(|e| unreadable(e.to_string()))?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|_| unreadable("not a PEM bundle of certificates".into()))?;
    if certs.is_empty() {
        return Err(unreadable("holds no certificate".into()));
    }
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .tls_certs_merge(certs)
        .build()
        .map_err(NotifyError::Client)?;
    Ok((Some(modified), Some(client)))
}

/// The token in `path`, read now.
pub(super) fn token(path: &Path) -> Result<String, NotifyError> {
    let unreadable = |why: &str| NotifyError::Auth(format!("{}: {why}", path.display()));
    let size = std::fs::metadata(path)
        .map_err(|e| unreadable(&e.to_string()))?
        .len();
    if size > MAX_TOKEN_BYTES {
        return Err(unreadable("over 16 KiB: not a ServiceAccount token"));
    }
    let text = std::fs::read_to_string(path).map_err(|e| unreadable(&e.to_string()))?;
    let token = text.trim();
    match token.is_empty() || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        true => Err(unreadable("not a token")),
        false => Ok(token.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token of a few KiB is read, trimmed; past 16 KiB, or with spaces inside, it is not.
    #[test]
    fn a_token_is_read_within_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let jwt = "e".repeat(2048);
        std::fs::write(&path, format!("{jwt}\n")).unwrap();
        assert_eq!(token(&path).unwrap(), jwt);
        std::fs::write(&path, "e".repeat(16 * 1024)).unwrap();
        assert!(token(&path).is_ok(), "16 KiB is within the bound");
        std::fs::write(&path, "e".repeat(16 * 1024 + 1)).unwrap();
        assert!(token(&path)
            .unwrap_err()
            .to_string()
            .contains("over 16 KiB"));
        std::fs::write(&path, "a b").unwrap();
        assert!(token(&path).is_err());
    }

    /// No bundle: no client; a bundle: a client; a file with no certificate: an error naming it.
    #[test]
    fn the_bundle_makes_the_client_once_it_is_there() {
        crate::registry::install_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.crt");
        let verified = Verified::new(&path).unwrap();
        assert!(verified.client().unwrap().is_none());
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = params
            .self_signed(&rcgen::KeyPair::generate().unwrap())
            .unwrap();
        std::fs::write(&path, ca.pem()).unwrap();
        assert!(verified.client().unwrap().is_some());
        std::fs::write(&path, "not a certificate").unwrap();
        let err = Verified::new(&path).unwrap_err().to_string();
        assert!(err.contains("ca.crt: holds no certificate"), "{err}");
    }
}
