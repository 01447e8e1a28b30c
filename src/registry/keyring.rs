//! Registry credentials from Kubernetes docker config Secrets, matched to an image the way the
//! kubelet matches pull secrets (docs/registry.md): keys lose their scheme and a
//! `/v1/` or `/v2/` path prefix; a key matches `<registry>/<repository>` when it has as many
//! host labels (each may be a glob, `*.example.com`), the same port, and its path is a prefix
//! of the repository path. Keys are tried in reverse lexical order; the first match wins.

use super::ConfigError;
use base64::Engine;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// A username and password for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Credentials({}:****)", self.username)
    }
}

/// Every credential of a set of docker config Secrets.
#[derive(Clone, Debug, Default)]
pub struct Keyring {
    /// Normalised key (`host[:port][/path]`) to its credentials, in the order added.
    creds: HashMap<String, Vec<Credentials>>,
}

#[derive(Deserialize)]
struct ConfigJson {
    #[serde(default)]
    auths: BTreeMap<String, Entry>,
}

#[derive(Deserialize, Default)]
struct Entry {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    auth: String,
}

impl Keyring {
    /// An empty keyring: every lookup is anonymous.
    pub fn new() -> Self {
        Keyring::default()
    }

    /// Adds a Secret's data. Only `kubernetes.io/dockerconfigjson` (key `.dockerconfigjson`)
    /// and `kubernetes.io/dockercfg` (key `.dockercfg`) contribute; other types are ignored, as
    /// the kubelet and Flux ignore them.
    pub fn add_secret(
        &mut self,
        secret_type: &str,
        data: &BTreeMap<String, Vec<u8>>,
    ) -> Result<(), ConfigError> {
        match (
            secret_type,
            data.get(".dockerconfigjson"),
            data.get(".dockercfg"),
        ) {
            ("kubernetes.io/dockerconfigjson", Some(json), _) => self.add_config_json(json),
            ("kubernetes.io/dockercfg", _, Some(cfg)) => {
                let auths: BTreeMap<String, Entry> = serde_json::from_slice(cfg)
                    .map_err(|e| ConfigError::DockerConfig(format!(".dockercfg: {e}")))?;
                self.add_entries(auths)
            }
            _ => Ok(()),
        }
    }

    /// Adds a `{"auths": {...}}` document (a `.dockerconfigjson`, or `~/.docker/config.json`).
    pub fn add_config_json(&mut self, json: &[u8]) -> Result<(), ConfigError> {
        let config: ConfigJson = serde_json::from_slice(json)
            .map_err(|e| ConfigError::DockerConfig(format!(".dockerconfigjson: {e}")))?;
        self.add_entries(config.auths)
    }

    fn add_entries(&mut self, auths: BTreeMap<String, Entry>) -> Result<(), ConfigError> {
        for (location, entry) in auths {
            let creds = entry.credentials(&location)?;
            let Some(key) = normalise_key(&location) else {
                tracing::warn!(%location, "ignoring a docker config entry that is not a registry URL");
                continue;
            };
            self.creds.entry(key).or_default().push(creds);
        }
        Ok(())
    }

    /// The credentials for `target` (`<registry>/<repository>`, the canonical image name), or
    /// `None` for anonymous access.
    pub fn lookup(&self, target: &str) -> Option<&Credentials> {
        let mut keys: Vec<&String> = self.creds.keys().collect();
        keys.sort_unstable_by(|a, b| b.cmp(a));
        keys.into_iter()
            .find(|key| urls_match(key, target))
            .and_then(|key| self.creds[key].first())
    }
}

impl Entry {
    /// `auth` (base64 `user:pass`) wins over `username`/`password`, as in the kubelet.
    fn credentials(self, location: &str) -> Result<Credentials, ConfigError> {
        if self.auth.is_empty() {
            return Ok(Credentials {
                username: self.username,
                password: self.password,
            });
        }
        let bad = |why: &str| ConfigError::DockerConfig(format!("the 'auth' of {location} {why}"));
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(self.auth.trim())
            .map_err(|_| bad("is not base64"))?;
        let decoded = String::from_utf8(decoded).map_err(|_| bad("is not UTF-8"))?;
        let (username, password) = decoded
            .split_once(':')
            .ok_or_else(|| bad("is not 'username:password'"))?;
        Ok(Credentials {
            username: username.into(),
            password: password.into(),
        })
    }
}

/// `https://index.docker.io/v1/` → `index.docker.io`; `registry.example/team` stays.
fn normalise_key(location: &str) -> Option<String> {
    let (host, path) = split_schemeless(location)?;
    let path = match path.get(..4) {
        Some("/v1/" | "/v2/") => &path[3..],
        _ => path,
    };
    Some(if path.is_empty() || path == "/" {
        host.to_string()
    } else {
        format!("{host}{path}")
    })
}

/// Splits `[scheme://]host[:port][/path]` into the authority and the path (with its `/`).
fn split_schemeless(url: &str) -> Option<(&str, &str)> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .unwrap_or(url);
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let (host, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    (!host.is_empty() && !host.contains('@')).then_some((host, path))
}

/// `host:port` → (`host`, `port`); `[v6]:port` keeps its brackets; no port → "".
fn split_port(authority: &str) -> (&str, &str) {
    if authority.starts_with('[') {
        return match authority.split_once("]:") {
            Some((host, port)) => (&authority[..=host.len()], port),
            None => (authority, ""),
        };
    }
    match authority.split_once(':') {
        Some((host, port)) if !port.contains(':') => (host, port),
        _ => (authority, ""),
    }
}

/// The kubelet's `URLsMatchStr(glob, target)`.
fn urls_match(glob: &str, target: &str) -> bool {
    let (Some((glob_auth, glob_path)), Some((target_auth, target_path))) =
        (split_schemeless(glob), split_schemeless(target))
    else {
        return false;
    };
    let (glob_host, glob_port) = split_port(glob_auth);
    let (target_host, target_port) = split_port(target_auth);
    if glob_port != target_port {
        return false;
    }
    let glob_labels: Vec<&str> = glob_host.split('.').collect();
    let target_labels: Vec<&str> = target_host.split('.').collect();
    glob_labels.len() == target_labels.len()
        && glob_labels
            .iter()
            .zip(&target_labels)
            .all(|(g, t)| glob_match(g.as_bytes(), t.as_bytes()))
        && target_path.starts_with(glob_path)
}

/// Go's `filepath.Match` on one host label: `*`, `?`, `[set]`, `[^set]`, `\` escapes.
///
/// The pattern is a tenant's docker config key, so matching must not backtrack: it runs as a
/// set of pattern positions advanced over the text. Runs of stars collapse to one, sets are
/// 256-bit tables, and a pattern needing more bytes than the label has fails before the walk,
/// so a lookup costs O(label²) per key whatever its length or shape (Go's own matcher does not
/// backtrack either).
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let tokens = glob_tokens(pattern);
    let needed = tokens.iter().filter(|t| **t != Glob::Star).count();
    if needed > text.len() {
        return false;
    }
    // `live[i]`: the first `i` tokens can match the text read so far.
    let mut live = vec![false; tokens.len() + 1];
    let mut next = live.clone();
    live[0] = true;
    close_stars(&tokens, &mut live);
    for &c in text {
        next.fill(false);
        for (i, token) in tokens.iter().enumerate() {
            if !live[i] {
                continue;
            }
            match token {
                Glob::Star => next[i] = true,
                other if other.matches(c) => next[i + 1] = true,
                _ => {}
            }
        }
        close_stars(&tokens, &mut next);
        if !next.iter().any(|&l| l) {
            return false;
        }
        std::mem::swap(&mut live, &mut next);
    }
    live[tokens.len()]
}

/// A star matches the empty string too: whoever reaches it also reaches what follows.
fn close_stars(tokens: &[Glob], live: &mut [bool]) {
    for (i, token) in tokens.iter().enumerate() {
        if live[i] && *token == Glob::Star {
            live[i + 1] = true;
        }
    }
}

/// One element of a host-label glob.
#[derive(Debug, PartialEq, Eq)]
enum Glob {
    Star,
    Any,
    Byte(u8),
    /// `[...]` (negation already applied): bit `c` is set when byte `c` matches.
    Set([u64; 4]),
    /// A `[` without its `]`: Go reports ErrBadPattern, which is no match.
    Never,
}

impl Glob {
    fn matches(&self, c: u8) -> bool {
        match self {
            Glob::Star | Glob::Any => true,
            Glob::Byte(b) => *b == c,
            Glob::Set(bits) => bits[usize::from(c >> 6)] & (1 << (c & 63)) != 0,
            Glob::Never => false,
        }
    }
}

/// The table of a set's body (`a-cx`), negated when it started with `^`.
fn set_table(negated: bool, set: &[u8]) -> [u64; 4] {
    let mut bits = [0u64; 4];
    let mut add = |lo: u8, hi: u8| {
        for c in lo..=hi {
            bits[usize::from(c >> 6)] |= 1 << (c & 63);
        }
    };
    let mut i = 0;
    while i < set.len() {
        if i + 2 < set.len() && set[i + 1] == b'-' {
            add(set[i], set[i + 2]);
            i += 3;
        } else {
            add(set[i], set[i]);
            i += 1;
        }
    }
    if negated {
        bits.iter_mut().for_each(|b| *b = !*b);
    }
    bits
}

fn glob_tokens(pattern: &[u8]) -> Vec<Glob> {
    let mut tokens = Vec::new();
    let mut rest = pattern;
    while let Some((&p, after)) = rest.split_first() {
        rest = after;
        let token = match p {
            // `**` matches what `*` matches.
            b'*' if tokens.last() == Some(&Glob::Star) => continue,
            b'*' => Glob::Star,
            b'?' => Glob::Any,
            b'\\' if !rest.is_empty() => {
                let escaped = rest[0];
                rest = &rest[1..];
                Glob::Byte(escaped)
            }
            b'[' => match rest.iter().position(|&b| b == b']') {
                None => {
                    // Nothing after an unclosed set can match.
                    tokens.push(Glob::Never);
                    break;
                }
                Some(close) => {
                    let (negated, set) = match rest[..close].split_first() {
                        Some((b'^', set)) => (true, set),
                        _ => (false, &rest[..close]),
                    };
                    rest = &rest[close + 1..];
                    Glob::Set(set_table(negated, set))
                }
            },
            other => Glob::Byte(other),
        };
        tokens.push(token);
    }
    tokens
}

#[cfg(test)]
mod tests;
