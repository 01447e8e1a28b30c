//! The memory registry answers may hold, for one scan, for one tenant and for all at once
//! (docs/security.md). A read reserves what it holds while it holds it: each body as its
//! bytes arrive (never by the length a registry declares: two stalled declarations of 64 and
//! 32 MiB held the whole budget before a byte came), and the tags a listing keeps until the
//! listing is dropped (after the store has written them). A read over its own limit fails; one
//! that finds the process-wide budget taken by others, or its tenant's share used up, fails
//! too, at once, and is retried later: waiting would hold a worker.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes of tags one listing may keep (their text and a 4-byte end each, `tag_buf.rs`): a
/// million tags of up to 46 bytes (the million-tag bound comes first for shorter ones), or
/// 380 000 of the longest (128 bytes).
pub const MAX_KEPT_BYTES: usize = 48 << 20;

/// Bytes all reads may hold at once: bodies being read and parsed, and kept tags.
pub const PROCESS_BUDGET_BYTES: usize = 96 << 20;

/// The part of the budget one tenant (a namespace) may hold at once: two thirds, so that
/// whatever one tenant's registries answer, a third stays for the others.
pub const TENANT_SHARE_BYTES: usize = PROCESS_BUDGET_BYTES / 3 * 2;

/// The process-wide budget, shared by every client of one `Registries`.
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    semaphore: Arc<Semaphore>,
    bytes: usize,
    share: usize,
    /// Bytes held per tenant; a tenant holding nothing has no entry, so the table is as long
    /// as the tenants reading at this moment.
    tenants: Arc<Mutex<HashMap<String, usize>>>,
}

impl Default for MemoryBudget {
    fn default() -> Self {
        MemoryBudget::new(PROCESS_BUDGET_BYTES)
    }
}

impl MemoryBudget {
    /// A budget of `bytes`, two thirds of it a tenant's share.
    pub fn new(bytes: usize) -> Self {
        MemoryBudget {
            semaphore: Arc::new(Semaphore::new(bytes)),
            bytes,
            share: bytes / 3 * 2,
            tenants: Arc::default(),
        }
    }

    /// Bytes not reserved now.
    pub fn available(&self) -> usize {
        self.semaphore.available_permits()
    }

    /// Bytes `tenant` holds now.
    pub fn held_by(&self, tenant: &str) -> usize {
        self.lock_tenants().get(tenant).copied().unwrap_or(0)
    }

    fn lock_tenants(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        self.tenants.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves `bytes` more into `held` (charged to its tenant's share too), or says why not.
    pub fn reserve(&self, held: &mut Held, bytes: usize) -> Result<(), String> {
        if bytes == 0 {
            return Ok(());
        }
        let permits = u32::try_from(bytes).map_err(|_| self.exhausted())?;
        if let Some(tenant) = &held.tenant {
            let mut tenants = self.lock_tenants();
            let used = tenants.get(tenant).copied().unwrap_or(0);
            if used + bytes > self.share {
                return Err(format!(
                    "the namespace {tenant}'s share of the controller's memory budget for \
                     registry answers ({} of {} MiB) is held by its other reads; this one was \
                     stopped and will be tried again",
                    self.share >> 20,
                    self.bytes >> 20
                ));
            }
            let permit = self
                .semaphore
                .clone()
                .try_acquire_many_owned(permits)
                .map_err(|_| self.exhausted())?;
            tenants.insert(tenant.clone(), used + bytes);
            held.add(permit, self);
            return Ok(());
        }
        let permit = self
            .semaphore
            .clone()
            .try_acquire_many_owned(permits)
            .map_err(|_| self.exhausted())?;
        held.add(permit, self);
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

/// Bytes reserved from a [`MemoryBudget`] for one tenant (or none), given back when dropped.
#[derive(Debug, Default)]
pub struct Held {
    permit: Option<OwnedSemaphorePermit>,
    tenant: Option<String>,
    /// The tenants' table the bytes were charged to.
    tenants: Option<Arc<Mutex<HashMap<String, usize>>>>,
}

impl Held {
    /// Nothing held yet, charged to `tenant`'s share as it grows (`None`: the process budget
    /// only, for the command-line tools).
    pub fn for_tenant(tenant: Option<&str>) -> Self {
        Held {
            permit: None,
            tenant: tenant.map(str::to_string),
            tenants: None,
        }
    }

    pub fn bytes(&self) -> usize {
        self.permit.as_ref().map_or(0, |p| p.num_permits())
    }

    fn add(&mut self, permit: OwnedSemaphorePermit, budget: &MemoryBudget) {
        if self.tenant.is_some() && self.tenants.is_none() {
            self.tenants = Some(budget.tenants.clone());
        }
        match &mut self.permit {
            Some(existing) => existing.merge(permit),
            none => *none = Some(permit),
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let (Some(tenant), Some(tenants)) = (&self.tenant, &self.tenants) else {
            return;
        };
        let bytes = self.bytes();
        let mut tenants = tenants.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(used) = tenants.get_mut(tenant) {
            *used = used.saturating_sub(bytes);
            if *used == 0 {
                tenants.remove(tenant);
            }
        }
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

    /// One namespace holds at most two thirds of the budget (64 of 96 MiB), so a third stays
    /// for the others whatever its registries answer.
    #[test]
    fn a_tenant_holds_at_most_its_share_and_others_keep_the_rest() {
        let budget = MemoryBudget::default();
        let mut first = Held::for_tenant(Some("hostile"));
        let mut second = Held::for_tenant(Some("hostile"));
        budget.reserve(&mut first, 40 << 20).unwrap();
        let err = budget.reserve(&mut second, 25 << 20).unwrap_err();
        assert!(
            err.contains("namespace hostile's share") && err.contains("(64 of 96 MiB)"),
            "{err}"
        );
        budget.reserve(&mut second, 24 << 20).unwrap();
        assert_eq!(budget.held_by("hostile"), 64 << 20);
        let mut other = Held::for_tenant(Some("team"));
        budget.reserve(&mut other, 32 << 20).unwrap();
        assert_eq!(budget.available(), 0);
        drop(first);
        assert_eq!(budget.held_by("hostile"), 24 << 20);
        drop(second);
        assert_eq!(budget.held_by("hostile"), 0);
        assert_eq!(
            budget.lock_tenants().len(),
            1,
            "only tenants holding bytes have an entry"
        );
    }
}
