//! `image-reflector tags` and `digest` through the binary, against a real TLS registry with
//! Basic auth, and their errors.

use crate::support::distribution::{Distribution, Pki, Variant};
use crate::support::{run_bin, write};
use std::collections::BTreeSet;
use std::process::Output;

async fn bin(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_bin(&args, None)
    })
    .await
    .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn tags_and_digest_against_a_tls_registry_with_basic_auth() {
    let pki = Pki::new();
    let registry = Distribution::start(Variant {
        tls: Some(&pki),
        basic: Some(("ci", "pa55word")),
        ..Default::default()
    });
    let tags: Vec<String> = ["1.0.0", "1.1.0", "sha256-abc.sig"]
        .map(String::from)
        .to_vec();
    let pushed = registry.push_image("team/app", &tags).await;
    let dir = tempfile::tempdir().unwrap();
    let config = serde_json::json!({ "auths": { (format!("https://{}", registry.host)): {
        "auth": "Y2k6cGE1NXdvcmQ=" } } }); // ci:pa55word
    let docker_config = write(dir.path(), "config.json", &config.to_string());
    let ca = write(dir.path(), "ca.crt", &pki.ca);
    let image = format!("{}/team/app", registry.host);
    let connect = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        args.extend(["--docker-config", &docker_config, "--ca-file", &ca].map(String::from));
        args
    };

    let out = bin(connect(&["tags", &image, "--exclude", r"\.sig$"])).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed: BTreeSet<String> = text(&out.stdout).lines().map(String::from).collect();
    assert_eq!(
        listed,
        BTreeSet::from(["1.0.0".to_string(), "1.1.0".into()])
    );

    let out = bin(connect(&["tags", &image, "-o", "json"])).await;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["canonical"], image);
    assert_eq!(json["tags"].as_array().unwrap().len(), 3);
    assert_eq!(json["listed"], 3);

    let out = bin(connect(&["digest", &format!("{image}:1.1.0")])).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), pushed);
    let out = bin(connect(&[
        "digest",
        &format!("{image}:1.1.0"),
        "-o",
        "json",
    ]))
    .await;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (json["tag"].as_str(), json["digest"].as_str()),
        (Some("1.1.0"), Some(pushed.as_str()))
    );

    // A docker config without a matching entry: a warning, then the registry's 401.
    let other = write(
        dir.path(),
        "other.json",
        r#"{"auths":{"ghcr.io":{"auth":"eDp5"}}}"#,
    );
    let out = bin(
        ["tags", &image, "--docker-config", &other, "--ca-file", &ca]
            .map(String::from)
            .to_vec(),
    )
    .await;
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains(&format!(
            "warning: no entry of {other} matches {image}; going anonymous"
        )),
        "{}",
        text(&out.stderr)
    );

    // No credentials: the registry's 401, exit 3, with what to do.
    let out = bin(vec![
        "tags".into(),
        image.clone(),
        "--ca-file".into(),
        ca.clone(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(3));
    let err = text(&out.stderr);
    assert!(
        err.contains("401 Unauthorized")
            && err.contains(&format!(
                "{0} wants credentials: pass --docker-config, a docker config file with an entry for {0}",
                registry.host
            ))
            && !err.contains("spec."),
        "{err}"
    );

    // Wrong credentials: rejected, and the flag to check.
    let wrong = serde_json::json!({ "auths": { (registry.host.clone()): {
        "username": "ci", "password": "wrong" } } });
    let wrong = write(dir.path(), "wrong.json", &wrong.to_string());
    let out = bin(
        ["tags", &image, "--docker-config", &wrong, "--ca-file", &ca]
            .map(String::from)
            .to_vec(),
    )
    .await;
    assert_eq!(out.status.code(), Some(3));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "{} rejected the credentials: check the username and password in --docker-config",
            registry.host
        )),
        "{err}"
    );

    // No CA: the TLS failure names --ca-file.
    let out = bin(["tags", &image].map(String::from).to_vec()).await;
    assert_eq!(out.status.code(), Some(3));
    let err = text(&out.stderr);
    assert!(
        err.contains("check --ca-file: it must hold the CA") && !err.contains("spec."),
        "{err}"
    );
}

#[tokio::test]
async fn invalid_input_exits_2_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cert = write(dir.path(), "tls.crt", &Pki::new().client_cert);
    for (args, expected) in [
        (
            vec!["digest", "127.0.0.1:1/team/app"],
            "has no tag: digest needs <image>:<tag>",
        ),
        (
            vec!["tags", "127.0.0.1:1/team/app", "--exclude", "("],
            "--exclude '(' does not compile: error parsing regexp: missing closing ): `(`",
        ),
        (
            vec!["tags", "https://ghcr.io/a/b"],
            "image 'https://ghcr.io/a/b' should not include URL scheme; remove 'https://'",
        ),
        (
            vec!["tags", "127.0.0.1:1/a/b", "--cert-file", &cert],
            "missing private key: --cert-file needs --key-file",
        ),
        (
            vec!["tags", "127.0.0.1:1/a/b", "--key-file", &cert],
            "missing certificate: --key-file needs --cert-file",
        ),
        (
            vec!["tags", "127.0.0.1:1/a/b", "--ca-file", &cert, "--cert-file", &cert, "--key-file", &cert],
            "failed to parse TLS certificate and key: check --ca-file, --cert-file and --key-file",
        ),
        (
            vec!["tags", "127.0.0.1:1/a/b", "--docker-config", &cert],
            "--docker-config",
        ),
        (
            vec!["tags", "127.0.0.1:1/a/b", "--proxy", "ftp://proxy:21"],
            "--proxy: proxy URL must use one of the supported schemes (http, https, socks5), got 'ftp'",
        ),
        (
            vec!["tags", "127.0.0.1:1/a/b", "--exclude", "^v\\d++$"],
            "--exclude '^v\\d++$' does not compile: error parsing regexp: invalid nested repetition operator: `++`",
        ),
        (
            vec!["tags", "127.0.0.1:1/a/b", "--exclude", "[[:foo:]]"],
            "--exclude '[[:foo:]]' does not compile: error parsing regexp: invalid character class range: `[:foo:]`",
        ),
    ] {
        let out = bin(args.iter().map(|s| s.to_string()).collect()).await;
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(expected),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let out = bin(["tags", "127.0.0.1:1/a/b", "--timeout", "10"]
        .map(String::from)
        .to_vec())
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("missing unit in duration"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn an_unreachable_registry_exits_3() {
    // Nothing listens on port 1: HTTPS then HTTP both fail to connect.
    let out = bin(["digest", "127.0.0.1:1/team/app:1.0", "--timeout", "5s"]
        .map(String::from)
        .to_vec())
    .await;
    assert_eq!(out.status.code(), Some(3));
    let err = text(&out.stderr);
    assert!(err.contains("cannot reach registry 127.0.0.1:1"), "{err}");
    assert!(
        err.contains("check the image host, --ca-file (TLS) and --proxy") && !err.contains("spec."),
        "{err}"
    );
}

#[tokio::test]
async fn the_environment_proxy_applies_unless_no_proxy_says_otherwise() {
    use crate::support::fault_server::{FaultServer, Reply};
    let registry =
        FaultServer::start(|_| Reply::json(200, serde_json::json!({"tags": ["direct"]}))).await;
    let proxy =
        FaultServer::start(|_| Reply::json(200, serde_json::json!({"tags": ["via-proxy"]}))).await;
    let image = format!("{}/team/app", registry.host());
    let run = |no_proxy: &'static str| {
        let (image, proxy) = (image.clone(), format!("http://{}", proxy.host()));
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_image-reflector"))
                .args(["tags", &image, "--insecure"])
                .env("HTTP_PROXY", &proxy)
                .env("NO_PROXY", no_proxy)
                .env_remove("http_proxy")
                .env_remove("no_proxy")
                .output()
                .unwrap()
        })
    };
    let out = run("").await.unwrap();
    assert_eq!(
        text(&out.stdout).trim(),
        "via-proxy",
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        proxy.seen()[0].target,
        format!("http://{}/v2/team/app/tags/list?n=1000", registry.host())
    );
    let out = run("127.0.0.1").await.unwrap();
    assert_eq!(text(&out.stdout).trim(), "direct", "{}", text(&out.stderr));
    assert_eq!(proxy.seen().len(), 1);
}
