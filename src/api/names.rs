//! The names an object gives for other objects (Secrets, a ServiceAccount, an ImageRepository,
//! a namespace) are checked as the API server checks names before any request is built from
//! them: a name is pasted into a URL path, so `?x=1` would turn a GET of one Secret into a LIST
//! of all of them, and `?watch=true` into a watch that holds a worker (docs/security.md).

use super::{ImagePolicySpec, ImageRepositorySpec};

const SUBDOMAIN_MAX: usize = 253;
const LABEL_MAX: usize = 63;

/// A DNS-1123 subdomain, the name of a Secret, a ServiceAccount or an ImageRepository: `Err`
/// says why not, in the API server's words.
pub fn check_object_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a name must not be empty".into());
    }
    if name.len() > SUBDOMAIN_MAX {
        return Err(format!("must be no more than {SUBDOMAIN_MAX} characters"));
    }
    if name.split('.').all(is_label) {
        Ok(())
    } else {
        Err(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character"
                .into(),
        )
    }
}

/// A DNS-1123 label, the name of a namespace.
pub fn check_namespace_name(name: &str) -> Result<(), String> {
    if name.len() > LABEL_MAX {
        return Err(format!("must be no more than {LABEL_MAX} characters"));
    }
    if is_label(name) {
        Ok(())
    } else {
        Err(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \
             '-', and must start and end with an alphanumeric character"
                .into(),
        )
    }
}

fn is_label(part: &str) -> bool {
    let bytes = part.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    // (No length per part: Kubernetes' subdomain rule bounds only the whole name.)
    !bytes.is_empty()
        && alnum(&bytes[0])
        && alnum(&bytes[bytes.len() - 1])
        && bytes.iter().all(|b| alnum(b) || *b == b'-')
}

/// Shows a name as the message quotes it: escaped, and cut after 64 characters (it is a
/// tenant's text).
fn quoted(name: &str) -> String {
    let mut shown: String = name.chars().take(64).collect();
    if shown.len() < name.len() {
        shown.push('…');
    }
    format!("{shown:?}")
}

fn field(path: &str, name: &str, check: fn(&str) -> Result<(), String>) -> Result<(), String> {
    check(name).map_err(|why| format!("invalid {path} {}: {why}", quoted(name)))
}

impl ImageRepositorySpec {
    /// Every object name the spec gives, checked before any of them is read.
    pub fn check_references(&self) -> Result<(), String> {
        let refs = [
            ("spec.secretRef.name", self.secret_ref.as_ref()),
            ("spec.certSecretRef.name", self.cert_secret_ref.as_deref()),
            ("spec.proxySecretRef.name", self.proxy_secret_ref.as_deref()),
        ];
        for (path, reference) in refs {
            if let Some(r) = reference {
                field(path, &r.name, check_object_name)?;
            }
        }
        match self.service_account_name.as_deref() {
            Some(name) if !name.is_empty() => {
                field("spec.serviceAccountName", name, check_object_name)
            }
            _ => Ok(()),
        }
    }
}

impl ImagePolicySpec {
    /// The ImageRepository's name and namespace, and the trusted keys' Secret, checked before
    /// any is looked up.
    pub fn check_references(&self) -> Result<(), String> {
        let r = &self.image_repository_ref;
        field("spec.imageRepositoryRef.name", &r.name, check_object_name)?;
        let verify = self.verify.as_deref();
        let secrets = [
            (
                "spec.verify.secretRef.name",
                verify.and_then(|v| v.secret_ref.as_ref()),
            ),
            (
                "spec.verify.trustedRootSecretRef.name",
                verify.and_then(|v| v.trusted_root_secret_ref.as_ref()),
            ),
        ];
        for (path, secret) in secrets {
            if let Some(secret) = secret {
                field(path, &secret.name, check_object_name)?;
            }
        }
        match r.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => field(
                "spec.imageRepositoryRef.namespace",
                ns,
                check_namespace_name,
            ),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_names_follow_the_api_servers_rules() {
        for ok in ["a", "creds", "my-secret.v2", "0x", &"a".repeat(253)] {
            assert_eq!(check_object_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "?x=1",
            "?watch=true&timeoutSeconds=3600",
            "a/b",
            "..",
            ".",
            "-a",
            "a-",
            "A",
            "a..b",
            "a b",
            "%2e%2e",
            "a\u{e9}",
            &"a".repeat(254),
        ] {
            assert!(check_object_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn namespace_names_are_labels() {
        assert_eq!(check_namespace_name("team-a"), Ok(()));
        for bad in ["", "a.b", "?x", "A", &"a".repeat(64)] {
            assert!(check_namespace_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn messages_name_the_field_and_quote_the_value_bounded() {
        let spec: ImageRepositorySpec = serde_json::from_value(serde_json::json!({
            "image": "r/app", "interval": "1m", "certSecretRef": {"name": "ok"},
            "proxySecretRef": {"name": format!("?watch=true{}", "x".repeat(10_000))}
        }))
        .unwrap();
        let err = spec.check_references().unwrap_err();
        assert!(
            err.starts_with("invalid spec.proxySecretRef.name \"?watch=truexxx"),
            "{err}"
        );
        assert!(err.len() < 300, "a tenant's name is cut in messages: {err}");
        let spec: ImagePolicySpec = serde_json::from_value(serde_json::json!({
            "imageRepositoryRef": {"name": "app", "namespace": "?x=1"},
            "policy": {"alphabetical": {}}
        }))
        .unwrap();
        assert!(spec.check_references().unwrap_err().starts_with(
            "invalid spec.imageRepositoryRef.namespace \"?x=1\": a lowercase RFC 1123 label"
        ));
    }
}
