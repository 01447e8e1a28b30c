//! What both kinds use: the reconcile (`reconcile.rs` the frame, `apply.rs` the body and the
//! `Reconciled` trait), when next (`next.rs`) and what an error means (`error.rs`), the
//! status writer and Flux's summary of conditions, events, the shared context and watch.

pub mod api_read;
pub mod apply;
pub mod backoff;
pub mod conditions;
pub mod confirm;
pub mod context;
pub mod credentials;
pub mod error;
pub mod event_limits;
pub mod events;
pub mod handoff;
pub mod intervals;
pub mod keys;
pub mod next;
pub mod notify;
pub mod panic;
pub mod queue;
pub mod reconcile;
pub mod reconciled;
pub mod recorder;
pub mod repository_feed;
pub mod scan_order;
pub mod slim;
pub mod status;
pub mod stop;
pub mod summary;
pub mod token_request;
pub mod wiring;
