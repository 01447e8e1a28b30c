//! Fuzzing entry point for what cloud providers answer (token endpoints, the ACR exchange,
//! metadata servers): bytes a node-local or remote endpoint controls. Not an API.

use super::{aws, azure, gcp, http};
use std::time::{Duration, SystemTime};

/// One answer read every way the providers' answers are read: as an Entra ID or managed
/// identity token, a Google token, an ACR refresh token's JWT, an ECR authorization token and
/// an error body. Never a panic; expiries are within the bound kept for tokens, and the
/// error text is a short excerpt.
pub(crate) fn answers(data: &[u8]) {
    let text = std::str::from_utf8(data).unwrap_or_default();
    let bound = SystemTime::now() + super::cache::MAX_TOKEN_LIFE + Duration::from_secs(60);
    if let Ok(token) = serde_json::from_slice::<azure::OAuthToken>(data) {
        assert!(token.expiry() <= bound);
    }
    if let Ok(token) = serde_json::from_slice::<gcp::OAuthToken>(data) {
        assert!(token.into_pair().1 <= bound);
    }
    if let Ok(at) = azure::jwt_expiry(text.trim()) {
        assert!(at <= bound);
    }
    if let Ok(credentials) = aws::split_token(text.trim()) {
        assert!(!credentials.username.contains(':') && !credentials.password.contains(':'));
    }
    let error = http::error_text(data);
    assert!(
        error.len() <= data.len() + 4 * 300 + 8,
        "{} bytes",
        error.len()
    );
}
