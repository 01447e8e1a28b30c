//! The trust policy (`trustpolicy.json`) as notation-go reads and validates it: version 1.0,
//! statements with unique names, their levels and overrides, trust stores and trusted
//! identities (RFC 4514 DNs with the mandatory C, ST and O, `*` only alone, none overlapping;
//! both required unless the level is `skip`, which takes neither), and registry scopes (`*` only
//! alone, no scope in two statements).

use super::dn;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The Secret entry of the trust policy.
pub const TRUST_POLICY: &str = "trustpolicy.json";
/// Statements in the trust policy.
pub const MAX_POLICIES: usize = 32;
/// The trust policy, and each certificate entry.
pub const MAX_ENTRY_BYTES: usize = 256 << 10;

/// A statement's level (Notary Project's), by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Level {
    Strict,
    Permissive,
    Audit,
    /// Nothing verified: no signature needed.
    Skip,
}

/// Which checks beyond integrity (always enforced below `skip`) fail a signature rather than
/// being logged: the level's, changed by `signatureVerification.override`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Enforced {
    /// The chain leads to the trust store, and the leaf names a trusted identity.
    pub(super) authenticity: bool,
    /// Without a timestamp authority: every certificate of the chain is valid now.
    pub(super) authentic_timestamp: bool,
    /// The signature's `io.cncf.notary.expiry` has not passed.
    pub(super) expiry: bool,
}

impl Level {
    fn enforced(self) -> Enforced {
        let (authenticity, authentic_timestamp, expiry) = match self {
            Level::Strict => (true, true, true),
            Level::Permissive => (true, false, false),
            Level::Audit | Level::Skip => (false, false, false),
        };
        Enforced {
            authenticity,
            authentic_timestamp,
            expiry,
        }
    }
}

/// One trust policy statement.
#[derive(Debug, Clone)]
pub(super) struct Statement {
    pub(super) name: String,
    pub(super) scopes: Vec<String>,
    pub(super) level: Level,
    pub(super) enforced: Enforced,
    /// `*`, or the attributes a leaf's subject must have.
    pub(super) identities: Option<Vec<dn::Dn>>,
    /// The statement names a `tsa:` store: notation then requires a timestamp countersignature
    /// for the authentic timestamp (with `verifyTimestamp: afterCertExpiry`, only once a
    /// certificate of the chain expired).
    pub(super) timestamped: Option<VerifyTimestamp>,
}

/// `signatureVerification.verifyTimestamp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum VerifyTimestamp {
    Always,
    AfterCertExpiry,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    #[serde(default)]
    version: String,
    #[serde(default)]
    trust_policies: Vec<Raw>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    #[serde(default)]
    name: String,
    #[serde(default)]
    registry_scopes: Vec<String>,
    signature_verification: Verification,
    #[serde(default)]
    trust_stores: Vec<String>,
    #[serde(default)]
    trusted_identities: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Verification {
    #[serde(default)]
    level: String,
    #[serde(default)]
    r#override: BTreeMap<String, String>,
    #[serde(default)]
    verify_timestamp: String,
}

pub(super) fn parse_policy(bytes: &[u8]) -> Result<Vec<Statement>, String> {
    let document: Document = super::super::trust_document(
        bytes,
        TRUST_POLICY,
        MAX_ENTRY_BYTES,
        "a Notary Project trust policy",
    )?;
    match document.version.as_str() {
        "1.0" => {}
        "" => {
            return Err(format!(
                "{TRUST_POLICY} has no version (notation reads 1.0)"
            ))
        }
        other => {
            return Err(format!(
                "{TRUST_POLICY} has the version '{other}' (notation reads 1.0)"
            ))
        }
    }
    if document.trust_policies.len() > MAX_POLICIES {
        return Err(format!("{TRUST_POLICY} has over {MAX_POLICIES} statements"));
    }
    let mut names = std::collections::BTreeSet::new();
    let mut statements = Vec::new();
    for raw in document.trust_policies {
        if !names.insert(raw.name.clone()) {
            return Err(format!(
                "two trust policy statements are named '{}'",
                raw.name
            ));
        }
        statements.push(statement(raw)?);
    }
    if statements.is_empty() {
        return Err(format!("{TRUST_POLICY} has no trust policy statement"));
    }
    check_scopes(&statements)?;
    Ok(statements)
}

/// One statement, validated as notation-go's `validatePolicyCore` does.
fn statement(raw: Raw) -> Result<Statement, String> {
    let name = raw.name;
    if name.is_empty() {
        return Err("a trust policy statement has no name".into());
    }
    let wrong = |why: String| format!("trust policy '{name}': {why}");
    let level = match raw.signature_verification.level.as_str() {
        "strict" => Level::Strict,
        "permissive" => Level::Permissive,
        "audit" => Level::Audit,
        "skip" => Level::Skip,
        other => return Err(wrong(format!("unknown level '{other}'"))),
    };
    let enforced = overridden(level, &raw.signature_verification.r#override).map_err(wrong)?;
    let verify_timestamp = match raw.signature_verification.verify_timestamp.as_str() {
        "" | "always" => VerifyTimestamp::Always,
        "afterCertExpiry" => VerifyTimestamp::AfterCertExpiry,
        other => {
            return Err(wrong(format!(
                "verifyTimestamp '{other}' is not always or afterCertExpiry"
            )))
        }
    };
    if level == Level::Skip {
        if !raw.trust_stores.is_empty() || !raw.trusted_identities.is_empty() {
            return Err(wrong(
                "level skip takes no trustStores or trustedIdentities; remove them".into(),
            ));
        }
    } else if raw.trust_stores.is_empty() || raw.trusted_identities.is_empty() {
        return Err(wrong(
            "both trustStores and trustedIdentities are required below level skip".into(),
        ));
    }
    for store in &raw.trust_stores {
        let (kind, store_name) = store.split_once(':').unwrap_or(("", ""));
        let named = !store_name.is_empty()
            && store_name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
        if !["ca", "signingAuthority", "tsa"].contains(&kind) || !named {
            return Err(wrong(format!(
                "trust store '{store}' is not <ca|signingAuthority|tsa>:<name>"
            )));
        }
    }
    let identities = identities(&raw.trusted_identities).map_err(wrong)?;
    let timestamped = raw
        .trust_stores
        .iter()
        .any(|s| s.starts_with("tsa:"))
        .then_some(verify_timestamp);
    Ok(Statement {
        name,
        scopes: raw.registry_scopes,
        level,
        enforced,
        identities,
        timestamped,
    })
}

/// The level's enforcement with `override` applied: authenticity, authenticTimestamp, expiry
/// and revocation may be set to enforce or log (revocation also to skip); integrity may not
/// change, and `skip` takes no override.
fn overridden(level: Level, changes: &BTreeMap<String, String>) -> Result<Enforced, String> {
    let mut enforced = level.enforced();
    if !changes.is_empty() && level == Level::Skip {
        return Err("level skip takes no override".into());
    }
    for (check, action) in changes {
        if !["enforce", "log", "skip"].contains(&action.as_str()) {
            return Err(format!(
                "override action '{action}' is not enforce, log or skip"
            ));
        }
        if action == "skip" && check != "revocation" {
            return Err(format!("override: {check} cannot be skipped"));
        }
        let on = action == "enforce";
        match check.as_str() {
            "authenticity" => enforced.authenticity = on,
            "authenticTimestamp" => enforced.authentic_timestamp = on,
            "expiry" => enforced.expiry = on,
            // No certificate here names where to check revocation (OCSP, CRL): nothing to do.
            "revocation" => {}
            "integrity" => return Err("override: integrity cannot be overridden".into()),
            other => return Err(format!("override: unknown check '{other}'")),
        }
    }
    Ok(enforced)
}

/// The trusted identities: `*` (alone), or `x509.subject:` DNs with C, ST and O, none a
/// subset of another.
fn identities(written: &[String]) -> Result<Option<Vec<dn::Dn>>, String> {
    if written.iter().any(|i| i == "*") {
        if written.len() > 1 {
            return Err("the trusted identity '*' cannot be listed with others".into());
        }
        return Ok(None);
    }
    let mut parsed = Vec::new();
    for i in written {
        let text = i
            .strip_prefix("x509.subject:")
            .ok_or_else(|| format!("trusted identity '{i}' is not x509.subject: ..."))?;
        let identity = dn::parse(text).map_err(|e| format!("trusted identity: {e}"))?;
        // notation-go's mandatory attributes of a trusted identity.
        let missing: Vec<&str> = ["C", "ST", "O"]
            .into_iter()
            .filter(|k| !identity.contains_key(*k))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "trusted identity '{text}' lacks the mandatory attributes {} (C, ST and O are required)",
                missing.join(", ")
            ));
        }
        if let Some(other) = parsed
            .iter()
            .position(|p| dn::is_subset(p, &identity) || dn::is_subset(&identity, p))
        {
            return Err(format!(
                "trusted identities '{}' and '{i}' overlap",
                written[other]
            ));
        }
        parsed.push(identity);
    }
    Ok(Some(parsed))
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
mod tests;
