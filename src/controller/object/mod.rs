//! How an object is named to the rest of the process (its key, metric labels, the names Flux
//! gives our writes), its effective intervals, the watch caches and what they keep of it, and whether a
//! change of it is news to a reconcile, and what is remembered of each object since start
//! (reconciled, its spec confirmed).

pub mod cache;
pub mod changed;
pub mod confirmed;
pub mod intervals;
pub mod keys;
pub mod seen;
pub mod slim;
