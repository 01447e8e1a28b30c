//! Slots shared by tenant with max-min fairness (docs/security.md, "Fair shares"): a registry
//! host's request slots (registry/scheduler.rs) and the notification sends
//! (controller/events/notify.rs). A first-come-first-served semaphore let one tenant's 16 policies, whose manifests
//! dripped a byte every 20 s, hold all 4 slots of a shared host with their queue behind them:
//! another tenant's first request reached the registry almost four minutes later. Here a freed
//! slot goes to the waiting tenant that holds the fewest slots of the host (the earliest
//! waiter among equals), so a tenant that arrives while another holds every slot is served by
//! the next slot that frees, whatever the other has queued: its wait is at most the remaining
//! time of one request in flight (each bounded by the client's timeout).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The time one piece of work (a scan) spent waiting for slots and backoff rather than for a
/// registry's answers: a scan that only waits is not slow (controller/image_repository/
/// running_scans.rs), or one tenant's queue would make a host "slow" for everyone.
#[derive(Debug, Clone, Default)]
pub struct WaitClock(Arc<Mutex<Waits>>);

#[derive(Debug, Default)]
struct Waits {
    waited: Duration,
    /// Waits going on now, and since when the first began.
    now: usize,
    since: Option<Instant>,
}

/// One wait going on; it ends when dropped.
#[derive(Debug)]
pub struct Waiting(WaitClock);

impl WaitClock {
    fn lock(&self) -> std::sync::MutexGuard<'_, Waits> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A wait begins now.
    pub fn start(&self) -> Waiting {
        let mut waits = self.lock();
        if waits.now == 0 {
            waits.since = Some(Instant::now());
        }
        waits.now += 1;
        Waiting(self.clone())
    }

    /// A clock whose one wait began at `since` (tests of what waited long).
    #[doc(hidden)]
    pub fn waiting_since(since: Instant) -> (WaitClock, Waiting) {
        let clock = WaitClock::default();
        let waiting = clock.start();
        clock.lock().since = Some(since);
        (clock, waiting)
    }

    /// The time spent waiting until `now` (waits at once counted once).
    pub fn waited(&self, now: Instant) -> Duration {
        let waits = self.lock();
        let current = waits
            .since
            .filter(|_| waits.now > 0)
            .map_or(Duration::ZERO, |since| now.saturating_duration_since(since));
        waits.waited + current
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut waits = self.0.lock();
        waits.now -= 1;
        if waits.now == 0 {
            if let Some(since) = waits.since.take() {
                waits.waited += since.elapsed();
            }
        }
    }
}

type Tenant = Option<String>;

/// A number of slots, shared by tenant.
#[derive(Debug)]
pub struct FairSlots {
    max: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    free: usize,
    held: HashMap<Tenant, usize>,
    waiting: VecDeque<(Tenant, oneshot::Sender<FairPermit>)>,
}

/// One slot, held until dropped; it then goes to the next waiter by the rule above.
#[derive(Debug)]
pub struct FairPermit {
    slots: Option<Arc<FairSlots>>,
    tenant: Tenant,
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
    #[cfg(test)]
    pub fn held_by(&self, tenant: Option<&str>) -> usize {
        let state = self.lock();
        state
            .held
            .get(&tenant.map(str::to_string))
            .copied()
            .unwrap_or(0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A slot for `tenant`: at once when one is free and nobody waits, else when this tenant
    /// is the waiter the next freed slot goes to. Dropping the future gives up its place.
    pub async fn acquire(self: &Arc<Self>, tenant: Option<&str>) -> FairPermit {
        let tenant: Tenant = tenant.map(str::to_string);
        let waiter = {
            let mut state = self.lock();
            if state.free > 0 && state.waiting.is_empty() {
                state.free -= 1;
                *state.held.entry(tenant.clone()).or_default() += 1;
                return FairPermit {
                    slots: Some(self.clone()),
                    tenant,
                };
            }
            let (tx, rx) = oneshot::channel();
            state.waiting.push_back((tenant, tx));
            rx
        };
        // The sender lives in the queue until a slot is handed to it.
        waiter
            .await
            .expect("a waiter's sender is dropped only by handing it a slot")
    }

    /// A slot came back from `tenant`: handed to the next waiter, or freed.
    fn release(self: &Arc<Self>, tenant: &Tenant) {
        let mut state = self.lock();
        if let Some(held) = state.held.get_mut(tenant) {
            *held -= 1;
            if *held == 0 {
                state.held.remove(tenant);
            }
        }
        while let Some(index) = next_waiter(&state) {
            let (next, tx) = state.waiting.remove(index).expect("an index of the queue");
            *state.held.entry(next.clone()).or_default() += 1;
            let permit = FairPermit {
                slots: Some(self.clone()),
                tenant: next.clone(),
            };
            match tx.send(permit) {
                Ok(()) => return,
                // The waiter gave up: the slot is not its, and must not come back through
                // Drop while the lock is held.
                Err(mut permit) => {
                    permit.slots = None;
                    if let Some(held) = state.held.get_mut(&next) {
                        *held -= 1;
                        if *held == 0 {
                            state.held.remove(&next);
                        }
                    }
                }
            }
        }
        state.free += 1;
    }
}

/// The waiter whose tenant holds the fewest slots, the earliest among equals.
fn next_waiter(state: &State) -> Option<usize> {
    state
        .waiting
        .iter()
        .enumerate()
        .min_by_key(|(index, (tenant, _))| (state.held.get(tenant).copied().unwrap_or(0), *index))
        .map(|(index, _)| index)
}

impl Drop for FairPermit {
    fn drop(&mut self) {
        if let Some(slots) = self.slots.take() {
            slots.release(&self.tenant);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The attack measured: one tenant holds every slot with its queue behind; another
    /// tenant's request takes the next slot that frees, not the attacker's next.
    #[tokio::test]
    async fn a_freed_slot_goes_to_the_tenant_holding_the_fewest() {
        let slots = FairSlots::new(4);
        let mut held = Vec::new();
        for _ in 0..4 {
            held.push(slots.acquire(Some("attacker")).await);
        }
        let mut queued = Vec::new();
        for _ in 0..12 {
            let slots = slots.clone();
            queued.push(tokio::spawn(async move {
                slots.acquire(Some("attacker")).await
            }));
        }
        tokio::task::yield_now().await;
        let victim = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.acquire(Some("victim")).await })
        };
        while slots.lock().waiting.len() < 13 {
            tokio::task::yield_now().await;
        }
        drop(held.pop());
        let permit = tokio::time::timeout(Duration::from_secs(5), victim)
            .await
            .expect("the victim is served by the first freed slot")
            .unwrap();
        assert_eq!(slots.held_by(Some("victim")), 1);
        assert_eq!(slots.held_by(Some("attacker")), 3);
        drop(permit);
        // With the victim gone, the attacker's queue is served again.
        assert_eq!(slots.held_by(Some("attacker")), 4);
        for task in queued {
            task.abort();
        }
    }

    /// Waits at once count once; a finished wait keeps its time.
    #[test]
    fn a_wait_clock_counts_overlapping_waits_once() {
        let clock = WaitClock::default();
        let start = Instant::now();
        let first = clock.start();
        let second = clock.start();
        std::thread::sleep(Duration::from_millis(30));
        drop(first);
        std::thread::sleep(Duration::from_millis(30));
        drop(second);
        let waited = clock.waited(Instant::now());
        assert!(waited >= Duration::from_millis(60), "{waited:?}");
        assert!(waited <= start.elapsed(), "{waited:?}");
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(clock.waited(Instant::now()), waited, "no wait goes on");
    }

    /// A waiter that gives up loses its place, not the slot: it goes to the next.
    #[tokio::test]
    async fn a_waiter_that_gives_up_takes_no_slot_with_it() {
        let slots = FairSlots::new(1);
        let first = slots.acquire(Some("a")).await;
        let gone = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.acquire(Some("b")).await })
        };
        let next = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.acquire(Some("c")).await })
        };
        while slots.lock().waiting.len() < 2 {
            tokio::task::yield_now().await;
        }
        gone.abort();
        let _ = gone.await;
        drop(first);
        let permit = tokio::time::timeout(Duration::from_secs(5), next)
            .await
            .expect("the slot went on to the next waiter")
            .unwrap();
        assert_eq!(slots.held_by(Some("c")), 1);
        drop(permit);
        assert!(slots.idle(), "every slot came back");
    }
}
