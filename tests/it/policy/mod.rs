//! Tag selection: Flux's vectors, properties, and the fuzzers' regressions.

pub mod cel_conformance;
pub mod conditions_props;
pub mod fuzz_replay;
pub mod policy_props;
pub mod textproto;
pub mod vectors;
