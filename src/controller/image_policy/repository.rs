//! The step that finds a policy's ImageRepository: the cross-namespace flag, the read (from
//! the repositories' cache in the controller, from the files offline), and the repository's
//! `accessFrom` against the policy's namespace labels ([`super::access`]).

use super::env::{PolicyEnv, PolicyReader};
use super::may_read::{check_acl, check_cross_namespace, AccessError, NamespaceError};
use crate::api::{ImagePolicy, ImageRepository};
use crate::controller::lookup::api_read::ReadError;
use crate::controller::outcome::conditions::Reason;
use crate::controller::outcome::stop::Stop;
use kube::ResourceExt;
use std::collections::BTreeMap;

/// Why the repository cannot be used, with the reason it is reported under.
#[derive(Debug, thiserror::Error)]
enum FindError {
    #[error(transparent)]
    Access(#[from] AccessError),
    /// docs/compatibility.md: a read error is reported and retried (Flux swallows it).
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("referenced ImageRepository does not exist: ImageRepository.image.toolkit.fluxcd.io \"{0}\" not found")]
    Missing(String),
}

impl FindError {
    fn reason(&self) -> Reason {
        match self {
            FindError::Access(_) => Reason::AccessDenied,
            FindError::Read(_) => Reason::Failure,
            FindError::Missing(_) => Reason::DependencyNotReady,
        }
    }
}

/// The policy's repository, after the cross-namespace flag and the ACL (§4.3).
pub(super) async fn find_repository<R: PolicyReader>(
    policy: &ImagePolicy,
    env: &PolicyEnv<'_, R>,
) -> Result<ImageRepository, Stop> {
    find(policy, env).await.map_err(|err| {
        let message = format!("failed to get the referred ImageRepository: {err}");
        Stop::Failed(err.reason(), message)
    })
}

async fn find<R: PolicyReader>(
    policy: &ImagePolicy,
    env: &PolicyEnv<'_, R>,
) -> Result<ImageRepository, FindError> {
    let policy_namespace = policy.namespace().unwrap_or_default();
    let reference = &policy.spec.image_repository_ref;
    let namespace = policy.repository_namespace();
    check_cross_namespace(
        &policy_namespace,
        &namespace,
        &reference.name,
        env.no_cross_namespace_refs,
    )?;
    let repo = env
        .reader
        .image_repository(&namespace, &reference.name)
        .await?
        .ok_or_else(|| FindError::Missing(reference.name.clone()))?;
    let labels = if namespace != policy_namespace && repo.spec.access_from.is_some() {
        match env.reader.namespace_labels(&policy_namespace).await {
            Ok(Some(labels)) => Ok(labels),
            Ok(None) => Err(NamespaceError::Missing(policy_namespace.clone())),
            Err(e) => Err(NamespaceError::Read(e)),
        }
    } else {
        Ok(BTreeMap::new())
    };
    check_acl(
        &policy_namespace,
        &namespace,
        &reference.name,
        repo.spec.access_from.as_deref(),
        || labels,
    )?;
    Ok(repo)
}
