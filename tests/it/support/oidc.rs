//! An OpenID Connect issuer of the tests' own on loopback: its discovery document and its key
//! (ES256) for Fulcio to check tokens with, and ID tokens it signs for an email address, as an
//! identity provider's (Google's, GitHub's) are checked by Fulcio's `email` issuer type. A few
//! dozen lines of HTTP/1.1 on std's sockets: one connection a request, closed after the answer.

use base64::Engine;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub struct OidcIssuer {
    pub url: String,
    key: SigningKey,
    stop: Arc<AtomicBool>,
    port: u16,
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl OidcIssuer {
    pub fn start() -> OidcIssuer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}");
        let key = SigningKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
        let point = key.verifying_key().to_encoded_point(false);
        let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig",
            "kid": "test", "x": b64url(point.x().unwrap()), "y": b64url(point.y().unwrap())}]})
        .to_string();
        let discovery = json!({"issuer": url, "jwks_uri": format!("{url}/keys"),
            "authorization_endpoint": format!("{url}/auth"), "token_endpoint": format!("{url}/token"),
            "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"]})
        .to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    answer(stream, &discovery, &jwks);
                }
            }
        });
        OidcIssuer {
            url,
            key,
            stop,
            port,
        }
    }

    /// An ID token for `email` (verified), for the audience `sigstore`, valid ten minutes.
    pub fn token(&self, email: &str) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let header = json!({"alg": "ES256", "typ": "JWT", "kid": "test"});
        let claims = json!({"iss": self.url, "sub": email, "aud": "sigstore", "iat": now,
            "exp": now + 600, "email": email, "email_verified": true});
        let signed = format!(
            "{}.{}",
            b64url(header.to_string().as_bytes()),
            b64url(claims.to_string().as_bytes())
        );
        let signature: Signature = self.key.sign(signed.as_bytes());
        format!("{signed}.{}", b64url(&signature.to_bytes()))
    }
}

/// Answers one request: the discovery document, the keys, or 404.
fn answer(mut stream: TcpStream, discovery: &str, jwks: &str) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    // The headers, up to the blank line; a GET has no body.
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    let path = request.split(' ').nth(1).unwrap_or_default();
    let (status, body) = match path {
        "/.well-known/openid-configuration" => ("200 OK", discovery),
        "/keys" => ("200 OK", jwks),
        _ => ("404 Not Found", "{}"),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

impl Drop for OidcIssuer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}
