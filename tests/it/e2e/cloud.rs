//! Object-level workload identity on the real API server (`make e2e`): `image-reflector run`
//! with the gate on mints the annotated ServiceAccount's token through the TokenRequest API
//! (with the RBAC config/ grants), Entra ID (played on loopback behind the object's proxy)
//! accepts it, and the ACR exchange's refresh token lists the tags; with the gate off, both
//! kinds stall with Flux's `FeatureGateDisabled` messages.

use crate::support::cloud_fakes::{
    basic_registry, cloud_pki, entra_api, form_field, jwt, ACR_HOST, ENTRA,
};
use crate::support::cluster::{
    install_and_controller_kubeconfig, install_and_controller_kubeconfig_from, install_crds,
    kubectl, ok, wait_for, Controller, Namespace,
};
use crate::support::connect_proxy::ConnectProxy;
use base64::Engine;
use std::time::{Duration, SystemTime};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_object_level_workload_identity_mints_service_account_tokens_behind_the_gate() {
    install_crds();
    let pki = cloud_pki();
    let exp = SystemTime::now() + Duration::from_secs(3 * 3600);
    let exp = exp
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let refresh = jwt(serde_json::json!({ "exp": exp }));
    let registry = basic_registry(
        &pki,
        "00000000-0000-0000-0000-000000000000",
        refresh,
        Some("entra-e2e"),
    )
    .await;
    let entra = entra_api(&pki, "entra-e2e").await;
    let proxy = ConnectProxy::start(&[
        (&format!("{ACR_HOST}:443"), registry.addr),
        (&format!("{ENTRA}:443"), entra.addr),
    ])
    .await;
    let ns = Namespace(format!("image-reflector-cloud-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let manifests = format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: puller\n  namespace: {ns}\n  annotations:\n    \
         azure.workload.identity/tenant-id: tenant-e2e\n    azure.workload.identity/client-id: client-e2e\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {{name: proxy, namespace: {ns}}}\ndata: {{address: {proxy}}}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {{name: tls, namespace: {ns}}}\ndata: {{ca.crt: {ca}}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: acr, namespace: {ns}}}\n\
         spec: {{image: {ACR_HOST}/team/app, interval: 5m, provider: azure, serviceAccountName: puller,\n  \
         proxySecretRef: {{name: proxy}}, certSecretRef: {{name: tls}}}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: acr, namespace: {ns}}}\n\
         spec: {{imageRepositoryRef: {{name: acr}}, policy: {{semver: {{range: '>=1.0.0'}}}}}}\n",
        ns = ns.0,
        proxy = b64(&proxy.url()),
        ca = b64(&pki.ca),
    );
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    let dir = tempfile::tempdir().unwrap();
    // Minting tokens is granted only by the gate's overlay, not by config/default.
    let kubeconfig =
        install_and_controller_kubeconfig_from(dir.path(), "config/object-level-workload-identity");
    let ready = "{.status.conditions[?(@.type==\"Ready\")].status}";
    let reason = "{.status.conditions[?(@.type==\"Ready\")].reason}";

    let gated = Controller::start_with(
        &ns.0,
        &kubeconfig,
        &["--feature-gates=ObjectLevelWorkloadIdentity=true"],
    );
    wait_for(&ns.0, "imagerepository/acr", ready, "True");
    wait_for(&ns.0, "imagepolicy/acr", "{.status.latestRef.tag}", "1.1.0");
    gated.stop();
    // The assertion Entra got is the ServiceAccount's token, minted for Entra's audience.
    let assertion = form_field(&entra.seen()[0], "client_assertion").unwrap();
    let payload = assertion.split('.').nth(1).unwrap();
    let claims: serde_json::Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        claims["aud"],
        serde_json::json!(["api://AzureADTokenExchange"])
    );
    assert_eq!(
        claims["sub"],
        format!("system:serviceaccount:{}:puller", ns.0)
    );
    assert_eq!(
        form_field(&entra.seen()[0], "client_id").as_deref(),
        Some("client-e2e")
    );

    // Without the gate: both kinds stall, with Flux's messages.
    let ungated = Controller::start(&ns.0, &kubeconfig);
    wait_for(&ns.0, "imagerepository/acr", reason, "FeatureGateDisabled");
    wait_for(&ns.0, "imagepolicy/acr", reason, "FeatureGateDisabled");
    let message = |kind: &str| {
        ok(kubectl(
            &[
                "get",
                "-n",
                &ns.0,
                kind,
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Stalled\")].message}",
            ],
            None,
        ))
    };
    assert_eq!(
        message("imagerepository/acr"),
        "to use spec.serviceAccountName for provider authentication please enable the ObjectLevelWorkloadIdentity feature gate in the controller"
    );
    assert_eq!(
        message("imagepolicy/acr"),
        "to use spec.serviceAccountName in the ImageRepository for provider authentication please enable the ObjectLevelWorkloadIdentity feature gate in the controller"
    );
    assert_eq!(
        ok(kubectl(
            &[
                "get",
                "-n",
                &ns.0,
                "imagepolicy/acr",
                "-o",
                "jsonpath={.status.latestRef.tag}"
            ],
            None
        )),
        "1.1.0",
        "the last good result is kept"
    );
    ungated.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: make e2e"]
async fn e2e_the_controllers_own_identity_logs_in_to_ecr_and_artifact_registry() {
    use crate::support::cloud_fakes::{ecr_api, ECR_API, ECR_HOST, GAR_HOST};
    use crate::support::fault_server::{FaultServer, Reply};
    install_crds();
    let pki = cloud_pki();
    let ecr_registry = basic_registry(&pki, "AWS", "ecr-run".into(), None).await;
    let ecr = ecr_api(&pki, "ecr-run", Duration::from_secs(12 * 3600)).await;
    let gar_registry = basic_registry(&pki, "oauth2accesstoken", "ya29.run".into(), None).await;
    let metadata = FaultServer::start(|seen| match seen.header("metadata-flavor") {
        Some("Google") => Reply::json(
            200,
            serde_json::json!({"access_token": "ya29.run", "expires_in": 3599}),
        ),
        _ => Reply::status(403),
    })
    .await;
    // Entra refuses the controller's assertion: the ACR repository shows the provider's error.
    let acr_registry = basic_registry(
        &pki,
        "00000000-0000-0000-0000-000000000000",
        "x".into(),
        None,
    )
    .await;
    let entra = entra_api(&pki, "unused").await;
    let proxy = ConnectProxy::start(&[
        (&format!("{ECR_HOST}:443"), ecr_registry.addr),
        (&format!("{ECR_API}:443"), ecr.addr),
        (&format!("{GAR_HOST}:443"), gar_registry.addr),
        (&format!("{ACR_HOST}:443"), acr_registry.addr),
        (&format!("{ENTRA}:443"), entra.addr),
    ])
    .await;
    let ns = Namespace(format!("image-reflector-cloudid-{}", std::process::id()));
    ok(kubectl(&["create", "namespace", &ns.0], None));
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let repo = |name: &str, image: &str, provider: &str| {
        format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: {name}, namespace: {ns}}}\n\
             spec: {{image: {image}/team/app, interval: 5m, provider: {provider}, secretRef: {{name: ignored}},\n  \
             proxySecretRef: {{name: proxy}}, certSecretRef: {{name: tls}}}}\n---\n",
            ns = ns.0
        )
    };
    let manifests = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: proxy, namespace: {ns}}}\ndata: {{address: {proxy}}}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {{name: tls, namespace: {ns}}}\ndata: {{ca.crt: {ca}}}\n---\n{ecr}{gar}{acr}",
        ns = ns.0,
        proxy = b64(&proxy.url()),
        ca = b64(&pki.ca),
        ecr = repo("ecr", ECR_HOST, "aws"),
        gar = repo("gar", GAR_HOST, "gcp"),
        acr = repo("acr", ACR_HOST, "azure"),
    );
    let token_file = "revoked.jwt".to_string();
    ok(kubectl(&["apply", "-f", "-"], Some(&manifests)));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = install_and_controller_kubeconfig(dir.path());
    let token_path = crate::support::write(dir.path(), "azure-token", &token_file);
    let metadata_host = metadata.host();
    let controller = Controller::start_with_env(
        &ns.0,
        &kubeconfig,
        &[],
        &[
            ("AWS_ACCESS_KEY_ID", "AKIDCONTROLLER"),
            ("AWS_SECRET_ACCESS_KEY", "controller-secret"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
            ("GCE_METADATA_HOST", &metadata_host),
            ("AZURE_TENANT_ID", "tenant-run"),
            ("AZURE_CLIENT_ID", "client-run"),
            ("AZURE_FEDERATED_TOKEN_FILE", &token_path),
        ],
    );
    let ready = "{.status.conditions[?(@.type==\"Ready\")].status}";
    wait_for(&ns.0, "imagerepository/ecr", ready, "True");
    wait_for(&ns.0, "imagerepository/gar", ready, "True");
    let reason = "{.status.conditions[?(@.type==\"Ready\")].reason}";
    wait_for(&ns.0, "imagerepository/acr", reason, "ReadOperationFailed");
    controller.stop();
    let acr = ok(kubectl(
        &[
            "get",
            "-n",
            &ns.0,
            "imagerepository/acr",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Ready\")].message}",
        ],
        None,
    ));
    assert!(
        acr.starts_with("scan failed: failed to get access token for artifact registry: failed to create provider access token for the controller: POST https://login.microsoftonline.com/tenant-run/oauth2/v2.0/token: 401 Unauthorized: invalid_client: AADSTS700024"),
        "{acr}"
    );
    assert!(!acr.contains("revoked.jwt"), "no secret in status: {acr}");
    let auth = ecr.seen()[0]
        .header("authorization")
        .unwrap_or("")
        .to_string();
    assert!(
        auth.contains("Credential=AKIDCONTROLLER/") && auth.contains("/eu-west-1/ecr/"),
        "{auth}"
    );
    assert!(!metadata.seen().is_empty());
    let message = ok(kubectl(
        &[
            "get",
            "-n",
            &ns.0,
            "imagerepository/ecr",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Ready\")].message}",
        ],
        None,
    ));
    assert!(
        message.starts_with("successful scan: found 2 tags"),
        "{message}"
    );
}
