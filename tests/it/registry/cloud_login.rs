//! Cloud registry login (`--provider` / `spec.provider`), all on loopback: each provider's
//! endpoints are played by in-test servers, and the registries by the real Distribution
//! registry (Basic auth with the provider's credentials) or the fault server, under the
//! providers' real host names: a CONNECT proxy takes every `host:443` to its local stand-in,
//! whose certificate names that host and is trusted through `--ca-file`. So the host rules,
//! the SDKs' endpoint resolution and TLS run as in production.

use crate::support::cloud_fakes::*;
use crate::support::connect_proxy::ConnectProxy;
use crate::support::distribution::{Distribution, Pki, Variant};
use crate::support::fault_server::{FaultServer, Reply};
use std::net::SocketAddr;
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

/// Runs the binary with only `env` (and a fresh HOME): no cloud setting of this machine leaks in.
async fn bin_env(args: Vec<String>, env: Vec<(String, String)>) -> Output {
    tokio::task::spawn_blocking(move || {
        let home = tempfile::tempdir().unwrap();
        Command::new(env!("CARGO_BIN_EXE_image-reflector"))
            .args(&args)
            .env_clear()
            .env("HOME", home.path())
            .envs(env)
            .output()
            .expect("the binary runs")
    })
    .await
    .unwrap()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

struct Shell {
    dir: tempfile::TempDir,
    ca: String,
}

impl Shell {
    fn new(pki: &Pki) -> Shell {
        let dir = tempfile::tempdir().unwrap();
        let ca = crate::support::write(dir.path(), "ca.crt", &pki.ca);
        Shell { dir, ca }
    }

    fn file(&self, name: &str, content: &str) -> String {
        crate::support::write(self.dir.path(), name, content)
    }

    fn tags(&self, provider: &str, proxy: &ConnectProxy, image: &str) -> Vec<String> {
        [
            "tags",
            "--provider",
            provider,
            "--proxy",
            &proxy.url(),
            "--ca-file",
            &self.ca,
            image,
        ]
        .map(String::from)
        .to_vec()
    }
}

fn route(host: &str, server: SocketAddr) -> (String, SocketAddr) {
    (format!("{host}:443"), server)
}

async fn proxy(routes: &[(String, SocketAddr)]) -> ConnectProxy {
    let routes: Vec<(&str, SocketAddr)> = routes.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    ConnectProxy::start(&routes).await
}

fn distribution_addr(registry: &Distribution) -> SocketAddr {
    registry.host.parse().unwrap()
}

#[tokio::test]
async fn aws_keys_in_the_environment_sign_ecr_get_authorization_token_for_the_hosts_region() {
    let pki = cloud_pki();
    let registry = Distribution::start(Variant {
        tls: Some(&pki),
        basic: Some(("AWS", "ecr-password-1")),
        ..Default::default()
    });
    let pushed = registry
        .push_image("team/app", &["1.0.0".into(), "2.0.0".into()])
        .await;
    let ecr = ecr_api(&pki, "ecr-password-1", Duration::from_secs(12 * 3600)).await;
    let proxy = proxy(&[
        route(ECR_HOST, distribution_addr(&registry)),
        route(ECR_API, ecr.addr),
    ])
    .await;
    let shell = Shell::new(&pki);
    let env = pairs(&[
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        (
            "AWS_SECRET_ACCESS_KEY",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        ),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ]);
    let out = bin_env(
        shell.tags("aws", &proxy, &format!("{ECR_HOST}/team/app")),
        env,
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "2.0.0\n1.0.0\n");
    let calls = ecr.seen();
    assert_eq!(calls.len(), 1, "one GetAuthorizationToken");
    let auth = calls[0].header("authorization").unwrap_or("");
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
            && auth.contains("/eu-west-1/ecr/aws4_request"),
        "signed for ECR in the host's region: {auth}"
    );
    assert_eq!(
        calls[0].header("x-amz-target"),
        Some("AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken")
    );
    let targets = proxy.targets();
    assert!(
        targets.contains(&format!("{ECR_API}:443")) && targets.contains(&format!("{ECR_HOST}:443"))
    );
    // `digest --provider` logs in the same way.
    let mut args = shell.tags("aws", &proxy, &format!("{ECR_HOST}/team/app:1.0.0"));
    args[0] = "digest".into();
    let env = pairs(&[
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        (
            "AWS_SECRET_ACCESS_KEY",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        ),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ]);
    let out = bin_env(args, env).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), pushed);
}

#[tokio::test]
async fn aws_instance_metadata_and_web_identity_give_the_controller_its_credentials() {
    let pki = cloud_pki();
    let registry = basic_registry(&pki, "AWS", "ecr-password-2".into(), None).await;
    let ecr = ecr_api(&pki, "ecr-password-2", Duration::from_secs(3600)).await;
    let imds = FaultServer::start(|seen| match (seen.method.as_str(), seen.path()) {
        ("PUT", "/latest/api/token") => Reply::status(200)
            .header("x-aws-ec2-metadata-token-ttl-seconds", "21600")
            .body("imds-session"),
        (_, _) if seen.header("x-aws-ec2-metadata-token") != Some("imds-session") => {
            Reply::status(401)
        }
        ("GET", "/latest/meta-data/iam/security-credentials/") => {
            Reply::status(200).body("node-role")
        }
        ("GET", "/latest/meta-data/iam/security-credentials/node-role") => Reply::json(
            200,
            serde_json::json!({"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": "ASIANODE",
                "SecretAccessKey": "node-secret", "Token": "node-token",
                "Expiration": "2099-01-01T00:00:00Z", "LastUpdated": "2026-01-01T00:00:00Z"}),
        ),
        _ => Reply::status(404),
    })
    .await;
    let sts = sts_api(&pki).await;
    let proxy = proxy(&[
        route(ECR_HOST, registry.addr),
        route(ECR_API, ecr.addr),
        route(STS_EU, sts.addr),
    ])
    .await;
    let shell = Shell::new(&pki);
    let image = format!("{ECR_HOST}/team/app");
    // The node's identity, from instance metadata (reached directly, not through the proxy).
    let endpoint = format!("http://{}", imds.host());
    let env = pairs(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &endpoint)]);
    let out = bin_env(shell.tags("aws", &proxy, &image), env).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "1.0.0\n1.1.0\n");
    let auth = ecr.seen()[0]
        .header("authorization")
        .unwrap_or("")
        .to_string();
    assert!(auth.contains("Credential=ASIANODE/"), "{auth}");
    assert_eq!(
        ecr.seen()[0].header("x-amz-security-token"),
        Some("node-token")
    );
    assert!(!proxy.targets().iter().any(|t| t.starts_with("127.0.0.1")));
    // IRSA: the web identity token file and role, exchanged at the region's STS.
    let token_file = shell.file("irsa-token", "irsa.jwt.token");
    let env = pairs(&[
        ("AWS_WEB_IDENTITY_TOKEN_FILE", &token_file),
        ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/flux"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ]);
    let out = bin_env(shell.tags("aws", &proxy, &image), env).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let call = &sts.seen()[0];
    assert_eq!(
        form_field(call, "WebIdentityToken").as_deref(),
        Some("irsa.jwt.token")
    );
    assert_eq!(
        form_field(call, "RoleArn").as_deref(),
        Some("arn:aws:iam::123456789012:role/flux")
    );
    let auth = ecr.seen()[1]
        .header("authorization")
        .unwrap_or("")
        .to_string();
    assert!(auth.contains("Credential=ASIAWEBIDENTITY/"), "{auth}");
}

#[tokio::test]
async fn azure_workload_identity_token_is_exchanged_at_the_registry_and_errors_name_the_step() {
    let pki = cloud_pki();
    let refresh =
        jwt(serde_json::json!({"exp": epoch(SystemTime::now()) + 3 * 3600, "aud": ACR_HOST}));
    let registry = basic_registry(
        &pki,
        "00000000-0000-0000-0000-000000000000",
        refresh,
        Some("entra-at-1"),
    )
    .await;
    let entra = entra_api(&pki, "entra-at-1").await;
    let proxy = proxy(&[route(ACR_HOST, registry.addr), route(ENTRA, entra.addr)]).await;
    let shell = Shell::new(&pki);
    let token_file = shell.file("azure-token", "federated.jwt");
    let env = |file: &str| {
        pairs(&[
            ("AZURE_TENANT_ID", "tenant-1"),
            ("AZURE_CLIENT_ID", "client-1"),
            ("AZURE_FEDERATED_TOKEN_FILE", file),
        ])
    };
    let image = format!("{ACR_HOST}/team/app");
    let out = bin_env(shell.tags("azure", &proxy, &image), env(&token_file)).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "1.0.0\n1.1.0\n");
    let call = &entra.seen()[0];
    assert_eq!(call.path(), "/tenant-1/oauth2/v2.0/token");
    assert_eq!(
        form_field(call, "client_assertion").as_deref(),
        Some("federated.jwt")
    );
    assert_eq!(form_field(call, "client_id").as_deref(), Some("client-1"));
    assert_eq!(
        form_field(call, "client_assertion_type").as_deref(),
        Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
    );
    assert!(registry
        .seen()
        .iter()
        .any(|s| s.path() == "/oauth2/exchange"));
    // Entra refuses: the scan fails with the provider's words, and no secret in the message.
    let revoked = shell.file("revoked-token", "revoked.jwt");
    let out = bin_env(shell.tags("azure", &proxy, &image), env(&revoked)).await;
    assert_eq!(out.status.code(), Some(3));
    let err = text(&out.stderr);
    assert!(
        err.contains("failed to get access token for artifact registry: failed to create provider access token for the controller: POST https://login.microsoftonline.com/tenant-1/oauth2/v2.0/token: 401 Unauthorized: invalid_client: AADSTS700024"),
        "{err}"
    );
    assert!(
        !err.contains("revoked.jwt"),
        "the assertion is not shown: {err}"
    );
    // Managed identity: the instance metadata service (its address overridden as Azure's SDKs
    // allow), asked for the registry cloud's Resource Manager.
    let imds = FaultServer::start(|seen| {
        let ok = seen.header("metadata") == Some("true")
            && seen.path() == "/metadata/identity/oauth2/token"
            && seen.query("resource").as_deref() == Some("https://management.azure.com");
        match ok {
            true => Reply::json(
                200,
                serde_json::json!({"access_token": "entra-at-1",
                "expires_in": "3599", "expires_on": "4102444800", "token_type": "Bearer"}),
            ),
            false => Reply::status(400),
        }
    })
    .await;
    let imds_url = format!("http://{}", imds.host());
    let env_mi = pairs(&[("AZURE_POD_IDENTITY_AUTHORITY_HOST", &imds_url)]);
    let out = bin_env(shell.tags("azure", &proxy, &image), env_mi).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(imds.seen().len(), 1);
    // A host the provider does not serve is refused before any cloud API is asked.
    let before = entra.seen().len();
    let out = bin_env(
        shell.tags("azure", &proxy, "ghcr.io/team/app"),
        env(&token_file),
    )
    .await;
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("invalid Azure registry: 'ghcr.io'. must match"));
    assert_eq!(entra.seen().len(), before);
}

#[tokio::test]
async fn gcp_metadata_server_and_workload_identity_federation_tokens_are_the_password() {
    let pki = cloud_pki();
    let registry = Distribution::start(Variant {
        tls: Some(&pki),
        basic: Some(("oauth2accesstoken", "ya29.metadata")),
        ..Default::default()
    });
    registry.push_image("team/app", &["3.0.0".into()]).await;
    let metadata = FaultServer::start(|seen| {
        if seen.header("metadata-flavor") != Some("Google")
            || seen.path() != "/computeMetadata/v1/instance/service-accounts/default/token"
        {
            return Reply::status(403);
        }
        Reply::json(
            200,
            serde_json::json!({"access_token": "ya29.metadata", "expires_in": 3599, "token_type": "Bearer"}),
        )
    })
    .await;
    let proxy_routes = [route(GAR_HOST, distribution_addr(&registry))];
    let proxy_gar = proxy(&proxy_routes).await;
    let shell = Shell::new(&pki);
    let image = format!("{GAR_HOST}/team/app");
    let env = pairs(&[("GCE_METADATA_HOST", &metadata.host())]);
    let out = bin_env(shell.tags("gcp", &proxy_gar, &image), env).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "3.0.0\n");
    let scopes = metadata.seen()[0].query("scopes").unwrap_or_default();
    assert!(scopes.contains("cloud-platform"), "{scopes}");

    // Workload identity federation: an external_account file, STS, then impersonation.
    let wif_registry =
        basic_registry(&pki, "oauth2accesstoken", "ya29.impersonated".into(), None).await;
    let sts = FaultServer::start_tls(&pki.server_cert, &pki.server_key, |seen| {
        let ok = form_field(seen, "subject_token").as_deref() == Some("oidc-from-file")
            && form_field(seen, "grant_type").as_deref()
                == Some("urn:ietf:params:oauth:grant-type:token-exchange");
        match ok {
            true => Reply::json(200, serde_json::json!({"access_token": "ya29.federated", "expires_in": 3600, "token_type": "Bearer"})),
            false => Reply::json(400, serde_json::json!({"error": "invalid_grant"})),
        }
    })
    .await;
    let iam = FaultServer::start_tls(&pki.server_cert, &pki.server_key, |seen| {
        match seen.header("authorization") {
            Some("Bearer ya29.federated") => Reply::json(
                200,
                serde_json::json!({"accessToken": "ya29.impersonated", "expireTime": "2099-01-01T00:00:00Z"}),
            ),
            _ => Reply::status(401),
        }
    })
    .await;
    let proxy_wif = proxy(&[
        route(GAR_HOST, wif_registry.addr),
        route(GOOGLE_STS, sts.addr),
        route(GOOGLE_IAM, iam.addr),
    ])
    .await;
    let subject = shell.file("oidc", "oidc-from-file");
    let audience =
        "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/p/providers/k";
    let file = serde_json::json!({
        "type": "external_account",
        "audience": audience,
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": "https://sts.googleapis.com/v1/token",
        "service_account_impersonation_url": "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/flux@proj.iam.gserviceaccount.com:generateAccessToken",
        "credential_source": {"file": subject, "format": {"type": "text"}}
    });
    let adc = shell.file("adc.json", &file.to_string());
    let env = pairs(&[("GOOGLE_APPLICATION_CREDENTIALS", &adc)]);
    let out = bin_env(shell.tags("gcp", &proxy_wif, &image), env).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "1.0.0\n1.1.0\n");
    assert_eq!(
        form_field(&sts.seen()[0], "audience").as_deref(),
        Some(audience)
    );
    assert!(iam.seen()[0]
        .path()
        .ends_with("/serviceAccounts/flux@proj.iam.gserviceaccount.com:generateAccessToken"));
}

#[tokio::test]
async fn host_rules_and_flags_are_checked_before_any_login() {
    let shell = Shell::new(&cloud_pki());
    let proxy = proxy(&[]).await;
    let out = bin_env(shell.tags("aws", &proxy, "ghcr.io/team/app"), vec![]).await;
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("invalid AWS registry: 'ghcr.io'. must match ^([0-9]{12})"),
        "{}",
        text(&out.stderr)
    );
    assert!(proxy.targets().is_empty(), "nothing was asked of anyone");
    let config = shell.file("config.json", r#"{"auths":{}}"#);
    let mut args = shell.tags("gcp", &proxy, &format!("{GAR_HOST}/team/app"));
    args.extend(["--docker-config".to_string(), config]);
    let out = bin_env(args, vec![]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--docker-config is not used with --provider gcp"));
}
