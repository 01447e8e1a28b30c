//! Reading a registry's answer: a body within a size limit (and a memory budget), and an error
//! answer with its OCI error codes.

use super::describe::{chain, method_name};
use super::scheduler::Slot;
use super::{ClientOptions, RegistryError};
use reqwest::{Method, Response, Url};
use serde::Deserialize;
use std::sync::Arc;

/// The request or body read that held a host's slot past `crate::fair::TAKE_BACK_AFTER` while
/// another namespace, under its fair share of the host, waited: stopped, and tried again.
pub(super) fn taken_back_error(method: &Method, url: &Url, host: &str) -> RegistryError {
    RegistryError::InvalidResponse {
        method: method_name(method),
        url: url.to_string(),
        host: host.into(),
        detail: format!(
            "stopped after {}s: the registry was slow to answer while another namespace, \
             under its fair share of this host's request slots, waited for one; this \
             namespace held more than its share; it will be tried again",
            crate::fair::TAKE_BACK_AFTER.as_secs()
        ),
    }
}

/// Reads a body, refusing more than `limit` bytes (checked as it streams, not after).
pub(super) async fn read_limited(
    method: &Method,
    url: &Url,
    host: &str,
    response: Response,
    limit: usize,
) -> Result<Vec<u8>, RegistryError> {
    let never = std::future::pending();
    read_limited_with(method, url, host, response, limit, |_| Ok(()), never).await
}

/// [`read_limited`], asking `grow` for each chunk's bytes before keeping it (a memory budget);
/// its refusal ends the read with that reason, and so does `stopped` (the budget taking the
/// memory back for other namespaces) while the read waits for bytes.
pub(super) async fn read_limited_with(
    method: &Method,
    url: &Url,
    host: &str,
    mut response: Response,
    limit: usize,
    mut grow: impl FnMut(usize) -> Result<(), String>,
    stopped: impl std::future::Future<Output = String>,
) -> Result<Vec<u8>, RegistryError> {
    let invalid = |detail: String| RegistryError::InvalidResponse {
        method: method_name(method),
        url: url.to_string(),
        host: host.into(),
        detail,
    };
    let too_big = || invalid(format!("the body exceeds the {limit}-byte limit"));
    // A declared length only refuses what exceeds the limit: it is charged as bytes arrive,
    // since a length alone, declared and never sent, held the memory budget for as long as
    // the registry stalled.
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(too_big());
    }
    // The buffer doubles as chunks arrive, up to the declared length (so a body sent whole is
    // not copied at the end), never past the limit.
    let ceiling = response
        .content_length()
        .map_or(limit, |n| (n as usize).min(limit));
    let mut body = Vec::new();
    tokio::pin!(stopped);
    // The host's slot, held until the body is read, may be taken back (crate::fair).
    let slot = response
        .extensions()
        .get::<Arc<Slot>>()
        .map(|slot| slot.stopped());
    let taken_back = async move {
        match slot {
            Some(stopped) => stopped.await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(taken_back);
    loop {
        let chunk = tokio::select! {
            biased;
            detail = &mut stopped => return Err(invalid(detail)),
            () = &mut taken_back => return Err(taken_back_error(method, url, host)),
            chunk = response.chunk() => chunk,
        };
        match chunk {
            Ok(Some(chunk)) => {
                let needed = body.len() + chunk.len();
                if needed > limit {
                    return Err(too_big());
                }
                // `grow` is charged what is allocated (capacity), not only what is used.
                if needed > body.capacity() {
                    let capacity = needed.max(body.capacity() * 2).min(ceiling.max(needed));
                    grow(capacity - body.capacity()).map_err(invalid)?;
                    body.reserve_exact(capacity - body.len());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(err) => return Err(invalid(format!("reading the body: {}", chain(&err)))),
        }
    }
}

#[derive(Deserialize)]
struct OciErrors {
    #[serde(default)]
    errors: Vec<OciError>,
}

#[derive(Deserialize)]
struct OciError {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

/// A [`RegistryError::Status`] with the OCI error codes from the body (GET only: HEAD has none).
/// `options` say whether the client had credentials for the host (so a 401 means they were
/// rejected rather than missing) and how to name the settings to change.
pub(super) async fn status_error(
    method: Method,
    url: &Url,
    host: &str,
    response: Response,
    options: &ClientOptions,
) -> RegistryError {
    let status = response.status();
    let codes = if method == Method::HEAD {
        Vec::new()
    } else {
        read_limited(&method, url, host, response, 64 << 10)
            .await
            .ok()
            .and_then(|body| serde_json::from_slice::<OciErrors>(&body).ok())
            .map(|e| {
                e.errors
                    .into_iter()
                    .map(|e| match e.message.is_empty() {
                        true => e.code,
                        false => format!("{}: {}", e.code, e.message),
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    RegistryError::Status {
        method: method_name(&method),
        url: url.to_string(),
        host: host.into(),
        status_code: status.as_u16(),
        status: status.to_string(),
        codes,
        credentials_sent: options.credentials.is_some() || options.login.is_some(),
        fixes: options.fixes,
    }
}
