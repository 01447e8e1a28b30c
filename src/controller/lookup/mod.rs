//! The objects a reconcile reads by name, bounded: Secrets and ServiceAccounts (and their
//! tokens), turned into the registry client's credentials.

pub mod api_read;
pub mod credentials;
mod objects;
pub mod token_request;
