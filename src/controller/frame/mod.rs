//! One reconcile of either kind: its steps (reconcile.rs), the contract with the kinds, the
//! hand-off of long decisions, panics kept to their object, the confirmation before a
//! downstream-visible write, the shared context, the work queue and what kube's controller reads.

pub mod confirm;
pub mod context;
pub mod handoff;
pub mod panic;
pub mod queue;
pub mod reconcile;
pub mod reconciled;
pub mod stage;
pub mod wiring;
