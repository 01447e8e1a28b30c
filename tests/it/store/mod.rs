//! The tag store, on the filesystems it meets.

pub mod store_volumes;
pub mod tag_store;
