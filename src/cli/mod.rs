//! The `image-reflector` subcommands, one file each.

pub mod crds;
pub mod error;
pub mod reference;
pub mod select;

pub use error::CliError;
