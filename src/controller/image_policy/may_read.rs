//! May a policy read a repository's tags? (docs/imagepolicy.md): same namespace always; across
//! namespaces only when the flag allows it and the repository's `accessFrom` selects the
//! policy's namespace. Pure; the namespace's labels are read by the caller.

use crate::api::AccessFrom;
use std::collections::BTreeMap;

/// Why access was denied; the texts are Flux's.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error("cannot access 'ImageRepository/{namespace}/{name}', cross-namespace references have been blocked")]
    CrossNamespaceBlocked { namespace: String, name: String },
    #[error("access denied: '{namespace}/{name}' can't be accessed due to missing ACL labels on 'accessFrom'")]
    MissingAcl { namespace: String, name: String },
    #[error("access denied: '{namespace}/{name}' can't be accessed due to ACL labels mismatch on namespace '{policy_namespace}'")]
    Mismatch {
        namespace: String,
        name: String,
        policy_namespace: String,
    },
    #[error("access denied: {0}")]
    Namespace(#[from] NamespaceError),
}

/// Why the policy namespace's labels could not be read.
#[derive(Debug, thiserror::Error)]
pub enum NamespaceError {
    #[error(transparent)]
    Read(#[from] crate::controller::lookup::api_read::ReadError),
    #[error("namespaces \"{0}\" not found")]
    Missing(String),
}

/// Checked before the repository is read: the flag.
pub fn check_cross_namespace(
    policy_namespace: &str,
    repo_namespace: &str,
    repo_name: &str,
    no_cross_namespace_refs: bool,
) -> Result<(), AccessError> {
    if no_cross_namespace_refs && policy_namespace != repo_namespace {
        return Err(AccessError::CrossNamespaceBlocked {
            namespace: repo_namespace.into(),
            name: repo_name.into(),
        });
    }
    Ok(())
}

/// The ACL: `namespace_labels` are the policy namespace's (read only when needed).
pub fn check_acl(
    policy_namespace: &str,
    repo_namespace: &str,
    repo_name: &str,
    access_from: Option<&AccessFrom>,
    namespace_labels: impl FnOnce() -> Result<BTreeMap<String, String>, NamespaceError>,
) -> Result<(), AccessError> {
    if policy_namespace == repo_namespace {
        return Ok(());
    }
    let Some(acl) = access_from else {
        return Err(AccessError::MissingAcl {
            namespace: repo_namespace.into(),
            name: repo_name.into(),
        });
    };
    let labels = namespace_labels().map_err(AccessError::Namespace)?;
    let selected = acl.namespace_selectors.iter().any(|selector| {
        selector
            .match_labels
            .iter()
            .flatten()
            .all(|(k, v)| labels.get(k) == Some(v))
    });
    if selected {
        Ok(())
    } else {
        Err(AccessError::Mismatch {
            namespace: repo_namespace.into(),
            name: repo_name.into(),
            policy_namespace: policy_namespace.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::NamespaceSelector;

    fn acl(selectors: &[Option<&[(&str, &str)]>]) -> AccessFrom {
        AccessFrom {
            namespace_selectors: selectors
                .iter()
                .map(|labels| NamespaceSelector {
                    match_labels: labels.map(|l| {
                        l.iter()
                            .map(|(k, v)| (k.to_string(), v.to_string()))
                            .collect()
                    }),
                })
                .collect(),
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> Result<BTreeMap<String, String>, NamespaceError> {
        Ok(pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect())
    }

    #[test]
    fn the_acl_matrix() {
        let team = [("team", "a")];
        let other = [("team", "b")];
        let env = [("env", "prod")];
        let cases: [(&str, &str, Option<AccessFrom>, bool); 7] = [
            ("same namespace", "repos", None, true),
            ("no ACL", "apps", None, false),
            ("empty matchLabels", "apps", Some(acl(&[Some(&[])])), true),
            ("missing matchLabels", "apps", Some(acl(&[None])), true),
            ("match", "apps", Some(acl(&[Some(&team)])), true),
            ("mismatch", "apps", Some(acl(&[Some(&other)])), false),
            (
                "several selectors, one matches",
                "apps",
                Some(acl(&[Some(&other), Some(&team)])),
                true,
            ),
        ];
        for (name, policy_ns, access, allowed) in cases {
            let result = check_acl(policy_ns, "repos", "r", access.as_ref(), || labels(&team));
            assert_eq!(result.is_ok(), allowed, "{name}: {result:?}");
        }
        let all_labels_needed = acl(&[Some(&[("team", "a"), ("env", "prod")])]);
        assert!(
            check_acl("apps", "repos", "r", Some(&all_labels_needed), || labels(
                &env
            ))
            .is_err()
        );
    }

    #[test]
    fn messages_are_fluxs() {
        let missing = check_acl("apps", "repos", "r", None, || labels(&[])).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "access denied: 'repos/r' can't be accessed due to missing ACL labels on 'accessFrom'"
        );
        let mismatch = check_acl(
            "apps",
            "repos",
            "r",
            Some(&acl(&[Some(&[("x", "y")])])),
            || labels(&[]),
        )
        .unwrap_err();
        assert_eq!(
            mismatch.to_string(),
            "access denied: 'repos/r' can't be accessed due to ACL labels mismatch on namespace 'apps'"
        );
        let blocked = check_cross_namespace("apps", "repos", "r", true).unwrap_err();
        assert_eq!(
            blocked.to_string(),
            "cannot access 'ImageRepository/repos/r', cross-namespace references have been blocked"
        );
        assert!(check_cross_namespace("repos", "repos", "r", true).is_ok());
        assert!(check_cross_namespace("apps", "repos", "r", false).is_ok());
    }
}
