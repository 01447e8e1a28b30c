//! The reconcilers through their public functions, over a mocked API server (tower-test) and real registries.

pub mod cooldown;
pub mod digest_transitions;
pub mod downgrade;
pub mod event_rate;
pub mod first_seen;
pub mod gated_election;
pub mod gc;
pub mod newest;
pub mod notify;
pub mod notify_auth;
pub mod panics;
pub mod policy_reconcile;
pub mod repository_reconcile;
pub mod throttle;
pub mod verification_cost;
