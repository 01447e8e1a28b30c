//! Object-level workload identity and the shared token cache, through the registry client's
//! public surface: a ServiceAccount (played by a test source standing in for the API server's
//! TokenRequest) is exchanged per provider, on loopback behind the CONNECT proxy; tokens are
//! shared by every client of one process and refreshed before they expire.

use crate::support::cloud_fakes::{
    basic_registry, cloud_pki, ecr_api, entra_api, form_field, jwt, sts_api, ACR_HOST, ECR_API,
    ECR_HOST, ENTRA, GAR_HOST, GOOGLE_IAM, GOOGLE_STS, STS_EU,
};
use crate::support::connect_proxy::ConnectProxy;
use crate::support::distribution::Pki;
use crate::support::fault_server::{FaultServer, Reply};
use futures::future::BoxFuture;
use image_reflector::reference::ImageReference;
use image_reflector::registry::cloud::{
    AccountError, CloudLogin, CloudProvider, ServiceAccount, ServiceAccountSource,
};
use image_reflector::registry::{
    ClientOptions, ProxySettings, Registries, RegistryClient, SchedulerConfig, TlsMaterial,
};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// A ServiceAccount `apps/puller` with `annotations`; its tokens are numbered, and the
/// audiences asked for are kept.
#[derive(Default)]
struct TestAccount {
    annotations: BTreeMap<String, String>,
    minted: Mutex<Vec<Vec<String>>>,
}

impl TestAccount {
    fn new(annotations: &[(&str, &str)]) -> Arc<TestAccount> {
        Arc::new(TestAccount {
            annotations: annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            minted: Mutex::default(),
        })
    }

    fn audiences(&self) -> Vec<Vec<String>> {
        self.minted.lock().unwrap().clone()
    }
}

impl ServiceAccountSource for TestAccount {
    fn key(&self) -> String {
        "apps/puller".into()
    }

    fn get(&self) -> BoxFuture<'_, Result<ServiceAccount, AccountError>> {
        Box::pin(async {
            Ok(ServiceAccount {
                namespace: "apps".into(),
                name: "puller".into(),
                annotations: self.annotations.clone(),
            })
        })
    }

    fn token<'a>(&'a self, audiences: &'a [String]) -> BoxFuture<'a, Result<String, AccountError>> {
        Box::pin(async move {
            let mut minted = self.minted.lock().unwrap();
            minted.push(audiences.to_vec());
            Ok(format!("k8s-sa-token-{}", minted.len()))
        })
    }
}

/// Lists `host/team/app` as `account` through `proxy`, trusting the test CA.
async fn list(
    provider: CloudProvider,
    account: &Arc<TestAccount>,
    host: &str,
    pki: &Pki,
    proxy: &ConnectProxy,
    registries: &Arc<Registries>,
) -> Result<Vec<String>, String> {
    let options = ClientOptions {
        login: Some(CloudLogin {
            provider,
            service_account: Some(account.clone() as Arc<dyn ServiceAccountSource>),
        }),
        tls: Some(TlsMaterial::new(Some(pki.ca.as_bytes()), None, None).unwrap()),
        proxy: Some(ProxySettings::parse(&proxy.url()).unwrap()),
        ..Default::default()
    };
    let client = RegistryClient::new(options, registries.clone()).unwrap();
    let image = ImageReference::parse(&format!("{host}/team/app"), false).unwrap();
    client.list_tags(&image).await.map_err(|e| e.to_string())
}

fn routes(list: &[(&str, SocketAddr)]) -> Vec<(String, SocketAddr)> {
    list.iter().map(|(h, a)| (format!("{h}:443"), *a)).collect()
}

async fn proxy(list: &[(&str, SocketAddr)]) -> ConnectProxy {
    let owned = routes(list);
    let borrowed: Vec<(&str, SocketAddr)> = owned.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    ConnectProxy::start(&borrowed).await
}

fn epoch_in(life: Duration) -> u64 {
    (SystemTime::now() + life)
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Two listings of ACR as `account`, whose refresh tokens live `life`, by two clients of one
/// process: the Entra ID stand-in and the number of exchanges the registry saw.
async fn two_acr_listings(
    pki: &Pki,
    account: &Arc<TestAccount>,
    life: Duration,
) -> (FaultServer, usize, Arc<Registries>) {
    let entra = entra_api(pki, "entra-at-sa").await;
    let refresh = jwt(serde_json::json!({ "exp": epoch_in(life) }));
    let user = "00000000-0000-0000-0000-000000000000";
    let registry = basic_registry(pki, user, refresh, Some("entra-at-sa")).await;
    let proxy = proxy(&[(ACR_HOST, registry.addr), (ENTRA, entra.addr)]).await;
    let registries = Registries::new(SchedulerConfig::default());
    for _ in 0..2 {
        let tags = list(
            CloudProvider::Azure,
            account,
            ACR_HOST,
            pki,
            &proxy,
            &registries,
        )
        .await;
        assert_eq!(tags.unwrap(), ["1.0.0", "1.1.0"]);
    }
    let exchanges = registry
        .seen()
        .iter()
        .filter(|s| s.path() == "/oauth2/exchange")
        .count();
    (entra, exchanges, registries)
}

#[tokio::test]
async fn azure_service_account_is_the_client_assertion_and_refresh_tokens_renew_before_expiry() {
    let pki = cloud_pki();
    let account = TestAccount::new(&[
        ("azure.workload.identity/tenant-id", "tenant-9"),
        ("azure.workload.identity/client-id", "client-9"),
    ]);
    // A refresh token valid for three hours is kept: two clients, one exchange, one mint.
    let (entra, exchanges, registries) =
        two_acr_listings(&pki, &account, Duration::from_secs(3 * 3600)).await;
    assert_eq!((entra.seen().len(), exchanges), (1, 1));
    assert_eq!(account.audiences(), [["api://AzureADTokenExchange"]]);
    let call = &entra.seen()[0];
    assert_eq!(call.path(), "/tenant-9/oauth2/v2.0/token");
    assert_eq!(
        form_field(call, "client_assertion").as_deref(),
        Some("k8s-sa-token-1")
    );
    assert_eq!(form_field(call, "client_id").as_deref(), Some("client-9"));
    assert_eq!(
        registries.token_cache().len(),
        2,
        "an access token and registry credentials"
    );
    // A refresh token about to expire is exchanged again; the Entra token is still good.
    let (entra, exchanges, _) = two_acr_listings(&pki, &account, Duration::from_secs(20)).await;
    assert_eq!((entra.seen().len(), exchanges), (1, 2));
}

#[tokio::test]
async fn aws_service_account_assumes_its_annotated_role_then_gets_the_ecr_token() {
    let pki = cloud_pki();
    let registry = basic_registry(&pki, "AWS", "ecr-sa-password".into(), None).await;
    let ecr = ecr_api(&pki, "ecr-sa-password", Duration::from_secs(3600)).await;
    let sts = sts_api(&pki).await;
    let proxy = proxy(&[
        (ECR_HOST, registry.addr),
        (ECR_API, ecr.addr),
        (STS_EU, sts.addr),
    ])
    .await;
    let arn = "arn:aws:iam::123456789012:role/team-puller";
    let account = TestAccount::new(&[("eks.amazonaws.com/role-arn", arn)]);
    let registries = Registries::new(SchedulerConfig::default());
    let tags = list(
        CloudProvider::Aws,
        &account,
        ECR_HOST,
        &pki,
        &proxy,
        &registries,
    )
    .await;
    assert_eq!(tags.unwrap(), ["1.0.0", "1.1.0"]);
    assert_eq!(account.audiences(), [["sts.amazonaws.com"]]);
    let call = &sts.seen()[0];
    assert_eq!(form_field(call, "RoleArn").as_deref(), Some(arn));
    assert_eq!(
        form_field(call, "WebIdentityToken").as_deref(),
        Some("k8s-sa-token-1")
    );
    assert_eq!(
        form_field(call, "RoleSessionName").as_deref(),
        Some("puller.apps.eu-west-1.fluxcd.io")
    );
    let auth = ecr.seen()[0]
        .header("authorization")
        .unwrap_or("")
        .to_string();
    assert!(
        auth.contains("Credential=ASIAWEBIDENTITY/") && auth.contains("/eu-west-1/ecr/"),
        "{auth}"
    );

    // A ServiceAccount without the annotation: Flux's message, and nothing is asked of AWS.
    let bare = TestAccount::new(&[]);
    let err = list(
        CloudProvider::Aws,
        &bare,
        ECR_HOST,
        &pki,
        &proxy,
        &registries,
    )
    .await
    .unwrap_err();
    assert!(
        err.starts_with("failed to get access token for artifact registry: failed to get provider identity from service account 'apps/puller' annotations: invalid AWS role ARN: ''. must match"),
        "{err}"
    );
    assert!(bare.audiences().is_empty(), "no token minted");
    assert_eq!(sts.seen().len(), 1);
}

#[tokio::test]
async fn gcp_service_account_goes_through_sts_and_impersonates_the_annotated_account() {
    let pki = cloud_pki();
    let registry = basic_registry(&pki, "oauth2accesstoken", "ya29.for-puller".into(), None).await;
    let provider = "projects/42/locations/global/workloadIdentityPools/pool/providers/kube";
    let audience = format!("//iam.googleapis.com/{provider}");
    let expected = audience.clone();
    let sts = FaultServer::start_tls(&pki.server_cert, &pki.server_key, move |seen| {
        let ok = form_field(seen, "audience").as_deref() == Some(expected.as_str())
            && form_field(seen, "subject_token").is_some_and(|t| t.starts_with("k8s-sa-token-"))
            && form_field(seen, "subject_token_type").as_deref()
                == Some("urn:ietf:params:oauth:token-type:jwt");
        match ok {
            true => Reply::json(
                200,
                serde_json::json!({"access_token": "ya29.sts", "expires_in": 3600}),
            ),
            false => Reply::json(
                400,
                serde_json::json!({"error": "invalid_grant", "error_description": "bad subject"}),
            ),
        }
    })
    .await;
    let iam = FaultServer::start_tls(&pki.server_cert, &pki.server_key, |seen| {
        match seen.header("authorization") {
            Some("Bearer ya29.sts") => Reply::json(
                200,
                serde_json::json!({"accessToken": "ya29.for-puller", "expireTime": "2099-01-01T00:00:00Z"}),
            ),
            _ => Reply::status(403),
        }
    })
    .await;
    let proxy = proxy(&[
        (GAR_HOST, registry.addr),
        (GOOGLE_STS, sts.addr),
        (GOOGLE_IAM, iam.addr),
    ])
    .await;
    let account = TestAccount::new(&[
        ("gcp.auth.fluxcd.io/workload-identity-provider", provider),
        (
            "iam.gke.io/gcp-service-account",
            "puller@proj-1.iam.gserviceaccount.com",
        ),
    ]);
    let registries = Registries::new(SchedulerConfig::default());
    let tags = list(
        CloudProvider::Gcp,
        &account,
        GAR_HOST,
        &pki,
        &proxy,
        &registries,
    )
    .await;
    assert_eq!(tags.unwrap(), ["1.0.0", "1.1.0"]);
    assert_eq!(account.audiences(), [[audience]]);
    assert!(iam.seen()[0]
        .path()
        .ends_with("/serviceAccounts/puller@proj-1.iam.gserviceaccount.com:generateAccessToken"));
    let body: serde_json::Value = serde_json::from_slice(&iam.seen()[0].body).unwrap();
    assert_eq!(body["lifetime"], "3600s");
    // Registry credentials never show in errors: a wrong password is reported without it.
    // (Another proxy is another cache key, as in Flux: a new token is minted and exchanged.)
    let denied = basic_registry(&pki, "oauth2accesstoken", "something-else".into(), None).await;
    let proxy = self::proxy(&[
        (GAR_HOST, denied.addr),
        (GOOGLE_STS, sts.addr),
        (GOOGLE_IAM, iam.addr),
    ])
    .await;
    let err = list(
        CloudProvider::Gcp,
        &account,
        GAR_HOST,
        &pki,
        &proxy,
        &registries,
    )
    .await
    .unwrap_err();
    assert!(err.contains("401") && !err.contains("ya29"), "{err}");
}

#[tokio::test]
async fn a_throttling_cloud_api_is_backed_off_like_a_registry() {
    let pki = cloud_pki();
    let entra = FaultServer::start_tls(&pki.server_cert, &pki.server_key, |_| {
        Reply::json(429, serde_json::json!({"error": "temporarily_unavailable"}))
            .header("Retry-After", "3600")
    })
    .await;
    let registry = basic_registry(
        &pki,
        "00000000-0000-0000-0000-000000000000",
        "x".into(),
        Some("t"),
    )
    .await;
    let proxy = proxy(&[(ACR_HOST, registry.addr), (ENTRA, entra.addr)]).await;
    let account = TestAccount::new(&[
        ("azure.workload.identity/tenant-id", "tenant-9"),
        ("azure.workload.identity/client-id", "client-9"),
    ]);
    let registries = Registries::new(SchedulerConfig::default());
    let first = list(
        CloudProvider::Azure,
        &account,
        ACR_HOST,
        &pki,
        &proxy,
        &registries,
    )
    .await;
    assert!(first
        .unwrap_err()
        .contains("429 Too Many Requests: temporarily_unavailable"));
    // The host's Retry-After holds every later login: no second request reaches Entra ID.
    let second = list(
        CloudProvider::Azure,
        &account,
        ACR_HOST,
        &pki,
        &proxy,
        &registries,
    )
    .await;
    let err = second.unwrap_err();
    assert!(
        err.contains("login.microsoftonline.com is rate limiting"),
        "{err}"
    );
    assert_eq!(entra.seen().len(), 1);
}
