//! What an evaluation spends and why it may end without a value: a CEL error (a value of the
//! evaluation, absorbed where cel-go absorbs it), a spent budget or its caller's stop (never
//! absorbed).

use super::value::Value;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// Why an evaluation produced no value.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// A CEL error (a missing key, a type with no overload, an overflow...): a value of the
    /// evaluation, absorbed where cel-go absorbs it.
    Error(String),
    /// The budget is spent: the evaluation stops.
    Budget,
    /// The caller stopped it (its policy changed or was deleted, or its slot went to another
    /// namespace).
    Stopped,
}

pub type Eval = Result<Value, Fault>;

pub fn error<T>(why: impl Into<String>) -> Result<T, Fault> {
    Err(Fault::Error(why.into()))
}

/// What an evaluation may still spend, in units of about one node's evaluation, and whether
/// its caller has stopped it (read at every charge: an evaluation stops within a unit).
#[derive(Debug, Default)]
pub struct Budget {
    pub left: u64,
    pub stop: Option<Arc<AtomicBool>>,
}

impl Budget {
    pub fn new(left: u64) -> Budget {
        Budget { left, stop: None }
    }

    pub fn charge(&mut self, units: u64) -> Result<(), Fault> {
        if self.stop.as_ref().is_some_and(|s| s.load(Relaxed)) {
            return Err(Fault::Stopped);
        }
        self.left = self.left.checked_sub(units).ok_or(Fault::Budget)?;
        Ok(())
    }
}
