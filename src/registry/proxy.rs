//! The proxy for registry traffic (docs/registry.md): from a `proxySecretRef`
//! Secret's `address`, `username`, `password`, or a URL on the command line. Without one,
//! `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` from the environment apply.

use super::ConfigError;
use reqwest::Url;
use std::collections::BTreeMap;
use std::fmt;

/// The longest proxy URL accepted.
pub const MAX_PROXY_URL_LEN: usize = 2048;

/// A validated proxy URL, credentials included as user-info.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxySettings {
    url: Url,
}

impl ProxySettings {
    /// Reads a `proxySecretRef` Secret's data.
    pub fn from_secret_data(data: &BTreeMap<String, Vec<u8>>) -> Result<Self, ConfigError> {
        let text = |key: &str| {
            data.get(key)
                .map(|v| String::from_utf8_lossy(v).into_owned())
        };
        let address = text("address").ok_or(ConfigError::MissingProxyAddress)?;
        let mut settings = ProxySettings::parse(&address)?;
        if let Some(user) = text("username").filter(|u| !u.is_empty()) {
            // A username alone is allowed.
            let password = text("password").unwrap_or_default();
            settings
                .url
                .set_username(&user)
                .and_then(|()| {
                    settings
                        .url
                        .set_password((!password.is_empty()).then_some(password.as_str()))
                })
                .map_err(|()| ConfigError::ProxyUrl(without_credentials(&address)))?;
        }
        Ok(settings)
    }

    /// Parses a proxy URL (`http://user:pass@proxy:3128`, `socks5://proxy:1080`).
    pub fn parse(address: &str) -> Result<Self, ConfigError> {
        if address.is_empty() {
            return Err(ConfigError::EmptyProxyAddress);
        }
        if address.len() > MAX_PROXY_URL_LEN {
            return Err(ConfigError::ProxyTooLong(address.len()));
        }
        let url =
            Url::parse(address).map_err(|_| ConfigError::ProxyUrl(without_credentials(address)))?;
        if !matches!(url.scheme(), "http" | "https" | "socks5") {
            return Err(ConfigError::ProxyScheme(url.scheme().into()));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(ConfigError::ProxyUrl(without_credentials(address)));
        }
        Ok(ProxySettings { url })
    }

    /// The URL, credentials included (never shown; for identifying an HTTP client).
    pub(super) fn url_text(&self) -> &str {
        self.url.as_str()
    }

    /// The proxy's host and port, without its credentials: how the scheduler's keys name it.
    pub(super) fn origin(&self) -> String {
        super::describe::url_host(&self.url)
    }

    /// Routes every request of the client through the proxy (the environment is ignored then).
    pub(super) fn apply(
        &self,
        builder: reqwest::ClientBuilder,
    ) -> Result<reqwest::ClientBuilder, ConfigError> {
        let proxy = reqwest::Proxy::all(self.url.as_str())
            .map_err(|e| ConfigError::ProxyUrl(without_credentials(&format!("{self}: {e}"))))?;
        Ok(builder.proxy(proxy))
    }
}

/// A proxy address as a message may show it, parsed or not: everything before its last `@`
/// (the user-info, where a password is, even one with spaces or a stray `@`) becomes `****`,
/// the scheme kept. An address that does not parse is shown too, so it must be cut blind.
pub(crate) fn without_credentials(address: &str) -> String {
    let Some(at) = address.rfind('@') else {
        return address.to_string();
    };
    let scheme = address
        .find("://")
        .filter(|&i| {
            i < at
                && address[..i]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+.-".contains(&b))
        })
        .map(|i| &address[..i + 3])
        .unwrap_or("");
    format!("{scheme}****{}", &address[at..])
}

/// Shown without the password.
impl fmt::Display for ProxySettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = self.url.clone();
        if shown.password().is_some() {
            let _ = shown.set_password(Some("****"));
        }
        f.write_str(shown.as_str())
    }
}

impl fmt::Debug for ProxySettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProxySettings({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(pairs: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn reads_address_and_credentials() {
        let p = ProxySettings::from_secret_data(&secret(&[
            ("address", "http://proxy.example:3128"),
            ("username", "u"),
            ("password", "p@ss"),
        ]))
        .unwrap();
        assert_eq!(p.url.as_str(), "http://u:p%40ss@proxy.example:3128/");
        assert_eq!(p.to_string(), "http://u:****@proxy.example:3128/");
        let alone = ProxySettings::from_secret_data(&secret(&[
            ("address", "socks5://proxy.example:1080"),
            ("username", "u"),
        ]))
        .unwrap();
        assert_eq!(alone.url.as_str(), "socks5://u@proxy.example:1080");
    }

    #[test]
    fn rejects_with_flux_texts() {
        let err = |pairs: &[(&str, &str)]| {
            ProxySettings::from_secret_data(&secret(pairs))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(err(&[]), "invalid proxy secret: key 'address' not found");
        assert_eq!(err(&[("address", "")]), "proxy address is empty");
        assert_eq!(
            err(&[("address", "ftp://proxy:21")]),
            "proxy URL must use one of the supported schemes (http, https, socks5), got 'ftp'"
        );
        let long = format!("http://{}.example", "a".repeat(2048));
        assert_eq!(
            err(&[("address", &long)]),
            format!(
                "proxy URL is {} characters long, the limit is 2048",
                long.len()
            )
        );
        assert_eq!(
            err(&[("address", "not a url")]),
            "invalid proxy URL 'not a url'"
        );
    }

    /// An address that does not parse is echoed in status, Events, logs and notifications: its
    /// credentials never are, whatever its shape.
    #[test]
    fn unparseable_addresses_are_shown_without_credentials() {
        for address in [
            "http://user:PLANTED@proxy:3128 x",
            "http://user:PLAN TED@proxy:3128",
            "http://user:PLA@NTED@proxy:99999",
            "http//user:PLANTED@proxy:3128",
            "user:PLANTED@proxy:3128 with space",
            "socks5://PLANTED@[::1",
            "http://u:PLANTED@/path",
        ] {
            // Whether it parses or not, what is shown hides the password.
            let text = match ProxySettings::from_secret_data(&secret(&[("address", address)])) {
                Ok(settings) => settings.to_string(),
                Err(e) => e.to_string(),
            };
            assert!(
                !text.contains("PLANTED") && !text.contains("TED"),
                "{address}: {text}"
            );
        }
        assert_eq!(
            without_credentials("http://u:PLANTED@proxy:3128 x"),
            "http://****@proxy:3128 x"
        );
        // A username and password from their own keys, with an address that does not take them.
        let text = ProxySettings::from_secret_data(&secret(&[
            ("address", "http://proxy:3128 x"),
            ("username", "u"),
            ("password", "PLANTED"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(!text.contains("PLANTED"), "{text}");
    }
}
