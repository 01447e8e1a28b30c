//! Azure: an Entra ID access token for the registry cloud's Resource Manager scope, as Azure's
//! `DefaultAzureCredential` finds one without shelling out (a client secret in the environment,
//! workload identity's federated token file, then managed identity), or, for object-level
//! workload identity, from a ServiceAccount token as the client assertion; then exchanged at
//! the registry's `/oauth2/exchange` for an ACR refresh token, the password of user
//! `00000000-0000-0000-0000-000000000000`, which expires at its JWT `exp`.
//!
//! Written on our HTTP client rather than with `azure_identity` (a beta release whose HTTP
//! stack would bypass the per-host scheduler): the flows are two documented form posts.

use super::cache::{expiry_at, expiry_in};
use super::http::CloudHttp;
use super::CloudError;
use crate::registry::Credentials;
use base64::Engine;
use reqwest::Method;
use serde::Deserialize;
use std::time::{Duration, SystemTime};

/// The ACR username for refresh tokens.
pub const ACR_USER: &str = "00000000-0000-0000-0000-000000000000";
/// The audience Entra ID expects of federated ServiceAccount tokens.
pub const AUDIENCE: &str = "api://AzureADTokenExchange";
const AUTHORITY: &str = "https://login.microsoftonline.com/";
const IMDS: &str = "http://169.254.169.254";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// How a client proves itself to Entra ID.
pub(super) enum ClientProof {
    Secret(String),
    Assertion(String),
}

/// The controller's own token for `scope`.
pub(super) async fn controller_token(
    scope: &str,
    http: &CloudHttp,
) -> Result<(String, SystemTime), CloudError> {
    let (tenant, client) = (env("AZURE_TENANT_ID"), env("AZURE_CLIENT_ID"));
    if let (Some(tenant), Some(client), Some(secret)) =
        (&tenant, &client, env("AZURE_CLIENT_SECRET"))
    {
        return entra_token(tenant, client, ClientProof::Secret(secret), scope, http).await;
    }
    if let (Some(tenant), Some(client), Some(file)) =
        (&tenant, &client, env("AZURE_FEDERATED_TOKEN_FILE"))
    {
        let assertion = std::fs::read_to_string(&file)
            .map_err(|e| format!("WorkloadIdentityCredential: reading {file}: {e}"))?;
        let proof = ClientProof::Assertion(assertion.trim().to_string());
        return entra_token(tenant, client, proof, scope, http).await;
    }
    managed_identity(scope, client.as_deref(), http).await
}

/// The OAuth2 client-credentials grant at `{AZURE_AUTHORITY_HOST}/{tenant}/oauth2/v2.0/token`.
pub(super) async fn entra_token(
    tenant: &str,
    client: &str,
    proof: ClientProof,
    scope: &str,
    http: &CloudHttp,
) -> Result<(String, SystemTime), CloudError> {
    let authority = env("AZURE_AUTHORITY_HOST").unwrap_or_else(|| AUTHORITY.to_string());
    let url = format!(
        "{}/{tenant}/oauth2/v2.0/token",
        authority.trim_end_matches('/')
    );
    let mut form = vec![
        ("grant_type", "client_credentials".to_string()),
        ("client_id", client.to_string()),
        ("scope", scope.to_string()),
    ];
    match proof {
        ClientProof::Secret(secret) => form.push(("client_secret", secret)),
        ClientProof::Assertion(assertion) => {
            form.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
            ));
            form.push(("client_assertion", assertion));
        }
    }
    let request = http.request(Method::POST, &url)?.form(&form);
    let answer: OAuthToken = http.json(&format!("POST {url}"), request).await?;
    let expiry = answer.expiry();
    Ok((answer.access_token, expiry))
}

/// Managed identity: App Service / Container Apps (`IDENTITY_ENDPOINT`, `IDENTITY_HEADER`), else
/// the instance metadata service (`AZURE_POD_IDENTITY_AUTHORITY_HOST` overrides its address).
async fn managed_identity(
    scope: &str,
    client: Option<&str>,
    http: &CloudHttp,
) -> Result<(String, SystemTime), CloudError> {
    let resource = scope.trim_end_matches("/.default");
    let (url, header, version) = match (env("IDENTITY_ENDPOINT"), env("IDENTITY_HEADER")) {
        (Some(endpoint), Some(secret)) => (endpoint, ("X-IDENTITY-HEADER", secret), "2019-08-01"),
        _ => {
            let host = env("AZURE_POD_IDENTITY_AUTHORITY_HOST").unwrap_or_else(|| IMDS.into());
            let url = format!(
                "{}/metadata/identity/oauth2/token",
                host.trim_end_matches('/')
            );
            (url, ("Metadata", "true".to_string()), "2018-02-01")
        }
    };
    let mut query = vec![("api-version", version), ("resource", resource)];
    if let Some(client) = client {
        query.push(("client_id", client));
    }
    let request = http
        .request(Method::GET, &url)?
        .query(&query)
        .header(header.0, header.1);
    let answer: OAuthToken = http
        .json(&format!("ManagedIdentityCredential: GET {url}"), request)
        .await?;
    let expiry = answer.expiry();
    Ok((answer.access_token, expiry))
}

/// Exchanges an Entra ID token at the registry for an ACR refresh token.
pub(super) async fn registry_credentials(
    registry: &str,
    access_token: &str,
    http: &CloudHttp,
) -> Result<(Credentials, SystemTime), CloudError> {
    let url = format!("https://{registry}/oauth2/exchange");
    let form = [
        ("grant_type", "access_token"),
        ("service", registry),
        ("access_token", access_token),
    ];
    let request = http.request(Method::POST, &url)?.form(&form);
    #[derive(Deserialize)]
    struct Exchange {
        refresh_token: String,
    }
    let answer: Exchange = http.json(&format!("POST {url}"), request).await?;
    let expires = jwt_expiry(&answer.refresh_token)?;
    Ok((
        Credentials {
            username: ACR_USER.into(),
            password: answer.refresh_token,
        },
        expires,
    ))
}

/// The `exp` claim of a JWT, read without verifying it (the registry verifies it).
pub fn jwt_expiry(token: &str) -> Result<SystemTime, CloudError> {
    let payload = token
        .split('.')
        .nth(1)
        .ok_or("token is malformed: the refresh token is not a JWT")?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|e| format!("token is malformed: {e}"))?;
    #[derive(Deserialize)]
    struct Claims {
        exp: Option<f64>,
    }
    let claims: Claims =
        serde_json::from_slice(&bytes).map_err(|e| format!("token is malformed: {e}"))?;
    let exp = claims.exp.ok_or("token has no exp claim")?;
    // `as` saturates: a negative or NaN exp is 0, an infinite one the latest time.
    Ok(expiry_at(exp as u64))
}

/// An OAuth2 token answer; `expires_in` is a number (Entra ID) or a string (managed identity).
#[derive(Deserialize)]
pub(super) struct OAuthToken {
    access_token: String,
    #[serde(default)]
    expires_in: Option<serde_json::Value>,
    #[serde(default)]
    expires_on: Option<serde_json::Value>,
}

impl OAuthToken {
    pub(super) fn expiry(&self) -> SystemTime {
        let number = |v: &serde_json::Value| match v {
            serde_json::Value::Number(n) => n.as_u64(),
            serde_json::Value::String(s) => s.parse().ok(),
            _ => None,
        };
        if let Some(on) = self.expires_on.as_ref().and_then(number) {
            return expiry_at(on);
        }
        let secs = self.expires_in.as_ref().and_then(number).unwrap_or(300);
        expiry_in(Duration::from_secs(secs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        let enc = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        format!("{}.{}.sig", enc(r#"{"alg":"RS256"}"#), enc(claims))
    }

    #[test]
    fn refresh_token_expiry_is_its_exp_claim() {
        let at = jwt_expiry(&jwt(r#"{"exp":1900000000,"aud":"myreg.azurecr.io"}"#)).unwrap();
        assert_eq!(
            at,
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000)
        );
        assert_eq!(
            jwt_expiry(&jwt(r#"{"aud":"x"}"#)).unwrap_err().to_string(),
            "token has no exp claim"
        );
        assert!(jwt_expiry("opaque")
            .unwrap_err()
            .to_string()
            .contains("not a JWT"));
    }

    #[test]
    fn token_answers_give_their_expiry() {
        let parse = |s: &str| serde_json::from_str::<OAuthToken>(s).unwrap().expiry();
        assert_eq!(
            parse(r#"{"access_token":"t","expires_on":"1900000000"}"#),
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000)
        );
        let in_hour = parse(r#"{"access_token":"t","expires_in":3600}"#);
        let left = in_hour.duration_since(SystemTime::now()).unwrap();
        assert!(left > Duration::from_secs(3590) && left <= Duration::from_secs(3600));
    }
}
