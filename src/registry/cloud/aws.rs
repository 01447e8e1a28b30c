//! AWS: credentials from the SDK's default chain (environment, profile, web identity / IRSA,
//! EKS Pod Identity, instance metadata) or, for object-level workload identity, from STS
//! `AssumeRoleWithWebIdentity`; then ECR's (or ECR Public's) `GetAuthorizationToken` in the
//! registry's region, whose token is `user:password`. The SDK's endpoint settings apply
//! (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_ECR`, `AWS_ENDPOINT_URL_STS`,
//! `AWS_EC2_METADATA_SERVICE_ENDPOINT`, FIPS and dual-stack switches).

use super::hosts::RegistryTarget;
use super::http::CloudHttp;
use super::smithy;
use super::CloudError;
use crate::registry::Credentials;
use aws_config::{BehaviorVersion, Region};
use aws_credential_types::provider::ProvideCredentials;
use aws_smithy_types::error::display::DisplayErrorContext;
use base64::Engine;
use std::time::SystemTime;

/// How long credentials without an expiry (static keys) are kept: the cache's own bound.
const NO_EXPIRY: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

async fn config(
    region: &str,
    http: &CloudHttp,
    credentials: Option<aws_credential_types::Credentials>,
) -> aws_config::SdkConfig {
    let loader = aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new(region.to_string()))
        .http_client(smithy::client(http));
    match credentials {
        Some(c) => loader.credentials_provider(c).load().await,
        None => loader.load().await,
    }
}

/// The controller's own credentials, from the default chain, asked in `region` (the ECR
/// host's: the node's identity works without AWS_REGION, as in Flux).
pub(super) async fn controller_credentials(
    region: &str,
    http: &CloudHttp,
) -> Result<(aws_credential_types::Credentials, SystemTime), CloudError> {
    let config = config(region, http, None).await;
    let provider = config
        .credentials_provider()
        .ok_or("the AWS SDK found no credentials provider")?;
    let credentials = provider
        .provide_credentials()
        .await
        .map_err(|e| DisplayErrorContext(&e).to_string())?;
    let expiry = credentials
        .expiry()
        .unwrap_or_else(|| SystemTime::now() + NO_EXPIRY);
    Ok((credentials, expiry))
}

/// Flux's session name: `<sa>.<namespace>.<region>.fluxcd.io`.
pub(super) fn role_session_name(name: &str, namespace: &str, region: &str) -> String {
    format!("{name}.{namespace}.{region}.fluxcd.io")
}

/// STS `AssumeRoleWithWebIdentity` with a ServiceAccount token (audience `sts.amazonaws.com`).
pub(super) async fn assume_role(
    region: &str,
    role_arn: &str,
    session_name: &str,
    token: &str,
    http: &CloudHttp,
) -> Result<(aws_credential_types::Credentials, SystemTime), CloudError> {
    let config = config(region, http, None).await;
    // The call is unsigned: the web identity token is the credential.
    let sts_config = aws_sdk_sts::config::Builder::from(&config)
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(
                aws_credential_types::Credentials::new("", "", None, None, "unsigned"),
            ),
        )
        .build();
    let out = aws_sdk_sts::Client::from_conf(sts_config)
        .assume_role_with_web_identity()
        .role_arn(role_arn)
        .role_session_name(session_name)
        .web_identity_token(token)
        .send()
        .await
        .map_err(|e| DisplayErrorContext(&e).to_string())?;
    let c = out.credentials.ok_or("credentials are nil")?;
    let expiry = SystemTime::try_from(c.expiration).unwrap_or(SystemTime::UNIX_EPOCH);
    let credentials = aws_credential_types::Credentials::new(
        c.access_key_id,
        c.secret_access_key,
        Some(c.session_token),
        Some(expiry),
        "AssumeRoleWithWebIdentity",
    );
    Ok((credentials, expiry))
}

/// ECR (or ECR Public) registry credentials made with `credentials`.
pub(super) async fn registry_credentials(
    target: &RegistryTarget,
    credentials: aws_credential_types::Credentials,
    http: &CloudHttp,
) -> Result<(Credentials, SystemTime), CloudError> {
    let config = config(target.aws_region(), http, Some(credentials)).await;
    let err = |e: &dyn std::error::Error| DisplayErrorContext(e).to_string();
    let (token, expires) = if *target == RegistryTarget::EcrPublic {
        let out = aws_sdk_ecrpublic::Client::new(&config)
            .get_authorization_token()
            .send()
            .await
            .map_err(|e| err(&e))?;
        let data = out
            .authorization_data
            .ok_or("no authorization data returned")?;
        (data.authorization_token, data.expires_at)
    } else {
        let out = aws_sdk_ecr::Client::new(&config)
            .get_authorization_token()
            .send()
            .await
            .map_err(|e| err(&e))?;
        let data = out
            .authorization_data
            .unwrap_or_default()
            .into_iter()
            .next()
            .ok_or("no authorization data returned")?;
        (data.authorization_token, data.expires_at)
    };
    let token = token.ok_or("authorization token is nil")?;
    let expires = expires.ok_or("authorization token expiration is nil")?;
    let expires = SystemTime::try_from(expires).unwrap_or(SystemTime::UNIX_EPOCH);
    Ok((split_token(&token)?, expires))
}

/// `base64(user:password)`, as ECR gives it.
pub(super) fn split_token(token: &str) -> Result<Credentials, CloudError> {
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(token)
        .map_err(|e| format!("failed to parse authorization token: {e}"))?;
    let text = String::from_utf8(decoded).map_err(|_| "invalid authorization token format")?;
    let parts: Vec<&str> = text.split(':').collect();
    match parts[..] {
        [username, password] => Ok(Credentials {
            username: username.into(),
            password: password.into(),
        }),
        _ => Err("invalid authorization token format".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_ecr_tokens_as_flux_does() {
        let token = base64::engine::general_purpose::STANDARD.encode("AWS:secret");
        let creds = split_token(&token).unwrap();
        assert_eq!(
            (creds.username.as_str(), creds.password.as_str()),
            ("AWS", "secret")
        );
        let three = base64::engine::general_purpose::STANDARD.encode("a:b:c");
        assert_eq!(
            split_token(&three).unwrap_err().to_string(),
            "invalid authorization token format"
        );
        assert!(split_token("%%")
            .unwrap_err()
            .to_string()
            .starts_with("failed to parse authorization token: "));
        assert_eq!(
            role_session_name("puller", "apps", "eu-west-1"),
            "puller.apps.eu-west-1.fluxcd.io"
        );
    }
}
