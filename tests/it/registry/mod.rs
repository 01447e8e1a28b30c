//! The registry client against a real Distribution registry, fault servers and cloud fakes.

pub mod cloud_hosts;
pub mod cloud_identity;
pub mod cloud_login;
pub mod gate_answers;
pub mod redirects;
pub mod referrers_answers;
pub mod registry_faults;
pub mod registry_real;
pub mod shares;
pub mod tenant_access;
