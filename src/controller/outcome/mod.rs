//! What a reconcile comes to: Flux's conditions and their summary, the status writer, why steps
//! stopped, the controller's errors and what each means, and when next.

pub mod backoff;
pub mod conditions;
pub mod cut;
pub mod error;
pub mod log_lines;
pub mod next;
pub mod status;
pub mod stop;
pub mod summary;
