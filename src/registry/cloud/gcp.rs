//! Google Cloud: an access token for user `oauth2accesstoken`, from Application Default
//! Credentials as Flux finds them (a `GOOGLE_APPLICATION_CREDENTIALS` file of type
//! `external_account` — workload identity federation, with service account impersonation — or
//! `authorized_user`; else the metadata server, `GCE_METADATA_HOST` overriding its address), or,
//! for object-level workload identity, from a ServiceAccount token exchanged at Google's STS
//! (audience from the `gcp.auth.fluxcd.io/workload-identity-provider` annotation, or GKE's
//! workload identity pool read from the metadata server), impersonating the annotated Google
//! service account when there is one.
//!
//! Written on our HTTP client rather than with `google-cloud-auth` (about 95 more crates, and
//! no way to route its requests through the per-host scheduler or an object's proxy).

use super::cache::expiry_in;
use super::http::CloudHttp;
use super::CloudError;
use reqwest::Method;
use serde::Deserialize;
use std::time::{Duration, SystemTime};
use tokio::sync::OnceCell;

/// The registry username for Google access tokens.
pub const USER: &str = "oauth2accesstoken";
const SCOPES: [&str; 2] = [
    "https://www.googleapis.com/auth/cloud-platform",
    "https://www.googleapis.com/auth/userinfo.email",
];
const STS_URL: &str = "https://sts.googleapis.com/v1/token";
const JWT_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:jwt";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn metadata_url(path: &str) -> String {
    let host = env("GCE_METADATA_HOST").unwrap_or_else(|| "metadata.google.internal".into());
    format!("http://{host}/computeMetadata/v1/{path}")
}

/// The controller's own token.
pub(super) async fn controller_token(http: &CloudHttp) -> Result<(String, SystemTime), CloudError> {
    if let Some(path) = env("GOOGLE_APPLICATION_CREDENTIALS") {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("google: reading credentials file {path}: {e}"))?;
        let file: CredentialsFile = serde_json::from_str(&text)
            .map_err(|e| format!("google: credentials file {path}: {e}"))?;
        return file_token(file, http).await;
    }
    let url = metadata_url("instance/service-accounts/default/token");
    let request = http
        .request(Method::GET, &url)?
        .query(&[("scopes", SCOPES.join(","))])
        .header("Metadata-Flavor", "Google");
    let token: OAuthToken = http
        .json(
            &format!("compute: Received error from metadata server GET {url}"),
            request,
        )
        .await?;
    Ok(token.into_pair())
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum CredentialsFile {
    ExternalAccount(ExternalAccount),
    AuthorizedUser {
        client_id: String,
        client_secret: String,
        refresh_token: String,
        #[serde(default)]
        token_uri: Option<String>,
    },
    ServiceAccount {},
}

#[derive(Deserialize)]
struct ExternalAccount {
    audience: String,
    subject_token_type: String,
    #[serde(default)]
    token_url: Option<String>,
    #[serde(default)]
    service_account_impersonation_url: Option<String>,
    credential_source: CredentialSource,
}

#[derive(Deserialize)]
struct CredentialSource {
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    format: Option<SourceFormat>,
    #[serde(default)]
    environment_id: Option<String>,
}

#[derive(Deserialize)]
struct SourceFormat {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    subject_token_field_name: String,
}

async fn file_token(
    file: CredentialsFile,
    http: &CloudHttp,
) -> Result<(String, SystemTime), CloudError> {
    match file {
        CredentialsFile::ExternalAccount(account) => {
            let subject = subject_token(&account.credential_source, http).await?;
            let url = account.token_url.as_deref().unwrap_or(STS_URL);
            let token = sts_exchange(
                url,
                &account.audience,
                &account.subject_token_type,
                &subject,
                http,
            )
            .await?;
            match &account.service_account_impersonation_url {
                Some(url) => impersonate(url, &token.0, http).await,
                None => Ok(token),
            }
        }
        CredentialsFile::AuthorizedUser {
            client_id,
            client_secret,
            refresh_token,
            token_uri,
        } => {
            let url = token_uri.unwrap_or_else(|| "https://oauth2.googleapis.com/token".into());
            let form = [
                ("grant_type", "refresh_token"),
                ("client_id", &client_id),
                ("client_secret", &client_secret),
                ("refresh_token", &refresh_token),
            ];
            let request = http.request(Method::POST, &url)?.form(&form);
            let token: OAuthToken = http.json(&format!("oauth2: POST {url}"), request).await?;
            Ok(token.into_pair())
        }
        CredentialsFile::ServiceAccount {} => Err(
            "google: service account key files are not supported; use the metadata server, \
             workload identity federation (an external_account file) or object-level workload \
             identity (docs/providers/gcp.md)"
                .into(),
        ),
    }
}

/// The subject token of an external account: a file or a URL, as text or a JSON field.
async fn subject_token(source: &CredentialSource, http: &CloudHttp) -> Result<String, CloudError> {
    if source.environment_id.is_some() {
        return Err("google: external accounts sourced from AWS are not supported".into());
    }
    let raw = if let Some(path) = &source.file {
        std::fs::read_to_string(path)
            .map_err(|e| format!("google: reading subject token file {path}: {e}"))?
    } else if let Some(url) = &source.url {
        let mut request = http.request(Method::GET, url)?;
        for (k, v) in &source.headers {
            request = request.header(k, v);
        }
        let answer = http.send(request).await?;
        if !answer.status.is_success() {
            return Err(format!("google: subject token URL {url}: {}", answer.status).into());
        }
        String::from_utf8_lossy(&answer.body).into_owned()
    } else {
        return Err("google: the external account's credential_source has no file or url".into());
    };
    match &source.format {
        Some(f) if f.kind == "json" => {
            let value: serde_json::Value = serde_json::from_str(&raw)
                .map_err(|e| format!("google: subject token is not JSON: {e}"))?;
            value
                .get(&f.subject_token_field_name)
                .and_then(|v| v.as_str())
                .map(str::to_string)
                .ok_or_else(|| {
                    CloudError::from(format!(
                        "google: subject token has no field '{}'",
                        f.subject_token_field_name
                    ))
                })
        }
        _ => Ok(raw.trim().to_string()),
    }
}

/// An OAuth 2.0 token exchange (RFC 8693) at Google's STS.
async fn sts_exchange(
    url: &str,
    audience: &str,
    subject_token_type: &str,
    subject: &str,
    http: &CloudHttp,
) -> Result<(String, SystemTime), CloudError> {
    let scope = SCOPES.join(" ");
    let form = [
        (
            "grant_type",
            "urn:ietf:params:oauth:grant-type:token-exchange",
        ),
        ("audience", audience),
        ("scope", &scope),
        (
            "requested_token_type",
            "urn:ietf:params:oauth:token-type:access_token",
        ),
        ("subject_token", subject),
        ("subject_token_type", subject_token_type),
    ];
    let request = http.request(Method::POST, url)?.form(&form);
    let token: OAuthToken = http
        .json(
            &format!("oauth2/google: status code from POST {url}"),
            request,
        )
        .await?;
    Ok(token.into_pair())
}

/// IAM Credentials `generateAccessToken` for a Google service account.
async fn impersonate(
    url: &str,
    bearer: &str,
    http: &CloudHttp,
) -> Result<(String, SystemTime), CloudError> {
    let body = serde_json::json!({ "scope": SCOPES, "lifetime": "3600s" });
    let request = http
        .request(Method::POST, url)?
        .bearer_auth(bearer)
        .json(&body);
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Impersonated {
        access_token: String,
        expire_time: String,
    }
    let answer: Impersonated = http
        .json(&format!("impersonate: POST {url}"), request)
        .await?;
    let expires = answer
        .expire_time
        .parse::<jiff::Timestamp>()
        .map_err(|e| format!("impersonate: expireTime '{}': {e}", answer.expire_time))?;
    Ok((answer.access_token, SystemTime::from(expires)))
}

/// GKE's cluster identity, read once from the metadata server.
static GKE: OnceCell<(String, String, String)> = OnceCell::const_new();

async fn gke_metadata(http: &CloudHttp) -> Result<&'static (String, String, String), CloudError> {
    GKE.get_or_try_init(|| async {
        let get = |path: &'static str, what: &'static str| async move {
            let url = metadata_url(path);
            let request = http
                .request(Method::GET, &url)?
                .header("Metadata-Flavor", "Google");
            let fail = |e: CloudError| {
                e.within(format!(
                    "failed to get GKE cluster {what} from the metadata service"
                ))
            };
            let answer = http.send(request).await.map_err(fail)?;
            if !answer.status.is_success() {
                return Err(fail(answer.status.to_string().into()));
            }
            let value = String::from_utf8_lossy(&answer.body).trim().to_string();
            match value.is_empty() {
                true => Err(fail("empty value".into())),
                false => Ok(value),
            }
        };
        let project = get("project/project-id", "project ID").await?;
        let location = get("instance/attributes/cluster-location", "location").await?;
        let name = get("instance/attributes/cluster-name", "name").await?;
        Ok((project, location, name))
    })
    .await
}

/// The audiences of the ServiceAccount token: the federation provider's, or GKE's pool.
pub(super) async fn token_audience(
    provider_audience: Option<&str>,
    http: &CloudHttp,
) -> Result<String, CloudError> {
    match provider_audience {
        Some(audience) => Ok(audience.to_string()),
        None => Ok(format!("{}.svc.id.goog", gke_metadata(http).await?.0)),
    }
}

/// A ServiceAccount token exchanged at STS, then for the annotated Google service account.
pub(super) async fn service_account_token(
    oidc_token: &str,
    provider_audience: Option<&str>,
    email: Option<&str>,
    http: &CloudHttp,
) -> Result<(String, SystemTime), CloudError> {
    let audience = match provider_audience {
        Some(audience) => audience.to_string(),
        None => {
            let (project, location, name) = gke_metadata(http).await?;
            format!(
                "identitynamespace:{project}.svc.id.goog:https://container.googleapis.com/v1/projects/{project}/locations/{location}/clusters/{name}"
            )
        }
    };
    let token = sts_exchange(STS_URL, &audience, JWT_TOKEN_TYPE, oidc_token, http).await?;
    match email {
        Some(email) => {
            let url = format!(
                "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/{email}:generateAccessToken"
            );
            impersonate(&url, &token.0, http).await
        }
        None => Ok(token),
    }
}

#[derive(Deserialize)]
pub(super) struct OAuthToken {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

impl OAuthToken {
    pub(super) fn into_pair(self) -> (String, SystemTime) {
        let life = Duration::from_secs(self.expires_in.unwrap_or(3600));
        (self.access_token, expiry_in(life))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_adc_files() {
        let wif = r#"{"type":"external_account","audience":"//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/k",
            "subject_token_type":"urn:ietf:params:oauth:token-type:jwt","token_url":"https://sts.googleapis.com/v1/token",
            "service_account_impersonation_url":"https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/a@b.iam.gserviceaccount.com:generateAccessToken",
            "credential_source":{"file":"/var/run/token","format":{"type":"text"}}}"#;
        match serde_json::from_str::<CredentialsFile>(wif).unwrap() {
            CredentialsFile::ExternalAccount(a) => {
                assert_eq!(a.credential_source.file.as_deref(), Some("/var/run/token"));
                assert!(a.service_account_impersonation_url.is_some());
            }
            _ => panic!("not an external account"),
        }
        let key = r#"{"type":"service_account","private_key":"x"}"#;
        assert!(matches!(
            serde_json::from_str::<CredentialsFile>(key).unwrap(),
            CredentialsFile::ServiceAccount {}
        ));
    }
}
