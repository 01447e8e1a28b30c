//! The registry client against a real Distribution registry: listing more than 1000 tags,
//! digests of single- and multi-platform tags checked against the pushed bytes, Basic auth
//! from a docker config Secret, TLS with an extra CA, and mTLS.

use crate::support::distribution::{Distribution, Pki, Variant};
use image_reflector::reference::ImageReference;
use image_reflector::registry::{
    ClientOptions, Keyring, Registries, RegistryClient, RegistryError, SchedulerConfig, TlsMaterial,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

fn client(tweak: impl FnOnce(&mut ClientOptions)) -> RegistryClient {
    let mut options = ClientOptions::default();
    tweak(&mut options);
    RegistryClient::new(options, Registries::new(SchedulerConfig::default())).unwrap()
}

/// Not insecure: a loopback registry is tried over HTTPS first, then plain HTTP.
fn image(registry: &Distribution, repository: &str) -> ImageReference {
    ImageReference::parse(&format!("{}/{repository}", registry.host), false).unwrap()
}

#[tokio::test]
async fn lists_more_than_1000_tags_and_resolves_digests_over_plain_http() {
    let registry = Distribution::start(Variant::default());
    let tags: Vec<String> = (0..1100)
        .map(|i| format!("1.{}.{}", i / 100, i % 100))
        .collect();
    let pushed = registry.push_image("team/app", &tags).await;
    let c = client(|_| {});
    let img = image(&registry, "team/app");

    let listed: BTreeSet<String> = c.list_tags(&img).await.unwrap().into_iter().collect();
    assert_eq!(listed, tags.iter().cloned().collect::<BTreeSet<_>>());
    assert_eq!(c.digest(&img, "1.10.99").await.unwrap(), pushed);

    let err = c.digest(&img, "9.9.9").await.unwrap_err();
    assert_eq!(err.status(), Some(404), "{err}");
    assert!(err.to_string().contains("HEAD http://"), "{err}");
    let err = c
        .list_tags(&image(&registry, "team/none"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(404), "{err}");
    assert!(
        err.to_string().contains("404 Not Found: NAME_UNKNOWN"),
        "{err}"
    );
}

#[tokio::test]
async fn multi_platform_tags_resolve_to_the_index_digest() {
    let registry = Distribution::start(Variant::default());
    let oci = registry.push_index("team/multi", "1.0.0", false).await;
    let docker = registry.push_index("team/dockerlist", "1.0.0", true).await;
    let c = client(|_| {});
    assert_eq!(
        c.digest(&image(&registry, "team/multi"), "1.0.0")
            .await
            .unwrap(),
        oci
    );
    assert_eq!(
        c.digest(&image(&registry, "team/dockerlist"), "1.0.0")
            .await
            .unwrap(),
        docker
    );
}

#[tokio::test]
async fn basic_auth_from_a_docker_config_secret() {
    let registry = Distribution::start(Variant {
        basic: Some(("reflector", "s3cret")),
        ..Default::default()
    });
    let pushed = registry
        .push_image("team/private", &["2.0.0".to_string()])
        .await;
    let img = image(&registry, "team/private");

    let err = client(|_| {}).list_tags(&img).await.unwrap_err();
    assert_eq!(err.status(), Some(401), "{err}");
    assert!(
        err.to_string().contains(&format!(
            "wants credentials: give credentials for {}",
            registry.host
        )),
        "{err}"
    );

    let secret = serde_json::json!({ "auths": { (registry.host.clone()): {
        "username": "reflector", "password": "s3cret" } } });
    let mut keyring = Keyring::new();
    keyring
        .add_secret(
            "kubernetes.io/dockerconfigjson",
            &BTreeMap::from([(
                ".dockerconfigjson".to_string(),
                secret.to_string().into_bytes(),
            )]),
        )
        .unwrap();
    let creds = keyring.lookup(&img.canonical()).cloned();
    assert!(creds.is_some(), "the keyring matches host:port");
    let c = client(|o| o.credentials = creds);
    assert_eq!(c.list_tags(&img).await.unwrap(), ["2.0.0"]);
    assert_eq!(c.digest(&img, "2.0.0").await.unwrap(), pushed);
}

#[tokio::test]
async fn tls_with_the_ca_from_a_cert_secret() {
    let pki = Pki::new();
    let registry = Distribution::start(Variant {
        tls: Some(&pki),
        ..Default::default()
    });
    let pushed = registry
        .push_image("team/app", &["3.0.0".to_string()])
        .await;
    let img = image(&registry, "team/app");

    // Without the CA: a TLS error that says what to do, and no fallback to plain HTTP.
    let err = client(|_| {}).list_tags(&img).await.unwrap_err();
    assert!(matches!(err, RegistryError::Tls { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("check the CA that signs the registry's certificate"),
        "{err}"
    );

    let data = BTreeMap::from([("ca.crt".to_string(), pki.ca.clone().into_bytes())]);
    let (tls, _) = TlsMaterial::from_secret_data(&data).unwrap();
    let c = client(|o| o.tls = Some(tls));
    assert_eq!(c.list_tags(&img).await.unwrap(), ["3.0.0"]);
    assert_eq!(c.digest(&img, "3.0.0").await.unwrap(), pushed);
}

#[tokio::test]
async fn mutual_tls_needs_the_client_certificate() {
    let pki = Pki::new();
    // Push through a plain instance, then serve the same storage with mTLS.
    let plain = Distribution::start(Variant::default());
    let pushed = plain.push_image("team/app", &["4.0.0".to_string()]).await;
    let registry = Distribution::start(Variant {
        tls: Some(&pki),
        mutual_tls: true,
        storage: Some(plain.storage.clone()),
        ..Default::default()
    });
    let img = image(&registry, "team/app");

    let ca_only = TlsMaterial::new(Some(pki.ca.as_bytes()), None, None).unwrap();
    let err = client(|o| o.tls = Some(ca_only))
        .list_tags(&img)
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::Tls { .. }), "{err}");

    // The legacy key names still work.
    let data = BTreeMap::from([
        ("caFile".to_string(), pki.ca.clone().into_bytes()),
        ("certFile".to_string(), pki.client_cert.clone().into_bytes()),
        ("keyFile".to_string(), pki.client_key.clone().into_bytes()),
    ]);
    let (tls, names) = TlsMaterial::from_secret_data(&data).unwrap();
    assert_eq!(names, image_reflector::registry::KeyNames::Legacy);
    let c = Arc::new(client(|o| o.tls = Some(tls)));
    assert_eq!(c.list_tags(&img).await.unwrap(), ["4.0.0"]);
    assert_eq!(c.digest(&img, "4.0.0").await.unwrap(), pushed);
}

#[test]
fn tls_material_is_checked_with_flux_texts() {
    let pki = Pki::new();
    let err = |pairs: &[(&str, &str)]| {
        let data: BTreeMap<String, Vec<u8>> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect();
        TlsMaterial::from_secret_data(&data)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(err(&[("tls.crt", &pki.client_cert)]), "missing private key");
    assert_eq!(err(&[("tls.key", &pki.client_key)]), "missing certificate");
    assert_eq!(
        err(&[("ca.crt", "not a pem")]),
        "failed to parse CA certificate"
    );
    assert_eq!(
        err(&[("tls.crt", &pki.client_cert), ("tls.key", &pki.server_key)]),
        "failed to parse TLS certificate and key",
        "a key that is not the certificate's"
    );
    assert!(err(&[("other", "x")]).starts_with("no certificate"));
}

/// A minimal CONNECT proxy on 127.0.0.1: records each CONNECT line and its
/// `Proxy-Authorization`, then tunnels the bytes (TLS stays end to end).
async fn connect_proxy() -> (String, Arc<std::sync::Mutex<Vec<(String, Option<String>)>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = log.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let line = head.lines().next().unwrap_or("").to_string();
                let auth = head
                    .lines()
                    .find_map(|l| {
                        l.strip_prefix("proxy-authorization: ")
                            .or_else(|| l.strip_prefix("Proxy-Authorization: "))
                    })
                    .map(str::to_string);
                seen.lock().unwrap().push((line.clone(), auth));
                let target = line.split(' ').nth(1).unwrap_or("").to_string();
                // Tunnel to loopback only.
                assert!(target.starts_with("127.0.0.1:"), "{target}");
                let mut upstream = tokio::net::TcpStream::connect(&target).await.unwrap();
                client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .unwrap();
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            });
        }
    });
    (addr, log)
}

#[tokio::test]
async fn https_through_a_connect_proxy_with_credentials() {
    let pki = Pki::new();
    let registry = Distribution::start(Variant {
        tls: Some(&pki),
        ..Default::default()
    });
    let pushed = registry
        .push_image("team/app", &["5.0.0".to_string()])
        .await;
    let (proxy, log) = connect_proxy().await;
    let settings = image_reflector::registry::ProxySettings::from_secret_data(&BTreeMap::from([
        (
            "address".to_string(),
            format!("http://{proxy}").into_bytes(),
        ),
        ("username".to_string(), b"proxy-user".to_vec()),
        ("password".to_string(), b"proxy-pass".to_vec()),
    ]))
    .unwrap();
    let tls = TlsMaterial::new(Some(pki.ca.as_bytes()), None, None).unwrap();
    let c = client(|o| {
        o.tls = Some(tls);
        o.proxy = Some(settings);
    });
    let img = image(&registry, "team/app");
    assert_eq!(c.list_tags(&img).await.unwrap(), ["5.0.0"]);
    assert_eq!(c.digest(&img, "5.0.0").await.unwrap(), pushed);
    let log = log.lock().unwrap().clone();
    assert!(!log.is_empty());
    for (line, auth) in &log {
        assert_eq!(line, &format!("CONNECT {} HTTP/1.1", registry.host));
        assert_eq!(auth.as_deref(), Some("Basic cHJveHktdXNlcjpwcm94eS1wYXNz"));
    }
}
