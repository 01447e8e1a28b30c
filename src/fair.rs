//! Slots shared by tenant with max-min fairness (docs/security.md, "Fair shares"): a registry
//! host's request slots (registry/scheduler.rs) and the notification sends
//! (controller/events/notify.rs). A first-come-first-served semaphore let one tenant's 16
//! policies, whose manifests dripped a byte every 20 s, hold all 4 slots of a shared host with
//! their queue behind them: another tenant's first request reached the registry almost four
//! minutes later. Here a freed slot goes to the waiting tenant that holds the fewest slots
//! (the earliest waiter among equals). And a tenant waiting while it holds fewer than its fair
//! share (the slots over the tenants holding or waiting) takes one back from the tenant
//! holding the most past its share: that tenant's newest slot held for [`TAKE_BACK_AFTER`] is
//! told to stop ([`FairPermit::stopped`]), and its holder gives it up. When tenants outnumber
//! the slots, every holder is at its share of one: a tenant waiting with none then takes back
//! the slot held longest among those granted since it was last served, once held
//! [`TAKE_BACK_AFTER`], and among the waiters holding the
//! fewest a freed slot goes to the tenant served least recently (a tenant never served
//! first), so the tenant that gave a slot up does not take it straight back. A newcomer's wait
//! is so at most about [`TAKE_BACK_AFTER`] whatever the number of tenants; a tenant served
//! before waits its turn among those holding none (issue 87). A request answered within
//! [`TAKE_BACK_AFTER`] is never stopped.

mod clock;
#[cfg(test)]
mod tests;

pub use clock::{WaitClock, Waiting};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// How long a slot is held before it may be taken back for a tenant under its fair share.
pub const TAKE_BACK_AFTER: Duration = Duration::from_secs(10);

type Tenant = Option<String>;

/// A number of slots, shared by tenant.
#[derive(Debug)]
pub struct FairSlots {
    max: usize,
    state: Mutex<State>,
}

#[derive(Debug)]
struct Holder {
    id: u64,
    since: Instant,
    stop: CancellationToken,
}

#[derive(Debug, Default)]
struct State {
    free: usize,
    next: u64,
    held: HashMap<Tenant, Vec<Holder>>,
    waiting: VecDeque<(Tenant, oneshot::Sender<FairPermit>)>,
    /// The grant (its number) each tenant holding or waiting had last.
    served: HashMap<Tenant, u64>,
}

impl State {
    fn held_by(&self, tenant: &Tenant) -> usize {
        self.held.get(tenant).map_or(0, Vec::len)
    }

    /// Slots of `tenant` not told to stop.
    fn keeping(&self, tenant: &Tenant) -> usize {
        self.held
            .get(tenant)
            .map_or(0, |h| h.iter().filter(|h| !h.stop.is_cancelled()).count())
    }
}

/// One slot, held until dropped; it then goes to the next waiter by the rule above.
#[derive(Debug)]
pub struct FairPermit {
    slots: Option<Arc<FairSlots>>,
    tenant: Tenant,
    id: u64,
    stop: CancellationToken,
}

impl FairPermit {
    /// Completes when the slot is taken back for a tenant under its fair share: its holder
    /// stops what it does and drops it.
    pub fn stopped(&self) -> WaitForCancellationFutureOwned {
        self.stop.clone().cancelled_owned()
    }
}

impl FairSlots {
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(FairSlots {
            max,
            state: Mutex::new(State {
                free: max,
                ..State::default()
            }),
        })
    }

    /// Whether every slot is free and nobody waits.
    pub fn idle(&self) -> bool {
        let state = self.lock();
        state.free == self.max && state.waiting.is_empty()
    }

    /// Slots `tenant` holds now.
    pub fn held_by(&self, tenant: Option<&str>) -> usize {
        self.lock().held_by(&tenant.map(str::to_string))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn grant(self: &Arc<Self>, state: &mut State, tenant: Tenant) -> FairPermit {
        state.next += 1;
        let stop = CancellationToken::new();
        let holder = Holder {
            id: state.next,
            since: Instant::now(),
            stop: stop.clone(),
        };
        state.held.entry(tenant.clone()).or_default().push(holder);
        state.served.insert(tenant.clone(), state.next);
        FairPermit {
            slots: Some(self.clone()),
            tenant,
            id: state.next,
            stop,
        }
    }

    /// A slot for `tenant`: at once when one is free and nobody waits, else when this tenant
    /// is the waiter the next freed slot goes to, taking one back meanwhile when it is under
    /// its fair share. Dropping the future gives up its place.
    pub async fn acquire(self: &Arc<Self>, tenant: Option<&str>) -> FairPermit {
        let tenant: Tenant = tenant.map(str::to_string);
        let mut waiter = {
            let mut state = self.lock();
            if state.free > 0 && state.waiting.is_empty() {
                state.free -= 1;
                return self.grant(&mut state, tenant);
            }
            let (tx, rx) = oneshot::channel();
            state.waiting.push_back((tenant.clone(), tx));
            rx
        };
        loop {
            let check = self.take_back_for(&mut self.lock(), &tenant, Instant::now());
            // The sender lives in the queue until a slot is handed to it.
            let handed = match check {
                None => Ok((&mut waiter).await),
                Some(after) => tokio::time::timeout(after, &mut waiter).await,
            };
            if let Ok(permit) = handed {
                return permit.expect("a waiter's sender is dropped only by handing it a slot");
            }
        }
    }

    /// Tells a slot to stop for `tenant`, waiting, when it holds fewer than its fair share
    /// and another holds more: that one's newest slot held for [`TAKE_BACK_AFTER`]. Returns
    /// when to look again, when such a tenant holds none that long yet.
    fn take_back_for(&self, state: &mut State, tenant: &Tenant, now: Instant) -> Option<Duration> {
        let mut tenants: HashSet<&Tenant> = state.held.keys().collect();
        tenants.extend(state.waiting.iter().map(|(t, _)| t));
        tenants.insert(tenant);
        let fair = (self.max / tenants.len()).max(1);
        if state.keeping(tenant) >= fair {
            return None;
        }
        let over = state
            .held
            .iter()
            .filter(|(t, _)| *t != tenant)
            .map(|(t, _)| (t, state.keeping(t)))
            .filter(|(_, keeping)| *keeping > fair)
            .max_by_key(|(_, keeping)| *keeping)
            .map(|(t, _)| t);
        let keeping = |t: &Tenant| state.held[t].iter().filter(|h| !h.stop.is_cancelled());
        let (old, young): (Vec<&Holder>, Vec<&Holder>) = match over {
            Some(over) => keeping(over).partition(|h| held_long(h, now)),
            // Tenants outnumber the slots, each holding its share of one: a tenant holding
            // none takes back the slot held longest.
            // Only from a slot granted after this tenant was last served: the tenant whose
            // slot was just taken back waits its turn, and does not take the next in a chain.
            None if tenants.len() > self.max && state.keeping(tenant) == 0 => {
                let served = state.served.get(tenant).copied().unwrap_or(0);
                let others = state.held.keys().filter(|t| *t != tenant);
                let later = others.flat_map(keeping).filter(|h| h.id > served);
                let oldest = later.min_by_key(|h| h.since);
                oldest.into_iter().partition(|h| held_long(h, now))
            }
            None => return None,
        };
        match old.into_iter().max_by_key(|h| h.since) {
            Some(newest_old) => {
                newest_old.stop.cancel();
                // Looked at again: the slot freed may go to another waiter first.
                Some(TAKE_BACK_AFTER)
            }
            None => young
                .iter()
                .map(|h| TAKE_BACK_AFTER.saturating_sub(now.saturating_duration_since(h.since)))
                .min(),
        }
    }

    /// The slot `id` came back from `tenant`: handed to the next waiter, or freed.
    fn release(self: &Arc<Self>, tenant: &Tenant, id: u64) {
        let mut state = self.lock();
        forget(&mut state, tenant, id);
        while let Some(index) = next_waiter(&state) {
            let (next, tx) = state.waiting.remove(index).expect("an index of the queue");
            let permit = self.grant(&mut state, next.clone());
            match tx.send(permit) {
                Ok(()) => return,
                // The waiter gave up: the slot is not its, and must not come back through
                // Drop while the lock is held.
                Err(mut permit) => {
                    permit.slots = None;
                    forget(&mut state, &next, permit.id);
                }
            }
        }
        state.free += 1;
    }
}

/// Whether a slot has been held long enough to be taken back.
fn held_long(holder: &Holder, now: Instant) -> bool {
    now.saturating_duration_since(holder.since) >= TAKE_BACK_AFTER
}

fn forget(state: &mut State, tenant: &Tenant, id: u64) {
    if let Some(held) = state.held.get_mut(tenant) {
        held.retain(|h| h.id != id);
        if held.is_empty() {
            state.held.remove(tenant);
        }
    }
    if !state.held.contains_key(tenant) && !state.waiting.iter().any(|(t, _)| t == tenant) {
        state.served.remove(tenant);
    }
}

/// The waiter whose tenant holds the fewest slots; among equals, the tenant served least
/// recently (never: first), then the earliest.
fn next_waiter(state: &State) -> Option<usize> {
    state
        .waiting
        .iter()
        .enumerate()
        .min_by_key(|(index, (tenant, _))| {
            let served = state.served.get(tenant).copied().unwrap_or(0);
            (state.held_by(tenant), served, *index)
        })
        .map(|(index, _)| index)
}

impl Drop for FairPermit {
    fn drop(&mut self) {
        if let Some(slots) = self.slots.take() {
            slots.release(&self.tenant, self.id);
        }
    }
}
