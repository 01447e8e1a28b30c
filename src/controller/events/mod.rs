//! Events: which one a transition makes ([`transition`]), the recorder that writes them within
//! client-go's limits ([`limits`]), and the forwarding to Flux's notification-controller.

pub mod limits;
pub mod notify;
pub mod recorder;
pub mod transition;
