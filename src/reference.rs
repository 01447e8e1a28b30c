//! Image references as Flux reads `spec.image` (docs/registry.md): go-containerregistry's
//! `name.ParseReference` rules plus Flux's two extra checks (no URL scheme, no tag), and the
//! canonical name reported as `status.canonicalImageName`.

use std::fmt;
use std::net::Ipv4Addr;
use thiserror::Error;

/// Docker Hub's registry host, used when the image names none.
pub const DEFAULT_REGISTRY: &str = "index.docker.io";

const TAG_CHARS: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.";
const REPOSITORY_CHARS: &str = "abcdefghijklmnopqrstuvwxyz0123456789_-./";

/// A parsed image repository reference (`spec.image`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageReference {
    registry: String,
    repository: String,
    scheme: Scheme,
}

/// How the registry is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// HTTPS only.
    Https,
    /// Plain HTTP (`spec.insecure: true`).
    Http,
    /// A loopback, `localhost` or private-range host: HTTPS first, HTTP when the TLS handshake
    /// fails (docs/compatibility.md; Flux assumes HTTP for these hosts).
    HttpsThenHttp,
}

/// Why `spec.image` is not usable; the texts are Flux's.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ReferenceError {
    #[error("image '{image}' should not include URL scheme; remove '{scheme}://'")]
    Scheme { image: String, scheme: String },
    #[error("image '{image}' should not include a tag; remove ':{tag}'")]
    Tag { image: String, tag: String },
    /// Beyond Flux's text (which truncates the echo to the hex): the digest is named.
    #[error(
        "image '{image}' should not include a digest; remove '@{digest}' (spec.image names a \
         repository: digests are not accepted in spec.image)"
    )]
    Digest { image: String, digest: String },
    #[error("could not parse reference: {0}")]
    Unparsable(String),
    /// Flux's text, then what to change.
    #[error("could not parse reference: {image} ({fix})")]
    UnparsableFix { image: String, fix: String },
}

impl ImageReference {
    /// Parses `spec.image`; `insecure` is `spec.insecure`.
    pub fn parse(image: &str, insecure: bool) -> Result<Self, ReferenceError> {
        Self::parse_shown(image, insecure).map_err(|err| err.without_credentials(image))
    }

    /// An image a container runs, `registry/path:tag` or `registry/path@sha256:<hex>`: the tag
    /// or digest as ggcr reads them, the repository as [`Self::parse`] reads `spec.image`.
    pub fn parse_pinned(image: &str) -> Result<Self, ReferenceError> {
        let tagged = || {
            let (base, tag) = image.rsplit_once(':')?;
            (!tag.contains('/')).then_some(base)
        };
        let repository = match image.split_once('@') {
            Some((base, _)) => parse_digested(image).map(|_| base),
            None => tagged().filter(|_| parse_tagged(image).is_some()),
        };
        let repository = repository.ok_or_else(|| ReferenceError::UnparsableFix {
            image: image.into(),
            fix: "name a tag (registry/path:v1.0.0) or a digest (registry/path@sha256:<64 \
                  lower-case hex>)"
                .into(),
        })?;
        Self::parse(repository, false)
    }

    fn parse_shown(image: &str, insecure: bool) -> Result<Self, ReferenceError> {
        if let Some((scheme, _)) = image.split_once("://") {
            return Err(ReferenceError::Scheme {
                image: image.into(),
                scheme: scheme.into(),
            });
        }
        let (registry, repository) = parse_tagged(image)
            .or_else(|| parse_digested(image))
            .ok_or_else(|| unparsable(image))?;
        // Beyond Flux (docs/compatibility.md): every path component as the Distribution
        // reference grammar has it, so `.` and `..` (which would step outside `/v2/`) and empty
        // components never reach a request.
        if let Some(component) = repository.split('/').find(|c| !valid_component(c)) {
            return Err(ReferenceError::UnparsableFix {
                image: image.into(),
                fix: format!(
                    "the path component '{component}' is not allowed: each component is lower \
                     case letters and digits, joined by single '.' or '_', '__', or dashes"
                ),
            });
        }
        // Flux: what follows the registry text must not contain a colon (a tag or a digest).
        let rest = image.strip_prefix(registry.as_str()).unwrap_or(image);
        if let Some((_, digest)) = rest.split_once('@') {
            return Err(ReferenceError::Digest {
                image: image.into(),
                digest: digest.into(),
            });
        }
        if let Some(tag) = rest.split(':').nth(1) {
            return Err(ReferenceError::Tag {
                image: image.into(),
                tag: tag.into(),
            });
        }
        let scheme = if insecure {
            Scheme::Http
        } else if is_local(&registry) {
            Scheme::HttpsThenHttp
        } else {
            Scheme::Https
        };
        Ok(ImageReference {
            registry,
            repository,
            scheme,
        })
    }

    /// The registry host (and port), e.g. `index.docker.io`, `ghcr.io`, `localhost:5000`.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The repository path, with Docker Hub's implicit `library/`, e.g. `library/alpine`.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The canonical name: `index.docker.io/library/alpine` for `alpine`.
    pub fn canonical(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// How the registry is reached.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scheme::Https => "https",
            Scheme::Http => "http",
            Scheme::HttpsThenHttp => "https-then-http",
        })
    }
}

/// ggcr `NewTag`: an optional `:tag` (when the last `:`-part has no `/`), then the repository.
fn parse_tagged(image: &str) -> Option<(String, String)> {
    let mut base = image;
    if let Some((before, tag)) = image.rsplit_once(':') {
        if !tag.contains('/') {
            if !valid_element(tag, TAG_CHARS, 1, 128) {
                return None;
            }
            base = before;
        }
    }
    parse_repository(base)
}

/// ggcr `NewDigest`: exactly one `@`, a `sha256:` digest of 64 hex digits, then the repository
/// (with any tag before the `@` dropped).
fn parse_digested(image: &str) -> Option<(String, String)> {
    let mut parts = image.split('@');
    let (base, digest) = (parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let hex = digest.strip_prefix("sha256:")?;
    if hex.len() != 64
        || !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    parse_tagged(base).or_else(|| parse_repository(base))
}

/// ggcr `NewRepository` + `NewRegistry`: the first `/`-part is the registry only when it holds a
/// `.` or a `:`; `docker.io` means `index.docker.io`; Docker Hub names without `/` get `library/`.
fn parse_repository(name: &str) -> Option<(String, String)> {
    if name.is_empty() {
        return None;
    }
    let (registry, repository) = match name.split_once('/') {
        Some((host, rest)) if host.contains(['.', ':']) => (host, rest),
        _ => ("", name),
    };
    if !valid_element(repository, REPOSITORY_CHARS, 2, 255) || !valid_authority(registry) {
        return None;
    }
    let registry = match registry {
        "" | "docker.io" => DEFAULT_REGISTRY,
        other => other,
    };
    let repository = if registry == DEFAULT_REGISTRY && !repository.contains('/') {
        format!("library/{repository}")
    } else {
        repository.to_string()
    };
    Some((registry.to_string(), repository))
}

/// Flux's `could not parse reference`, with the fix where one is plain: a host in Unicode
/// (runtimes pull only by the punycode `xn--` name) or upper case in the path.
fn unparsable(image: &str) -> ReferenceError {
    let (host, path) = match image.split_once('/') {
        Some((host, path)) if host.contains(['.', ':']) => (host, path),
        _ => ("", image),
    };
    let fix = if !host.is_ascii() {
        let ascii = url::Url::parse(&format!("https://{host}/"))
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .filter(|h| h.is_ascii());
        Some(match ascii {
            Some(ascii) => format!(
                "the registry host '{host}' is not ASCII: write it in its punycode form, '{ascii}'"
            ),
            None => format!(
                "the registry host '{host}' is not ASCII: write it in its punycode (xn--) form"
            ),
        })
    } else if path.chars().any(|c| c.is_ascii_uppercase()) {
        // Named only when lower case is all that is wrong.
        let host = if host.is_empty() {
            String::new()
        } else {
            format!("{host}/")
        };
        let lower = format!("{host}{}", path.to_ascii_lowercase());
        parse_tagged(&lower).map(|_| format!("repository paths are lower case: '{lower}'"))
    } else {
        None
    };
    match fix {
        Some(fix) => ReferenceError::UnparsableFix {
            image: image.into(),
            fix,
        },
        None => ReferenceError::Unparsable(image.into()),
    }
}

/// The Distribution reference grammar's path component:
/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`.
fn valid_component(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let mut i = 0;
    loop {
        let run = i;
        while i < bytes.len() && alnum(bytes[i]) {
            i += 1;
        }
        if i == run {
            return false; // empty, or a separator at the start, end or after another
        }
        if i == bytes.len() {
            return true;
        }
        match bytes[i] {
            b'.' => i += 1,
            b'_' => {
                i += if bytes.get(i + 1) == Some(&b'_') {
                    2
                } else {
                    1
                }
            }
            b'-' => {
                while bytes.get(i) == Some(&b'-') {
                    i += 1;
                }
            }
            _ => return false,
        }
    }
}

impl ReferenceError {
    /// The same error with any `user:password@` of the image shown as `****@`: the image is
    /// echoed into status, Events and the log, and a password must not be.
    fn without_credentials(self, image: &str) -> Self {
        let shown = shown_image(image);
        if shown == image {
            return self;
        }
        match self {
            ReferenceError::Scheme { scheme, .. } => ReferenceError::Scheme {
                image: shown,
                scheme,
            },
            ReferenceError::Tag { tag, .. } => ReferenceError::Tag { image: shown, tag },
            ReferenceError::Digest { digest, .. } => ReferenceError::Digest {
                image: shown,
                digest,
            },
            ReferenceError::Unparsable(_) => ReferenceError::Unparsable(shown),
            ReferenceError::UnparsableFix { fix, .. } => ReferenceError::UnparsableFix {
                fix: fix.replace(image, &shown),
                image: shown,
            },
        }
    }
}

/// `image` with the user information of its host part (`user:password@`) as `****@`.
fn shown_image(image: &str) -> String {
    let (prefix, rest) = match image.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), image),
    };
    // Without a `/`, an `@` may start a digest (`alpine@sha256:<hex>`), which is no password.
    let is_digest = |after: &str| {
        after.split_once(':').is_some_and(|(alg, hex)| {
            !alg.is_empty()
                && alg.bytes().all(|b| b.is_ascii_alphanumeric())
                && hex.bytes().all(|b| b.is_ascii_hexdigit())
        })
    };
    let at = match rest.find('/') {
        Some(host_end) => rest[..host_end].rfind('@'),
        None => rest.rfind('@').filter(|&at| !is_digest(&rest[at + 1..])),
    };
    match at {
        Some(at) => format!("{prefix}****{}", &rest[at..]),
        None => image.to_string(),
    }
}

fn valid_element(element: &str, allowed: &str, min: usize, max: usize) -> bool {
    let n = element.chars().count();
    (min..=max).contains(&n) && element.chars().all(|c| allowed.contains(c))
}

/// An RFC 3986 authority as Go's `url.Parse("//" + name).Host == name` accepts it: no user info,
/// host characters only, and a numeric port if any.
fn valid_authority(name: &str) -> bool {
    if name.is_empty() {
        return true;
    }
    let host_char = |c: char| c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=".contains(c);
    let port_ok = |port: &str| port.bytes().all(|b| b.is_ascii_digit());
    // A bracketed IPv6 literal may be followed only by `:port`; its inside is not checked
    // character by character (Go's parser accepts any bracketed text it can unescape).
    if let Some(rest) = name.strip_prefix('[') {
        return match rest.split_once(']') {
            // A zone identifier (`[fe80::1%25eth0]`): ggcr rejects it, and so does Flux.
            Some((inside, _)) if inside.contains('%') => false,
            Some((_, "")) => true,
            Some((_, after)) => after.strip_prefix(':').is_some_and(port_ok),
            None => false,
        };
    }
    let (host, port) = name.rsplit_once(':').unwrap_or((name, ""));
    port_ok(port) && host.chars().all(host_char)
}

/// Hosts that Flux (ggcr) reaches over plain HTTP: RFC 1918 addresses, `localhost:<port>`,
/// `*.localhost`, and anything containing `127.0.0.1` or `::1` (a substring match, as in ggcr,
/// so `[2001:db8::1]` counts too; we still try HTTPS first for all of them).
fn is_local(registry: &str) -> bool {
    let host = registry.split(':').next().unwrap_or("");
    let private = host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_private());
    let dot_localhost = registry
        .rsplit_once(':')
        .map_or(registry, |(h, _)| h)
        .ends_with(".localhost");
    private
        || registry.starts_with("localhost:")
        || dot_localhost
        || registry.contains("127.0.0.1")
        || registry.contains("::1")
}

#[cfg(test)]
mod tests;
