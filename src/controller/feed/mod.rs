//! What the watches deliver: the one ImageRepository watch both controllers read, and the
//! order repositories are first scanned in.

pub mod repository_feed;
pub mod scan_order;
