//! What `spec.verify` trusts, read from its Secret in the policy's namespace: the keys the
//! signature gate verifies with.

use super::super::env::{PolicyEnv, PolicyReader};
use super::attested::Trust;
use crate::api::{ImagePolicy, VerificationProvider};
use crate::controller::lookup::api_read::ReadError;
use crate::controller::lookup::credentials::secret_data;
use crate::verify::{TrustedKeys, TRUSTED_ROOT};
use kube::ResourceExt;
use std::collections::BTreeMap;
use std::sync::Arc;
use thiserror::Error;

/// Why `spec.verify.secretRef`'s keys could not be had.
#[derive(Debug, Error)]
pub(super) enum KeysError {
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The Secret (`namespace/name`) and the field naming it.
    #[error("secret '{0}' ({1}) not found")]
    NotFound(String, &'static str),
    /// `secret`: where the trust came from (the Secret, or the public-good root).
    #[error("{secret}: {reason}")]
    Invalid { secret: String, reason: String },
    /// No public-good root may be used now (registry/sigstore_root/): the election waits.
    #[error("keyless signatures cannot be checked with Sigstore's public-good trusted root: {0}")]
    NoRoot(String),
}

/// What `spec.verify` trusts: the `*.pub` keys of its Secret (in the policy's namespace) and,
/// with `matchOIDCIdentity`, the Secret's `trusted_root.json` and those identities; a keyless
/// policy with no Secret, or whose Secret has no `trusted_root.json`, checks with Sigstore's
/// public-good root; with `attestations`, their rules. When that root is not the mirror's, why
/// (the election's notice).
pub(super) async fn trusted_keys<R: PolicyReader>(
    policy: &ImagePolicy,
    env: &PolicyEnv<'_, R>,
) -> Result<(Option<Arc<Trust>>, Option<String>), KeysError> {
    let Some(verify) = policy.spec.verify.as_ref() else {
        return Ok((None, None));
    };
    let identities: Vec<(String, String)> = verify
        .match_oidc_identity
        .iter()
        .flatten()
        .map(|id| (id.issuer.clone(), id.subject.clone()))
        .collect();
    let keyless = verify.keyless();
    let namespace = policy.namespace().unwrap_or_default();
    let name = verify.secret_ref.as_ref().map(|r| r.name.as_str());
    let (mut data, mut source) = match name {
        Some(name) => {
            let secret = env.reader.secret(&namespace, name).await?;
            let missing = || KeysError::NotFound(format!("{namespace}/{name}"), SECRET_REF);
            let secret = secret.ok_or_else(missing)?;
            let source = format!("secret '{namespace}/{name}' (spec.verify.secretRef)");
            (secret_data(&secret), source)
        }
        None if keyless => (
            BTreeMap::new(),
            "Sigstore's public-good trusted root".into(),
        ),
        None => return Ok((None, None)),
    };
    if let Some(root) = verify.trusted_root_secret_ref.as_ref().filter(|_| keyless) {
        let trusted_root = own_root(&namespace, &root.name, env).await?;
        data.insert(TRUSTED_ROOT.to_string(), trusted_root);
        if name.is_none() {
            source = format!(
                "secret '{namespace}/{}' ({TRUSTED_ROOT_SECRET_REF})",
                root.name
            );
        }
    }
    let mut notice = None;
    if needs_public_good(keyless, &data) {
        let root = env.sigstore_root.fresh().await;
        let why = || root.stale.clone().unwrap_or_default();
        let bytes = root
            .bytes
            .as_ref()
            .ok_or_else(|| KeysError::NoRoot(why()))?;
        notice = root.stale.as_ref().map(|why| {
            format!(
                "keyless signatures are checked with Sigstore's public-good trusted root: {why}"
            )
        });
        data.insert(TRUSTED_ROOT.to_string(), bytes.to_vec());
    }
    let require_tlog = verify.requires_tlog();
    let trust = match verify.provider {
        VerificationProvider::Cosign => TrustedKeys::from_secret(&data, &identities, require_tlog),
        VerificationProvider::Notation => TrustedKeys::notation(&data),
    };
    let invalid = |reason| KeysError::Invalid {
        secret: source.clone(),
        reason,
    };
    let keys = trust.map_err(invalid)?;
    let trust = Trust::new(keys, verify, &data).map_err(invalid)?;
    Ok((Some(Arc::new(trust)), notice))
}

const SECRET_REF: &str = "spec.verify.secretRef";
const TRUSTED_ROOT_SECRET_REF: &str = "spec.verify.trustedRootSecretRef";

/// The `trusted_root.json` of the Secret `namespace/name` that `trustedRootSecretRef` names.
async fn own_root<R: PolicyReader>(
    namespace: &str,
    name: &str,
    env: &PolicyEnv<'_, R>,
) -> Result<Vec<u8>, KeysError> {
    let secret = env.reader.secret(namespace, name).await?;
    let missing = || KeysError::NotFound(format!("{namespace}/{name}"), TRUSTED_ROOT_SECRET_REF);
    let mut data = secret_data(&secret.ok_or_else(missing)?);
    data.remove(TRUSTED_ROOT).ok_or_else(|| KeysError::Invalid {
        secret: format!("secret '{namespace}/{name}' ({TRUSTED_ROOT_SECRET_REF})"),
        reason: format!("it has no {TRUSTED_ROOT}"),
    })
}

/// Whether Sigstore's public-good root is added to the Secret's data: a keyless policy whose
/// Secret (if any) has no `trusted_root.json` of its own. Keys and notation never use it.
fn needs_public_good(keyless: bool, data: &BTreeMap<String, Vec<u8>>) -> bool {
    keyless && !data.contains_key(TRUSTED_ROOT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_keyless_without_a_root_of_its_own_takes_the_public_good_root() {
        let mut data = BTreeMap::new();
        assert!(needs_public_good(true, &data));
        assert!(!needs_public_good(false, &data), "keys or notation");
        data.insert(TRUSTED_ROOT.to_string(), b"{}".to_vec());
        assert!(!needs_public_good(true, &data), "the Secret's own root");
        assert!(!needs_public_good(false, &data));
    }
}
