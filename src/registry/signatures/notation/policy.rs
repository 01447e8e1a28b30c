//! The trust policy (`trustpolicy.json`) as notation-go reads and validates it: statements,
//! their levels, registry scopes (`*` only alone, no scope in two statements) and trusted
//! identities (RFC 4514 DNs with the mandatory C, ST and O).

use super::dn;
use serde::Deserialize;

/// The Secret entry of the trust policy.
pub const TRUST_POLICY: &str = "trustpolicy.json";
/// Statements in the trust policy.
pub const MAX_POLICIES: usize = 32;
/// The trust policy, and each certificate entry.
pub const MAX_ENTRY_BYTES: usize = 256 << 10;

/// How strictly a policy verifies (Notary Project's levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Level {
    /// Integrity, authenticity and expiry enforced.
    Strict,
    /// Integrity and authenticity enforced; an expired signature passes.
    Permissive,
    /// Integrity enforced; authenticity and expiry only noted.
    Audit,
    /// No signature needed.
    Skip,
}

/// One trust policy statement.
#[derive(Debug, Clone)]
pub(super) struct Statement {
    pub(super) name: String,
    pub(super) scopes: Vec<String>,
    pub(super) level: Level,
    /// `*`, or the attributes a leaf's subject must have.
    pub(super) identities: Option<Vec<dn::Dn>>,
}

pub(super) fn parse_policy(bytes: &[u8]) -> Result<Vec<Statement>, String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Document {
        #[serde(default)]
        trust_policies: Vec<Raw>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Raw {
        name: String,
        #[serde(default)]
        registry_scopes: Vec<String>,
        signature_verification: Verification,
        #[serde(default)]
        trusted_identities: Vec<String>,
    }
    #[derive(Deserialize)]
    struct Verification {
        level: String,
    }
    let document: Document = super::super::trust_document(
        bytes,
        TRUST_POLICY,
        MAX_ENTRY_BYTES,
        "a Notary Project trust policy",
    )?;
    if document.trust_policies.len() > MAX_POLICIES {
        return Err(format!("{TRUST_POLICY} has over {MAX_POLICIES} statements"));
    }
    let statements = document
        .trust_policies
        .into_iter()
        .map(|raw| {
            let level = match raw.signature_verification.level.as_str() {
                "strict" => Level::Strict,
                "permissive" => Level::Permissive,
                "audit" => Level::Audit,
                "skip" => Level::Skip,
                other => return Err(format!("trust policy '{}': unknown level '{other}'", raw.name)),
            };
            let identities = if raw.trusted_identities.iter().any(|i| i == "*") {
                None
            } else {
                let parsed = raw
                    .trusted_identities
                    .iter()
                    .map(|i| {
                        let text = i.strip_prefix("x509.subject:").ok_or_else(|| {
                            format!("trust policy '{}': trusted identity '{i}' is not x509.subject: ...", raw.name)
                        })?;
                        let identity = dn::parse(text)
                            .map_err(|e| format!("trust policy '{}': trusted identity: {e}", raw.name))?;
                        // notation-go's mandatory attributes of a trusted identity.
                        let missing: Vec<&str> = ["C", "ST", "O"]
                            .into_iter()
                            .filter(|k| !identity.contains_key(*k))
                            .collect();
                        if !missing.is_empty() {
                            return Err(format!(
                                "trust policy '{}': trusted identity '{text}' lacks the mandatory \
                                 attributes {} (C, ST and O are required)",
                                raw.name,
                                missing.join(", ")
                            ));
                        }
                        Ok(identity)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Some(parsed)
            };
            Ok(Statement {
                name: raw.name,
                scopes: raw.registry_scopes,
                level,
                identities,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if statements.is_empty() {
        return Err(format!("{TRUST_POLICY} has no trust policy statement"));
    }
    check_scopes(&statements)?;
    Ok(statements)
}

/// Registry scopes as notation-go validates them: each statement names at least one, `*` only
/// alone, and no scope (nor `*`) in two statements, so one statement applies to a repository.
fn check_scopes(statements: &[Statement]) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for statement in statements {
        let name = &statement.name;
        if statement.scopes.is_empty() {
            return Err(format!("trust policy '{name}' has no registryScopes"));
        }
        if statement.scopes.len() > 1 && statement.scopes.iter().any(|s| s == "*") {
            return Err(format!(
                "trust policy '{name}': registryScopes mixes '*' with other scopes"
            ));
        }
        for scope in &statement.scopes {
            if !seen.insert(scope.as_str()) {
                return Err(format!(
                    "registry scope '{scope}' is in more than one trust policy statement"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(statements: serde_json::Value) -> Result<Vec<Statement>, String> {
        let document = serde_json::json!({"version": "1.0", "trustPolicies": statements});
        parse_policy(document.to_string().as_bytes())
    }

    fn statement(name: &str, scopes: &[&str], identity: &str) -> serde_json::Value {
        serde_json::json!({"name": name, "registryScopes": scopes,
            "signatureVerification": {"level": "strict"}, "trustedIdentities": [identity]})
    }

    /// What notation-go refuses, refused here too.
    #[test]
    fn trust_policies_are_validated_as_notation_go_validates_them() {
        let ok = "x509.subject: C=US, ST=WA, O=Example";
        assert!(policy(serde_json::json!([statement("a", &["*"], ok)])).is_ok());
        let err = policy(serde_json::json!([statement(
            "a",
            &["*"],
            "x509.subject: O=Example, CN=x"
        )]))
        .unwrap_err();
        assert!(
            err.contains("lacks the mandatory attributes C, ST"),
            "{err}"
        );
        let err = policy(serde_json::json!([statement(
            "a",
            &["*", "r.example/app"],
            ok
        )]))
        .unwrap_err();
        assert!(err.contains("mixes '*' with other scopes"), "{err}");
        let err = policy(serde_json::json!([
            statement("a", &["r.example/app"], ok),
            statement("b", &["r.example/app"], ok)
        ]))
        .unwrap_err();
        assert!(err.contains("'r.example/app' is in more than one"), "{err}");
        let err = policy(serde_json::json!([
            statement("a", &["*"], ok),
            statement("b", &["*"], ok)
        ]))
        .unwrap_err();
        assert!(err.contains("'*' is in more than one"), "{err}");
        let err = policy(serde_json::json!([statement("a", &[], ok)])).unwrap_err();
        assert!(err.contains("has no registryScopes"), "{err}");
    }
}
