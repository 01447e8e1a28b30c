//! One bounded read of a named object for a reconcile, and how it fails.

use std::time::Duration;
use thiserror::Error;

/// How long one API read of a reconcile may take; a stuck read must not hold a worker.
pub const API_READ_DEADLINE: Duration = Duration::from_secs(30);

/// Why an object the reconcile needs could not be read.
#[derive(Debug, Error)]
pub enum ReadError {
    /// The name cannot be a Kubernetes name (it came from a spec, or from another object).
    #[error("invalid {kind} {name:?}: {why}")]
    InvalidName {
        kind: &'static str,
        name: String,
        why: String,
    },
    /// The API server refused or failed the read.
    #[error("{}", crate::runtime::api_error::describe_api_error(.0))]
    Api(#[from] kube::Error),
    /// The API server did not answer in time.
    #[error("the API server did not answer within {}s", .0.as_secs())]
    Deadline(Duration),
}

/// One GET of a named object for a reconcile: the name is checked before it is put in a URL
/// (names also come from other objects, e.g. a ServiceAccount's imagePullSecrets), the call is
/// bounded by [`API_READ_DEADLINE`], and its error reads as a sentence.
pub async fn read_named<T>(
    name: &str,
    read: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, ReadError> {
    crate::api::check_object_name(name).map_err(|why| ReadError::InvalidName {
        kind: "name",
        name: name.into(),
        why,
    })?;
    match tokio::time::timeout(API_READ_DEADLINE, read).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(ReadError::Deadline(API_READ_DEADLINE)),
    }
}
