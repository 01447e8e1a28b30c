//! How an object is named to the rest of the process (its key, metric labels, the names Flux
//! gives our writes), its effective intervals, and what the watch caches keep of it.

pub mod intervals;
pub mod keys;
pub mod slim;
