//! The memory tag listings may hold, for one scan and for all scans at once (docs/security.md).
//! A listing reserves what it holds while it holds it: each page body as it arrives, and the
//! tags it keeps until the listing is dropped (after the store has written them). A scan over
//! its own limit fails; a scan that finds the process-wide budget taken by others fails too,
//! at once, and is retried later: waiting would hold a worker.

use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes of tags one listing may keep (text and `String` headers): 1 000 000 tags of 24
/// bytes, or 200 000 of the longest (128 bytes).
pub const MAX_KEPT_BYTES: usize = 48 << 20;

/// Bytes all listings may hold at once: page bodies being read and parsed, and kept tags.
pub const PROCESS_BUDGET_BYTES: usize = 96 << 20;

/// The process-wide budget, shared by every client of one `Registries`.
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    semaphore: Arc<Semaphore>,
    bytes: usize,
}

impl Default for MemoryBudget {
    fn default() -> Self {
        MemoryBudget::new(PROCESS_BUDGET_BYTES)
    }
}

impl MemoryBudget {
    pub fn new(bytes: usize) -> Self {
        MemoryBudget {
            semaphore: Arc::new(Semaphore::new(bytes)),
            bytes,
        }
    }

    /// Bytes not reserved now.
    pub fn available(&self) -> usize {
        self.semaphore.available_permits()
    }

    /// Reserves `bytes` more into `held`, or says why not.
    pub fn reserve(&self, held: &mut Held, bytes: usize) -> Result<(), String> {
        if bytes == 0 {
            return Ok(());
        }
        let permits = u32::try_from(bytes).map_err(|_| self.exhausted())?;
        let permit = self
            .semaphore
            .clone()
            .try_acquire_many_owned(permits)
            .map_err(|_| self.exhausted())?;
        match &mut held.0 {
            Some(existing) => existing.merge(permit),
            none => *none = Some(permit),
        }
        Ok(())
    }

    fn exhausted(&self) -> String {
        format!(
            "the controller's memory budget for registry answers ({} MiB: tag listings, \
             manifests, configs, signatures) is held by other reads; this one was stopped and \
             will be tried again",
            self.bytes >> 20
        )
    }
}

/// Bytes reserved from a [`MemoryBudget`], given back when dropped.
#[derive(Debug, Default)]
pub struct Held(Option<OwnedSemaphorePermit>);

impl Held {
    pub fn bytes(&self) -> usize {
        self.0.as_ref().map_or(0, |p| p.num_permits())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_are_shared_and_given_back() {
        let budget = MemoryBudget::new(100);
        let mut a = Held::default();
        let mut b = Held::default();
        budget.reserve(&mut a, 60).unwrap();
        budget.reserve(&mut a, 30).unwrap();
        assert_eq!((a.bytes(), budget.available()), (90, 10));
        let err = budget.reserve(&mut b, 20).unwrap_err();
        assert!(err.contains("held by other reads"), "{err}");
        assert_eq!(b.bytes(), 0);
        drop(a);
        budget.reserve(&mut b, 20).unwrap();
        assert_eq!(budget.available(), 80);
    }
}
