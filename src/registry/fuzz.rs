//! Fuzzing entry points for the registry's parsers of untrusted bytes (issue 15): what a
//! tenant writes (`spec.image`, docker config Secrets) and what a registry answers (`Link`,
//! `WWW-Authenticate`, `Retry-After`, token and tag-list JSON, manifests). The parsers stay
//! private; each function here feeds one of them raw bytes and asserts what must hold. Used by
//! the targets in `fuzz/` and replayed over the checked-in corpora by `tests/it/policy/fuzz_replay.rs`.
//! Not an API.

use super::auth::{parse_challenge, AuthCache, Challenge, TokenKey, TokenResponse};
use super::digest::check_manifest;
use super::proxy::without_credentials;
use super::scope::NetworkPath;
use super::tag_page::parse_page;
use super::tags::next_link;
use super::{parse_retry_after, Keyring, ProxySettings};
use crate::reference::ImageReference;
use crate::verify::fuzz::first_line;
use reqwest::header::{HeaderMap, HeaderValue, LINK};
use reqwest::Url;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

fn text(data: &[u8]) -> &str {
    std::str::from_utf8(data).unwrap_or_default()
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
        let cost: usize = page.kept.iter().map(super::tag_buf::tag_cost).sum();
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
