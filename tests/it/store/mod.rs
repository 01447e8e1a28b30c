//! The tag store, on the filesystems it meets.

pub mod store;
pub mod store_volumes;
