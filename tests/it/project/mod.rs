//! The repository itself: docs links, the dashboard, RBAC and the code's layout.

pub mod beyond_flux;
pub mod config_rbac;
pub mod dashboard;
pub mod docs_links;
pub mod function_length;
pub mod layout;
pub mod layout_docs;
pub mod release_provenance;
