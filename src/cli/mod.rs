//! The `image-reflector` subcommands, one file each.

pub mod crds;
