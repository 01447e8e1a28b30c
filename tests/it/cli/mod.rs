//! The binary's subcommands, run as users run them.

pub mod conditions_cli;
pub mod gates_cli;
pub mod newest_cli;
pub mod ref_cli;
pub mod registry_cli;
pub mod run_cli;
pub mod scan_cli;
pub mod select_cli;
pub mod served_cli;
pub mod sightings_cli;
