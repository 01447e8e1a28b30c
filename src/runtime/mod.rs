//! The process around the reconcilers: leader election, the API client's throttle and request
//! counts, the storage GC, the events' CA bundle, and the HTTP endpoints (`/metrics`, `/healthz`, `/readyz`). Nothing
//! here reconciles or knows the controllers; `controller` and `cli::run` use it.

pub mod api_error;
pub mod ca_bundle;
pub mod gc;
pub mod heap;
pub mod http;
pub mod leader;
pub mod rest_client;
pub mod throttle;
