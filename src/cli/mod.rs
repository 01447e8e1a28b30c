//! The `image-reflector` subcommands, one file each.

pub mod allocator;
pub mod conditions;
pub mod crds;
pub mod error;
mod manifests;
pub mod reference;
pub mod registry;
pub mod run;
pub mod scan;
pub mod select;
mod sightings;
pub mod store;

pub use error::CliError;

/// Output formats shared by the subcommands.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Text,
    Json,
}
