//! The one integration-test binary: public surfaces only (library API and the CLI). Helpers
//! are in `support/`; tests are grouped by what they test.

mod api;
mod cli;
mod controller;
mod e2e;
mod flux;
mod policy;
mod project;
mod registry;
mod signatures;
mod store;
mod support;
