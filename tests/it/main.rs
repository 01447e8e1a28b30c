//! The one integration-test binary: public surfaces only (library API and the CLI).

mod api;
mod api_mock;
mod dashboard;
mod digest_transitions;
mod distribution;
mod e2e;
mod e2e_operations;
mod e2e_samples;
mod fault_server;
mod fuzz_replay;
mod notify;
mod policy_props;
mod policy_reconcile;
mod ref_cli;
mod registry_cli;
mod registry_faults;
mod registry_real;
mod repository_reconcile;
mod run_cli;
mod scan_cli;
mod select_cli;
mod store;
mod support;
mod throttle;
mod vectors;
