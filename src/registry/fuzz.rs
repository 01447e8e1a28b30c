//! Fuzzing entry points for the registry's parsers of untrusted bytes (issue 15): what a
//! tenant writes (`spec.image`, docker config Secrets) and what a registry answers (`Link`,
//! `WWW-Authenticate`, `Retry-After`, token and tag-list JSON, manifests). The parsers stay
//! private; each function here feeds one of them raw bytes and asserts what must hold. Used by
//! the targets in `fuzz/` and replayed over the checked-in corpora by `tests/it/policy/fuzz_replay.rs`.
//! Not an API.

use super::access::NetworkPath;
use super::auth::{parse_challenge, AuthCache, Challenge, TokenKey, TokenResponse};
use super::digest::check_manifest;
use super::proxy::without_credentials;
use super::signatures::{Signed, SignedPayload, TrustedKeys};
use super::tag_page::parse_page;
use super::tags::next_link;
use super::{parse_retry_after, ImageReference, Keyring, ProxySettings};
use reqwest::header::{HeaderMap, HeaderValue, LINK};
use reqwest::Url;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

fn text(data: &[u8]) -> &str {
    std::str::from_utf8(data).unwrap_or_default()
}

/// Splits the first line off: a target's second input.
fn first_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

/// `spec.image`: a parsed reference prints a canonical name that parses to itself.
pub fn image_reference(data: &[u8]) {
    let image = text(data);
    for insecure in [false, true] {
        if let Ok(parsed) = ImageReference::parse(image, insecure) {
            let canonical = parsed.canonical();
            let again = ImageReference::parse(&canonical, insecure)
                .unwrap_or_else(|e| panic!("{canonical:?} (from {image:?}) does not parse: {e}"));
            assert_eq!(again.canonical(), canonical);
        }
    }
}

/// A docker config Secret, then a lookup: the first line is the image looked up
/// (`<registry>/<repository>`), the rest the Secret's JSON, read as both Secret types.
pub fn docker_config(data: &[u8]) {
    let (target, json) = first_line(data);
    let target = text(target);
    let mut ring = Keyring::new();
    if ring.add_config_json(json).is_ok() {
        let _ = ring.lookup(target);
    }
    let mut ring = Keyring::new();
    let secret = BTreeMap::from([(".dockercfg".to_string(), json.to_vec())]);
    if ring.add_secret("kubernetes.io/dockercfg", &secret).is_ok() {
        let _ = ring.lookup(target);
    }
}

/// `Link` headers of a tag listing: the next page, when there is one, is an http(s) URL with
/// a host.
pub fn link_header(data: &[u8]) {
    let base = Url::parse("https://registry.example/v2/team/app/tags/list?n=1000").unwrap();
    let mut headers = HeaderMap::new();
    for line in data.split(|&b| b == b'\n') {
        if let Ok(value) = HeaderValue::from_bytes(line) {
            headers.append(LINK, value);
        }
    }
    if let Ok(Some(next)) = next_link(&base, &headers) {
        assert!(
            matches!(next.scheme(), "http" | "https") && next.has_host(),
            "{next}"
        );
    }
}

/// `WWW-Authenticate`: a Bearer challenge's realm and service come out of the header.
pub fn www_authenticate(data: &[u8]) {
    if let Some(Challenge::Bearer { realm, service }) = parse_challenge(text(data)) {
        assert!(realm.len() + service.map_or(0, |s| s.len()) <= data.len());
    }
}

/// `Retry-After`: never more than a day, whatever the registry says.
pub fn retry_after(data: &[u8]) {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    if let Some(wait) = parse_retry_after(text(data), now) {
        assert!(wait <= Duration::from_secs(86_400), "{wait:?}");
    }
}

/// A token endpoint's answer: a token is never empty, lives at least a second and at most
/// ten years, and is stored in the token cache and read back as the client does (storing it
/// computed its expiry, where an `expires_in` of `u64::MAX` once panicked).
pub fn token_json(data: &[u8]) {
    if let Ok(response) = serde_json::from_slice::<TokenResponse>(data) {
        if let Some((token, life)) = response.into_token() {
            assert!(!token.is_empty());
            assert!(life >= Duration::from_secs(1));
            assert!(life <= super::auth::MAX_TOKEN_LIFE, "{life:?}");
            let cache = AuthCache::default();
            let path = NetworkPath::of(&super::ClientOptions::default());
            let key = TokenKey::new("https://auth.example/token", None, "s", None, path);
            cache.store_token(key.clone(), token.clone(), life);
            // A life of at least a second is kept until at least 0.9 s from now.
            assert_eq!(cache.token(&key).as_deref(), Some(token.as_str()));
        }
    }
}

/// A `tags/list` page.
pub fn tag_list_json(data: &[u8]) {
    if let Ok(page) = parse_page(data, &|t: &str| !t.ends_with(".sig")) {
        assert!(page.listed <= data.len() && page.kept.len() + page.invalid <= page.listed);
        assert!(page
            .kept
            .iter()
            .all(|t| super::is_valid_tag(t) && !t.ends_with(".sig")));
        let cost: usize = page.kept.iter().map(|t| super::tag_page::tag_cost(t)).sum();
        assert_eq!(cost, page.kept_bytes);
    }
}

/// The manifest check behind a digest taken with GET: the first line is the `Content-Type`;
/// whatever passes is JSON.
pub fn manifest(data: &[u8]) {
    let (content_type, body) = first_line(data);
    if check_manifest(text(content_type), body).is_ok() {
        assert!(serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok());
    }
}

/// A `proxySecretRef` address: whether it parses or not, what a message shows of it has no
/// user information (the secret `p4ss` planted after the first `:` of a user part never shows),
/// and a parsed proxy shows no password either.
pub fn proxy_address(data: &[u8]) {
    let address = text(data);
    let shown = without_credentials(address);
    if let Some(at) = address.rfind('@') {
        assert!(
            shown.ends_with(&address[at..]) && shown.contains("****"),
            "{address:?} shown as {shown:?}"
        );
    }
    let planted = format!("http://u:p4ss@{address}");
    if let Err(err) = ProxySettings::parse(&planted) {
        assert!(!err.to_string().contains("p4ss"), "{planted:?}: {err}");
    }
    // A parsed proxy shows its password as `****` (the same text elsewhere in the URL, in a
    // query say, is not the password: a fuzzing finding, regressions/proxy_address).
    if let Ok(proxy) = ProxySettings::parse(address) {
        let shown = proxy.to_string();
        let reread = reqwest::Url::parse(&shown)
            .unwrap_or_else(|e| panic!("{address:?} shown as {shown:?}, which is no URL: {e}"));
        assert!(
            reread.password().is_none_or(|p| p == "****"),
            "{address:?} shown as {shown:?}"
        );
    }
}

/// A cosign public key (`cosign.pub` of a Secret): read or refused, never a panic; a refusal
/// names the entry and stays short.
pub fn cosign_key(data: &[u8]) {
    let secret = BTreeMap::from([("cosign.pub".to_string(), data.to_vec())]);
    if let Err(reason) = TrustedKeys::from_secret(&secret, &[], true) {
        assert!(reason.contains("cosign.pub"), "{reason}");
        assert!(reason.len() < 1024, "{} bytes", reason.len());
    }
}

/// A cosign simple-signing payload, signed with a trusted key so that it is read: elected
/// only when it names this digest and this repository; refused with a short reason (the
/// payload's own text in it is at most the payload), never a panic.
pub fn cosign_payload(data: &[u8]) {
    use p256::ecdsa::signature::Signer;
    use p256::ecdsa::{Signature, SigningKey};
    use p256::pkcs8::{EncodePublicKey, LineEnding};
    static KEY: std::sync::OnceLock<(SigningKey, TrustedKeys)> = std::sync::OnceLock::new();
    let (signing, trusted) = KEY.get_or_init(|| {
        let signing = SigningKey::from_slice(&[7u8; 32]).expect("a valid scalar");
        let pem = signing
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .expect("a PEM");
        let secret = BTreeMap::from([("cosign.pub".to_string(), pem.into_bytes())]);
        (
            signing,
            TrustedKeys::from_secret(&secret, &[], true).expect("the key reads"),
        )
    });
    let signature: Signature = signing.sign(data);
    let signed = SignedPayload {
        payload: data.to_vec(),
        signature: signature.to_der().as_bytes().to_vec(),
        ..Default::default()
    };
    let image = ImageReference::parse("registry.example/team/app", false).unwrap();
    let digest = format!("sha256:{}", "ab".repeat(32));
    match trusted.verify(
        &[Signed::Simple(signed)],
        &image,
        &digest,
        std::time::SystemTime::now(),
    ) {
        Ok(key) => {
            assert_eq!(key, "cosign.pub");
            let payload: serde_json::Value = serde_json::from_slice(data).expect("read as JSON");
            let critical = &payload["critical"];
            assert_eq!(critical["image"]["docker-manifest-digest"], digest.as_str());
        }
        Err(reason) => assert!(reason.len() <= data.len() + 256, "{} bytes", reason.len()),
    }
}

/// Image inspection (the gates' facts): the first line is an image config, the rest a manifest
/// or index. An index yields at most 64 platforms, at most 16 of them read for a time; a time
/// is after the Unix epoch. Never a panic.
pub fn image_inspection(data: &[u8]) {
    let (config, manifest) = first_line(data);
    if let Some((platforms, dated, created)) = super::inspect::inspect_offline(manifest, config) {
        assert!(platforms <= super::inspect::MAX_INDEX_PLATFORMS);
        assert!(dated <= super::MAX_DATED_PLATFORMS && dated <= platforms);
        assert!(created.is_none_or(|t| t > 0), "{created:?}");
    }
}

/// What cloud providers answer: see `cloud::fuzz::answers`.
pub fn cloud_answer(data: &[u8]) {
    super::cloud::fuzz::answers(data)
}

/// A Sigstore bundle as a registry serves it, judged by a trusted key and a keyless root:
/// held back with a short reason (never a panic), or, when it verifies, signed by the key.
pub fn signature_bundle(data: &[u8]) {
    use super::signatures::TRUSTED_ROOT;
    static TRUST: std::sync::OnceLock<TrustedKeys> = std::sync::OnceLock::new();
    let trust = TRUST.get_or_init(|| {
        use p256::pkcs8::{EncodePublicKey, LineEnding};
        let key = p256::ecdsa::SigningKey::from_slice(&[7u8; 32]).expect("a valid scalar");
        let pem = key
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .expect("a PEM");
        let root = br#"{"certificateAuthorities": [], "tlogs": []}"#.to_vec();
        let secret = BTreeMap::from([
            ("cosign.pub".to_string(), pem.into_bytes()),
            (TRUSTED_ROOT.to_string(), root),
        ]);
        TrustedKeys::from_secret(&secret, &[], true).expect("the key reads")
    });
    let image = ImageReference::parse("registry.example/team/app", false).unwrap();
    let digest = format!("sha256:{}", "ab".repeat(32));
    let now = std::time::SystemTime::now();
    if let Err(reason) = trust.verify(&[Signed::Bundle(data.to_vec())], &image, &digest, now) {
        assert!(reason.len() <= data.len() + 512, "{} bytes", reason.len());
    }
}

/// A trusted root and a notation trust policy (the two documents a Secret may hold): read or
/// refused with a short reason, never a panic. The first line is the root, the rest the policy.
pub fn trust_documents(data: &[u8]) {
    let (root, policy) = first_line(data);
    if let Err(reason) = super::signatures::keyless::TrustedRoot::parse(root) {
        assert!(reason.len() <= root.len() + 512, "{} bytes", reason.len());
    }
    let secret = BTreeMap::from([
        ("trustpolicy.json".to_string(), policy.to_vec()),
        ("ca.crt".to_string(), root.to_vec()),
    ]);
    if let Err(reason) = super::signatures::notation::NotationTrust::from_secret(&secret) {
        assert!(reason.len() <= data.len() + 512, "{} bytes", reason.len());
    }
}

/// A notation envelope, JWS when it starts with `{`, else COSE, checked against a trust
/// store: held back with a short reason, never a panic (none of these verifies).
pub fn notation_envelope(data: &[u8]) {
    use super::signatures::notation::NotationTrust;
    static TRUST: std::sync::OnceLock<NotationTrust> = std::sync::OnceLock::new();
    let trust = TRUST.get_or_init(|| {
        let ca = fuzz_ca_pem();
        let policy = br#"{"version": "1.0", "trustPolicies": [{"name": "p", "registryScopes": ["*"],
            "signatureVerification": {"level": "strict"}, "trustStores": ["ca:p"], "trustedIdentities": ["*"]}]}"#;
        let secret = BTreeMap::from([
            ("trustpolicy.json".to_string(), policy.to_vec()),
            ("ca.crt".to_string(), ca),
        ]);
        NotationTrust::from_secret(&secret).expect("the trust reads")
    });
    let media = match data.first() {
        Some(b'{') => "application/jose+json",
        _ => "application/cose",
    };
    let digest = format!("sha256:{}", "ab".repeat(32));
    let now = std::time::SystemTime::now();
    let target = (digest.as_str(), None);
    match trust.verify("registry.example/team/app", media, data, target, now) {
        Ok((who, _)) => panic!("an envelope from nowhere verified, as {who}"),
        Err(reason) => assert!(reason.len() <= data.len() + 512, "{} bytes", reason.len()),
    }
}

/// A self-signed CA certificate (PEM, EC P-256, `CN=fuzz CA`, made once with openssl): the
/// trust store of the notation target, which builds no PKI.
fn fuzz_ca_pem() -> Vec<u8> {
    concat!(
        "-----BEGIN CERTIFICATE-----\n",
        "MIIBfDCCASGgAwIBAgIUC3EWIJvYXLbrJaYD39974OIe+fswCgYIKoZIzj0EAwIw\n",
        "EjEQMA4GA1UEAwwHZnV6eiBDQTAgFw0yNjExMjUxMzM0MDJaGA8yMTI2MTEwMTEz\n",
        "MzQwMlowEjEQMA4GA1UEAwwHZnV6eiBDQTBZMBMGByqGSM49AgEGCCqGSM49AwEH\n",
        "A0IABGkkGsb/3hBEK+u/ROBk6+IhpokCXVmIMchVJRpEUlwjlWB2DSFIIUnnFWts\n",
        "dLeqpg+QgrneJCdwKLpHneNdSjGjUzBRMB0GA1UdDgQWBBS8V34KUOQ14T6SuWeC\n",
        "2gIkIvgitDAfBgNVHSMEGDAWgBS8V34KUOQ14T6SuWeC2gIkIvgitDAPBgNVHRMB\n",
        "Af8EBTADAQH/MAoGCCqGSM49BAMCA0kAMEYCIQCIKdZD4M5p+VVbkqAm4exmW++Y\n",
        "7G2c3ARqXkgFEDCtmQIhAJut3M3kAgPgAMvdeFzuTBIwy2f6otcPEFqygnzxwpuv\n",
        "-----END CERTIFICATE-----\n",
    )
    .as_bytes()
    .to_vec()
}
