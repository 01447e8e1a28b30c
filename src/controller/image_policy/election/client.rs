//! The registry client a policy's election asks with: the repository's credentials, TLS,
//! proxy, `insecure` and timeout, as its scans use them.

use super::super::env::{PolicyEnv, PolicyReader};
use crate::api::ImageRepository;
use crate::controller::access::credentials::{client_options, AuthError};
use crate::controller::object::intervals::{intervals, IntervalError};
use crate::registry::{ImageReference, RegistryClient, RegistryError};
use kube::ResourceExt;
use std::time::Duration;
use thiserror::Error;

/// Why no registry client could be made for the repository.
#[derive(Debug, Error)]
pub enum ClientError {
    #[error(transparent)]
    Intervals(#[from] IntervalError),
    #[error("failed to configure authentication options: {0}")]
    Auth(#[from] AuthError),
    #[error(transparent)]
    Build(#[from] RegistryError),
}

/// A client with the repository's credentials, TLS, proxy, `insecure` and timeout, and that
/// timeout.
pub(super) async fn registry_client<R: PolicyReader>(
    repo: &ImageRepository,
    image: &ImageReference,
    env: &PolicyEnv<'_, R>,
) -> Result<(RegistryClient, Duration), ClientError> {
    let (_, timeout) = intervals(repo)?;
    let namespace = repo.namespace().unwrap_or_default();
    let options = client_options(
        repo,
        &namespace,
        &image.canonical(),
        env.reader,
        timeout,
        env.workload_identity,
    )
    .await?;
    let client = RegistryClient::new(options, env.registries.clone())?;
    Ok((client, timeout))
}
