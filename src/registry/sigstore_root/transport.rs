//! tough's transport over our HTTP client: the TUF mirror is fetched with the process's one
//! crypto provider, its proxy settings from the environment (`HTTPS_PROXY`), a timeout, and a
//! bound on every file before tough's own per-role limits apply. Every file it serves is
//! recorded, so that a read tough accepts can be kept whole and verified again (tuf.rs).

use futures::Stream;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tough::{Bytes, Transport, TransportError, TransportErrorKind};
use url::Url;

/// tough's `TransportStream`, which it does not export.
type TransportStream = Pin<Box<dyn Stream<Item = Result<Bytes, TransportError>> + Send>>;

/// The largest file read from a mirror: Sigstore's targets.json is tens of KiB, a target (the
/// trusted root) at most 256 KiB.
pub const MAX_FILE_BYTES: usize = 4 << 20;
/// One request's deadline.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// The files a mirror served, by URL, in the order they were read.
pub type Recorded = Arc<Mutex<Vec<(Url, Vec<u8>)>>>;

#[derive(Debug, Clone)]
pub struct Http {
    client: reqwest::Client,
    recorded: Recorded,
    /// The first fetch that failed otherwise than "not found" (no answer, an HTTP error), and
    /// why: tough takes a next root it could not fetch for none, and may then say "expired" of
    /// an old anchor when the mirror was only out of reach.
    failure: Arc<Mutex<Option<String>>>,
}

impl Http {
    pub fn new() -> Result<Http, String> {
        crate::registry::install_crypto_provider();
        let client = reqwest::Client::builder()
            .user_agent(concat!("image-reflector/", env!("CARGO_PKG_VERSION")))
            .timeout(TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| crate::registry::error_chain(&e))?;
        Ok(Http {
            client,
            recorded: Recorded::default(),
            failure: Arc::default(),
        })
    }

    /// The first fetch that failed otherwise than "not found", and why.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().expect("failure lock").clone()
    }

    /// What this transport has served so far.
    pub fn recorded(&self) -> Recorded {
        self.recorded.clone()
    }
}

#[tough::async_trait]
impl Transport for Http {
    async fn fetch(&self, url: Url) -> Result<TransportStream, TransportError> {
        let failed = |kind, e: String| {
            let mut failure = self.failure.lock().expect("failure lock");
            failure.get_or_insert_with(|| format!("{url}: {e}"));
            TransportError::new_with_cause(kind, url.as_str(), e)
        };
        if !matches!(url.scheme(), "http" | "https") {
            return Err(TransportError::new(
                TransportErrorKind::UnsupportedUrlScheme,
                url.as_str(),
            ));
        }
        let mut response = self
            .client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| failed(TransportErrorKind::Other, crate::registry::error_chain(&e)))?;
        let status = response.status();
        // TUF asks whether the next root exists: a missing file is not a failure then.
        if status == reqwest::StatusCode::NOT_FOUND || status == reqwest::StatusCode::FORBIDDEN {
            return Err(TransportError::new(
                TransportErrorKind::FileNotFound,
                url.as_str(),
            ));
        }
        if !status.is_success() {
            return Err(failed(TransportErrorKind::Other, format!("HTTP {status}")));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| failed(TransportErrorKind::Other, crate::registry::error_chain(&e)))?
        {
            if body.len() + chunk.len() > MAX_FILE_BYTES {
                return Err(failed(
                    TransportErrorKind::Other,
                    format!("over {MAX_FILE_BYTES} bytes"),
                ));
            }
            body.extend_from_slice(&chunk);
        }
        let mut recorded = self.recorded.lock().expect("recorded lock");
        recorded.push((url.clone(), body.clone()));
        drop(recorded);
        let once = futures::stream::once(async move { Ok(Bytes::from(body)) });
        Ok(Box::pin(once))
    }
}
