//! The registry client a policy's election asks with: the repository's credentials, TLS,
//! proxy, `insecure` and timeout, as its scans use them.

use super::super::env::{PolicyEnv, PolicyReader};
use crate::api::ImageRepository;
use crate::controller::lookup::credentials::{client_options, AuthError};
use crate::controller::object::intervals::IntervalError;
use crate::reference::ImageReference;
use crate::registry::{RegistryClient, RegistryError};
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

/// A client with the repository's credentials, TLS, proxy, `insecure` and `timeout` (its
/// `spec.timeout`, read once by the election's context).
pub(super) async fn registry_client<R: PolicyReader>(
    repo: &ImageRepository,
    image: &ImageReference,
    timeout: Duration,
    env: &PolicyEnv<'_, R>,
) -> Result<RegistryClient, ClientError> {
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
    Ok(RegistryClient::new(options, env.registries.clone())?)
}
