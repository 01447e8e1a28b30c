//! The providers' stand-ins for the cloud login tests: host names, a CA for them, and fake ECR,
//! STS, Entra ID and registry endpoints (the fault server over TLS), each checking what a real
//! one would before answering.

use crate::support::distribution::Pki;
use crate::support::fault_server::{FaultServer, Reply, Seen};
use base64::Engine;
use std::time::{Duration, SystemTime};

pub const ECR_HOST: &str = "123456789012.dkr.ecr.eu-west-1.amazonaws.com";
pub const ECR_API: &str = "api.ecr.eu-west-1.amazonaws.com";
pub const STS_EU: &str = "sts.eu-west-1.amazonaws.com";
pub const ACR_HOST: &str = "myreg.azurecr.io";
pub const ENTRA: &str = "login.microsoftonline.com";
pub const GAR_HOST: &str = "europe-docker.pkg.dev";
pub const GOOGLE_STS: &str = "sts.googleapis.com";
pub const GOOGLE_IAM: &str = "iamcredentials.googleapis.com";

/// One CA and a certificate for every host the tests stand in for.
pub fn cloud_pki() -> Pki {
    Pki::for_hosts(&[
        ECR_HOST,
        ECR_API,
        STS_EU,
        ACR_HOST,
        ENTRA,
        GAR_HOST,
        GOOGLE_STS,
        GOOGLE_IAM,
        "localhost",
        "127.0.0.1",
    ])
}

pub fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// An unsigned JWT with these claims (what ACR's refresh tokens look like to a client).
pub fn jwt(claims: serde_json::Value) -> String {
    let enc = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    format!(
        "{}.{}.c2ln",
        enc(r#"{"alg":"RS256","typ":"JWT"}"#),
        enc(&claims.to_string())
    )
}

pub fn epoch(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs()
}

/// A form body's field (URL-decoded).
pub fn form_field(seen: &Seen, key: &str) -> Option<String> {
    let body = String::from_utf8_lossy(&seen.body).into_owned();
    body.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| {
            let v = v.replace('+', " ");
            let bytes = v.as_bytes();
            let mut out = Vec::new();
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i] == b'%' && i + 2 < bytes.len() {
                    if let Ok(b) = u8::from_str_radix(&v[i + 1..i + 3], 16) {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                }
                out.push(bytes[i]);
                i += 1;
            }
            String::from_utf8_lossy(&out).into_owned()
        })
    })
}

/// The ECR API: `GetAuthorizationToken` answers `AWS:<password>`, valid for `life`.
pub async fn ecr_api(pki: &Pki, password: &'static str, life: Duration) -> FaultServer {
    FaultServer::start_tls(&pki.server_cert, &pki.server_key, move |seen| {
        let target = seen.header("x-amz-target").unwrap_or("");
        if seen.method != "POST" || !target.ends_with(".GetAuthorizationToken") {
            return Reply::status(400);
        }
        Reply::json(
            200,
            serde_json::json!({ "authorizationData": [{
                "authorizationToken": b64(&format!("AWS:{password}")),
                "expiresAt": epoch(SystemTime::now() + life),
                "proxyEndpoint": format!("https://{ECR_HOST}"),
            }]}),
        )
        .header("Content-Type", "application/x-amz-json-1.1")
    })
    .await
}

/// STS: `AssumeRoleWithWebIdentity` answers temporary credentials.
pub async fn sts_api(pki: &Pki) -> FaultServer {
    FaultServer::start_tls(&pki.server_cert, &pki.server_key, |seen| {
        if form_field(seen, "Action").as_deref() != Some("AssumeRoleWithWebIdentity") {
            return Reply::status(400);
        }
        let body = "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\
            <AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIAWEBIDENTITY</AccessKeyId>\
            <SecretAccessKey>web-secret</SecretAccessKey><SessionToken>web-session</SessionToken>\
            <Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>\
            <AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/flux/s</Arn>\
            <AssumedRoleId>AROATEST:s</AssumedRoleId></AssumedRoleUser>\
            </AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>r1</RequestId>\
            </ResponseMetadata></AssumeRoleWithWebIdentityResponse>";
        Reply::status(200)
            .header("Content-Type", "text/xml")
            .body(body)
    })
    .await
}

/// A registry that accepts only `user:password` (Basic), listing `tags` for `team/app`, and, for
/// ACR, the `/oauth2/exchange` that turns `entra_token` into the refresh token `password`.
pub async fn basic_registry(
    pki: &Pki,
    user: &'static str,
    password: String,
    entra_token: Option<&'static str>,
) -> FaultServer {
    FaultServer::start_tls(&pki.server_cert, &pki.server_key, move |seen| {
        if seen.path() == "/oauth2/exchange" {
            let ok = entra_token.is_some()
                && form_field(seen, "access_token").as_deref() == entra_token
                && form_field(seen, "grant_type").as_deref() == Some("access_token")
                && form_field(seen, "service").as_deref() == Some(ACR_HOST);
            return match ok {
                true => Reply::json(200, serde_json::json!({ "refresh_token": password })),
                false => Reply::json(
                    401,
                    serde_json::json!({"errors": [{"code": "UNAUTHORIZED"}]}),
                ),
            };
        }
        let expected = format!("Basic {}", b64(&format!("{user}:{password}")));
        if seen.header("authorization") != Some(expected.as_str()) {
            return Reply::status(401).header("WWW-Authenticate", "Basic realm=\"test\"");
        }
        match seen.path() {
            "/v2/" => Reply::json(200, serde_json::json!({})),
            "/v2/team/app/tags/list" => Reply::json(
                200,
                serde_json::json!({ "name": "team/app", "tags": ["1.0.0", "1.1.0"] }),
            ),
            _ => Reply::status(404),
        }
    })
    .await
}

/// Entra ID's token endpoint: answers `token` to a client-credentials grant for ACR's scope.
pub async fn entra_api(pki: &Pki, token: &'static str) -> FaultServer {
    FaultServer::start_tls(&pki.server_cert, &pki.server_key, move |seen| {
        let scope_ok =
            form_field(seen, "scope").as_deref() == Some("https://management.azure.com/.default");
        let grant_ok = form_field(seen, "grant_type").as_deref() == Some("client_credentials");
        if !seen.path().ends_with("/oauth2/v2.0/token") || !scope_ok || !grant_ok {
            return Reply::json(
                400,
                serde_json::json!({"error": "invalid_request", "error_description": "AADSTS900144: bad request"}),
            );
        }
        if form_field(seen, "client_assertion").as_deref() == Some("revoked.jwt") {
            return Reply::json(
                401,
                serde_json::json!({"error": "invalid_client",
                    "error_description": "AADSTS700024: Client assertion is not within its valid time range."}),
            );
        }
        Reply::json(
            200,
            serde_json::json!({"token_type": "Bearer", "expires_in": 3599, "access_token": token}),
        )
    })
    .await
}
