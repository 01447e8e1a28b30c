//! Talking to OCI registries. No Kubernetes types in the public API: credentials and TLS material
//! come in as plain data (a Secret's `data` map), so the reconcilers and the offline commands
//! share this code.
//!
//! - `reference`: image references as Flux parses `spec.image`;
//! - `client`: one request, through the per-host `scheduler`, with `auth`;
//! - `tags`, `digest`: the two registry calls the controller makes;
//! - `fetch`, `inspect`, `signatures`: what a gated election reads (manifests, configs, signatures);
//! - `keyring`, `tls`, `proxy`: the settings a client is built from;
//! - `cloud`: logging in to cloud registries with the provider's identity;
//! - `sigstore_root`: Sigstore's public-good trusted root, kept current through TUF.

mod auth;
mod body;
mod bounded;
mod budget;
mod client;
pub mod cloud;
mod describe;
mod digest;
mod error;
mod fetch;
#[doc(hidden)]
pub mod fuzz;
mod inspect;
mod keyring;
mod login;
mod options;
mod proxy;
mod redirect;
mod registries;
mod request;
mod retry_after;
mod scheduler;
mod scope;
pub mod signatures;
pub mod sigstore_root;
mod tag_buf;
mod tag_page;
mod tag_read;
mod tags;
mod tls;
mod token_auth;

pub use budget::{Held, MemoryBudget, MAX_KEPT_BYTES, PROCESS_BUDGET_BYTES, TENANT_SHARE_BYTES};
pub use client::{install_crypto_provider, RegistryClient};
/// An error with its causes (`error sending request` alone says nothing of DNS or connect).
pub(crate) use describe::chain as error_chain;
pub use digest::MANIFEST_ACCEPT;
pub use error::{ConfigError, Fixes, RegistryError};
pub use fetch::Manifest;
pub use inspect::{Inspected, InspectedPlatform, MAX_DATED_PLATFORMS};
pub use keyring::{Credentials, Keyring};
pub use options::{ClientOptions, ListLimits};
pub use proxy::{ProxySettings, MAX_PROXY_URL_LEN};
pub use registries::{Kept, Registries, IDLE_AFTER};
pub use retry_after::parse_retry_after;
pub use scheduler::{Scheduler, SchedulerConfig};
pub use tag_buf::TagBuf;
pub use tag_page::{is_valid_tag, MAX_TAG_LEN};
pub use tags::Listing;
pub use tls::{KeyNames, TlsMaterial};
