//! What `spec.verify` trusts, read from its Secret in the policy's namespace: the keys the
//! signature gate verifies with.

use super::super::env::{PolicyEnv, PolicyReader};
use crate::api::{ImagePolicy, TransparencyLog, VerificationProvider};
use crate::controller::access::api_read::ReadError;
use crate::controller::access::credentials::secret_data;
use crate::verify::TrustedKeys;
use kube::ResourceExt;
use std::sync::Arc;
use thiserror::Error;

/// Why `spec.verify.secretRef`'s keys could not be had.
#[derive(Debug, Error)]
pub(super) enum KeysError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("secret '{0}' (spec.verify.secretRef) not found")]
    NotFound(String),
    #[error("secret '{secret}' (spec.verify.secretRef): {reason}")]
    Invalid { secret: String, reason: String },
}

/// What `spec.verify` trusts: the `*.pub` keys of its Secret (in the policy's namespace) and,
/// with `matchOIDCIdentity`, the Secret's `trusted_root.json` and those identities.
pub(super) async fn trusted_keys<R: PolicyReader>(
    policy: &ImagePolicy,
    env: &PolicyEnv<'_, R>,
) -> Result<Option<Arc<TrustedKeys>>, KeysError> {
    let Some(verify) = policy.spec.verify.as_ref() else {
        return Ok(None);
    };
    let Some(name) = verify.secret_ref.as_ref().map(|r| r.name.as_str()) else {
        return Ok(None);
    };
    let identities: Vec<(String, String)> = verify
        .match_oidc_identity
        .iter()
        .flatten()
        .map(|id| (id.issuer.clone(), id.subject.clone()))
        .collect();
    let require_tlog = verify.transparency_log.unwrap_or_default() == TransparencyLog::Required;
    let namespace = policy.namespace().unwrap_or_default();
    let secret = env.reader.secret(&namespace, name).await?;
    let secret = secret.ok_or_else(|| KeysError::NotFound(format!("{namespace}/{name}")))?;
    let data = secret_data(&secret);
    let trust = match verify.provider {
        VerificationProvider::Cosign => TrustedKeys::from_secret(&data, &identities, require_tlog),
        VerificationProvider::Notation => TrustedKeys::notation(&data),
    };
    let keys = trust.map_err(|reason| {
        let secret = format!("{namespace}/{name}");
        KeysError::Invalid { secret, reason }
    })?;
    Ok(Some(Arc::new(keys)))
}
