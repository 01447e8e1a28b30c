//! One bounded read of a named object for a reconcile.

use std::time::Duration;

/// How long one API read of a reconcile may take; a stuck read must not hold a worker.
pub const API_READ_DEADLINE: Duration = Duration::from_secs(30);

/// One GET of a named object for a reconcile: the name is checked before it is put in a URL
/// (names also come from other objects, e.g. a ServiceAccount's imagePullSecrets), the call is
/// bounded by [`API_READ_DEADLINE`], and its error reads as a sentence.
pub async fn read_named<T>(
    name: &str,
    read: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, String> {
    crate::api::check_object_name(name).map_err(|why| format!("invalid name {name:?}: {why}"))?;
    match tokio::time::timeout(API_READ_DEADLINE, read).await {
        Ok(result) => result.map_err(|e| crate::runtime::api_error::describe_api_error(&e)),
        Err(_) => Err(format!(
            "the API server did not answer within {}s",
            API_READ_DEADLINE.as_secs()
        )),
    }
}
