//! The key of an ImageRepository's tags: its namespace and name, validated so that no key can
//! name a path outside the store.

use super::StoreError;
use std::fmt;

/// Namespace and name of an ImageRepository.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RepoKey {
    namespace: String,
    name: String,
}

impl RepoKey {
    /// Validates Kubernetes naming: the namespace a DNS label, the name a DNS subdomain. That
    /// excludes `/`, `..`, `.`, NUL and upper case, so the key is always one safe path segment.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Result<Self, StoreError> {
        let (namespace, name) = (namespace.into(), name.into());
        let reason = if namespace.is_empty() || name.is_empty() {
            Some("repo namespace and name are required")
        } else if !is_dns_label(&namespace) {
            Some("the namespace must be a DNS label (a-z, 0-9, '-', at most 63)")
        } else if !is_dns_subdomain(&name) {
            Some("the name must be a DNS subdomain (a-z, 0-9, '-', '.', at most 253)")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(StoreError::InvalidKey {
                namespace,
                name,
                reason,
            }),
            None => Ok(RepoKey { namespace, name }),
        }
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for RepoKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

fn is_dns_label(s: &str) -> bool {
    s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.')
            .all(|label| !label.is_empty() && is_dns_label(label))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_kubernetes_names() {
        assert!(RepoKey::new("flux-system", "podinfo").is_ok());
        assert!(RepoKey::new("a", "app.v2").is_ok());
    }

    #[test]
    fn rejects_traversal_and_invalid_names() {
        for (ns, name) in [
            ("", "x"),
            ("x", ""),
            ("..", "x"),
            ("x", ".."),
            ("x", "."),
            ("a/b", "x"),
            ("x", "a/b"),
            ("x", "../etc"),
            ("X", "x"),
            ("x", "a\0b"),
            ("-x", "y"),
            ("x", "a..b"),
            ("x", ".hidden"),
        ] {
            assert!(RepoKey::new(ns, name).is_err(), "{ns:?}/{name:?}");
        }
        let err = RepoKey::new("", "x").unwrap_err().to_string();
        assert!(
            err.contains("repo namespace and name are required"),
            "{err}"
        );
    }
}
