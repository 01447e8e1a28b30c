//! The binary's subcommands, run as users run them.

pub mod ref_cli;
pub mod registry_cli;
pub mod run_cli;
pub mod scan_cli;
pub mod select_cli;
