//! The memory registry answers may hold, for one scan, for one tenant and for all at once
//! (docs/security.md, "Fair shares"). A read reserves what it holds while it holds it: each
//! body as its bytes arrive (never by the length a registry declares: two stalled declarations
//! of 64 and 32 MiB held the whole budget before a byte came), and the tags a listing keeps
//! until the listing is dropped (after the store has written them). A read over its own limit
//! fails; one that finds the budget taken fails too, at once, and is retried later: waiting
//! would hold a worker.
//!
//! The budget is shared by namespace with max-min fairness (share.rs): a namespace refused
//! while others hold more than their fair share (the budget over the namespaces holding or
//! refused in the last [`WANT_WINDOW`]) stops their largest reads, so its next try finds room;
//! and while it waits, no namespace grows past its fair share. Two namespaces of one tenant,
//! 64 + 32 MiB nearly sent and then stalled, held the whole budget for minutes before.

mod share;
#[cfg(test)]
mod tests;

use share::{Read, Tenants};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes of tags one listing may keep (their text and a 4-byte end each, `tag_buf.rs`): a
/// million tags of up to 46 bytes (the million-tag bound comes first for shorter ones), or
/// 380 000 of the longest (128 bytes).
pub const MAX_KEPT_BYTES: usize = 48 << 20;

/// Bytes all reads may hold at once: bodies being read and parsed, and kept tags.
pub const PROCESS_BUDGET_BYTES: usize = 96 << 20;

/// The part of the budget one tenant (a namespace) may hold at once even when no other
/// waits: two thirds, so that whatever one tenant's registries answer, a third stays free for
/// the others' first reads.
pub const TENANT_SHARE_BYTES: usize = PROCESS_BUDGET_BYTES / 3 * 2;

/// How long a namespace refused for want of memory counts as waiting: its scans are tried
/// again within this (a failed scan's first retry is sooner), so the fair shares hold until
/// it has had its turn.
pub const WANT_WINDOW: Duration = Duration::from_secs(60);

/// The process-wide budget, shared by every client of one `Registries`.
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    semaphore: Arc<Semaphore>,
    bytes: usize,
    share: usize,
    /// What each namespace holds and which wait; a namespace holding nothing and refused
    /// nothing lately has no entry, so the table is as long as the tenants reading now.
    tenants: Arc<Mutex<Tenants>>,
}

impl Default for MemoryBudget {
    fn default() -> Self {
        MemoryBudget::new(PROCESS_BUDGET_BYTES)
    }
}

impl MemoryBudget {
    /// A budget of `bytes`, two thirds of it the most one tenant holds when no other waits.
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
        self.lock_tenants().bytes_of(tenant)
    }

    fn lock_tenants(&self) -> std::sync::MutexGuard<'_, Tenants> {
        self.tenants.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves `bytes` more into `held` (charged to its tenant), or says why not.
    pub fn reserve(&self, held: &mut Held, bytes: usize) -> Result<(), String> {
        self.reserve_at(held, bytes, Instant::now())
    }

    /// [`Self::reserve`] at `now` (tests pass the clock).
    pub(crate) fn reserve_at(
        &self,
        held: &mut Held,
        bytes: usize,
        now: Instant,
    ) -> Result<(), String> {
        if let Some(reason) = held.read.stopped_reason() {
            return Err(reason);
        }
        if bytes == 0 {
            return Ok(());
        }
        let permits = u32::try_from(bytes).map_err(|_| self.exhausted())?;
        let Some(tenant) = held.tenant.clone() else {
            let permit = self.acquire(permits)?;
            held.add(permit, None);
            return Ok(());
        };
        let mut tenants = self.lock_tenants();
        tenants.forget_wants(now, WANT_WINDOW);
        let used = tenants.bytes_of(&tenant);
        if used + bytes > self.share {
            return Err(self.over_share(&tenant));
        }
        let fair = tenants.fair_share(self.bytes, &tenant);
        if used + bytes > fair && tenants.others_wait(&tenant) {
            return Err(self.over_fair_share(&tenant, fair));
        }
        match self.acquire(permits) {
            Ok(permit) => {
                tenants.charge(&tenant, &held.read, bytes);
                drop(tenants);
                held.add(permit, Some(self.tenants.clone()));
                Ok(())
            }
            Err(exhausted) => {
                tenants.want(&tenant, now);
                let fair = tenants.fair_share(self.bytes, &tenant);
                let stopped = if used + bytes <= fair {
                    tenants.stop_over(fair, &tenant, |over| self.stop_reason(over, fair))
                } else {
                    0
                };
                Err(self.refused(exhausted, &tenant, fair, stopped))
            }
        }
    }

    fn acquire(&self, permits: u32) -> Result<OwnedSemaphorePermit, String> {
        self.semaphore
            .clone()
            .try_acquire_many_owned(permits)
            .map_err(|_| self.exhausted())
    }

    fn exhausted(&self) -> String {
        format!(
            "the controller's memory budget for registry answers ({} MiB: tag listings, \
             manifests, configs, signatures) is held by other reads",
            self.bytes >> 20
        )
    }

    fn over_share(&self, tenant: &str) -> String {
        format!(
            "the namespace {tenant}'s share of the controller's memory budget for registry \
             answers ({} of {} MiB) is held by its other reads; this one was stopped and will \
             be tried again",
            self.share >> 20,
            self.bytes >> 20
        )
    }

    fn over_fair_share(&self, tenant: &str, fair: usize) -> String {
        format!(
            "other namespaces wait for the controller's memory budget for registry answers \
             ({} MiB), and this read would take the namespace {tenant} past its fair share of it \
             ({} MiB); it was stopped and will be tried again",
            self.bytes >> 20,
            mib(fair)
        )
    }

    /// The reason a stopped read of namespace `over` fails with.
    fn stop_reason(&self, over: &str, fair: usize) -> String {
        format!(
            "stopped to give back memory: the namespace {over} held more than its fair share \
             ({} MiB) of the controller's memory budget for registry answers ({} MiB) while \
             other namespaces waited; it will be tried again",
            mib(fair),
            self.bytes >> 20
        )
    }

    fn refused(&self, exhausted: String, tenant: &str, fair: usize, stopped: usize) -> String {
        let then = if stopped > 0 {
            format!(
                "; {stopped} read(s) of namespaces over their fair share were stopped to make \
                 room, so the next try finds the namespace {tenant}'s fair share ({} MiB)",
                mib(fair)
            )
        } else {
            String::new()
        };
        format!("{exhausted}{then}; this read was stopped and will be tried again")
    }
}

/// Bytes as MiB, rounded down, at least 1 when there are any.
fn mib(bytes: usize) -> usize {
    (bytes >> 20).max(usize::from(bytes > 0))
}

/// Bytes reserved from a [`MemoryBudget`] for one tenant (or none), given back when dropped.
#[derive(Debug)]
pub struct Held {
    permit: Option<OwnedSemaphorePermit>,
    tenant: Option<String>,
    /// The read these bytes belong to: what the budget stops to give memory back.
    read: Arc<Read>,
    /// The tenants' table the bytes were charged to.
    tenants: Option<Arc<Mutex<Tenants>>>,
}

impl Default for Held {
    fn default() -> Self {
        Held::for_tenant(None)
    }
}

impl Held {
    /// Nothing held yet, charged to `tenant`'s share as it grows (`None`: the process budget
    /// only, for the command-line tools).
    pub fn for_tenant(tenant: Option<&str>) -> Self {
        Held {
            permit: None,
            tenant: tenant.map(str::to_string),
            read: Arc::default(),
            tenants: None,
        }
    }

    /// Nothing held yet, for the same read as `other` (a listing's page body beside the tags
    /// it keeps): stopping one stops both.
    pub fn beside(other: &Held) -> Self {
        Held {
            permit: None,
            tenant: other.tenant.clone(),
            read: other.read.clone(),
            tenants: None,
        }
    }

    pub fn bytes(&self) -> usize {
        self.permit.as_ref().map_or(0, |p| p.num_permits())
    }

    /// Resolves with the reason when the budget stops this read to give its memory to
    /// namespaces that wait; never, otherwise. A read selects on it while it waits for bytes.
    pub fn stopped(&self) -> impl Future<Output = String> + Send + 'static {
        let read = self.read.clone();
        async move { read.wait_stopped().await }
    }

    fn add(&mut self, permit: OwnedSemaphorePermit, tenants: Option<Arc<Mutex<Tenants>>>) {
        if self.tenants.is_none() {
            self.tenants = tenants;
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
        tenants.give_back(tenant, &self.read, bytes);
    }
}
