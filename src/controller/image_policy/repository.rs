//! The step that finds a policy's ImageRepository: the cross-namespace flag, the read (from
//! the repositories' cache in the controller, from the files offline), and the repository's
//! `accessFrom` against the policy's namespace labels ([`super::access`]).

use super::access::{check_acl, check_cross_namespace, AccessError};
use super::env::{PolicyEnv, PolicyReader};
use crate::api::{ImagePolicy, ImageRepository};
use crate::controller::shared::conditions::Reason;
use crate::controller::shared::stop::Stop;
use kube::ResourceExt;
use std::collections::BTreeMap;

/// The policy's repository, after the cross-namespace flag and the ACL (§4.3).
pub(super) async fn find_repository<R: PolicyReader>(
    policy: &ImagePolicy,
    env: &PolicyEnv<'_, R>,
) -> Result<ImageRepository, Stop> {
    let failed = |reason, err| {
        let message = format!("failed to get the referred ImageRepository: {err}");
        Stop::Failed(reason, message)
    };
    find(policy, env)
        .await
        .map_err(|(reason, err)| failed(reason, err))
}

async fn find<R: PolicyReader>(
    policy: &ImagePolicy,
    env: &PolicyEnv<'_, R>,
) -> Result<ImageRepository, (Reason, String)> {
    let policy_namespace = policy.namespace().unwrap_or_default();
    let reference = &policy.spec.image_repository_ref;
    let namespace = policy.repository_namespace();
    let denied = |e: AccessError| (Reason::AccessDenied, e.to_string());
    check_cross_namespace(
        &policy_namespace,
        &namespace,
        &reference.name,
        env.no_cross_namespace_refs,
    )
    .map_err(denied)?;
    let repo = env
        .reader
        .image_repository(&namespace, &reference.name)
        .await
        // docs/compatibility.md: a read error is reported and retried (Flux swallows it).
        .map_err(|e| (Reason::Failure, e))?
        .ok_or_else(|| {
            let err = format!(
                "referenced ImageRepository does not exist: ImageRepository.image.toolkit.fluxcd.io \"{}\" not found",
                reference.name
            );
            (Reason::DependencyNotReady, err)
        })?;
    let labels = if namespace != policy_namespace && repo.spec.access_from.is_some() {
        match env.reader.namespace_labels(&policy_namespace).await {
            Ok(Some(labels)) => Ok(labels),
            Ok(None) => Err(format!("namespaces \"{policy_namespace}\" not found")),
            Err(e) => Err(e),
        }
    } else {
        Ok(BTreeMap::new())
    };
    check_acl(
        &policy_namespace,
        &namespace,
        &reference.name,
        repo.spec.access_from.as_ref(),
        || labels,
    )
    .map_err(denied)?;
    Ok(repo)
}
