//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's semantics so a
//! rolling swap from Flux's controller hands over cleanly: the holder renews every retry
//! period and gives up when it could not renew for the renew deadline; a stand-by takes the
//! Lease when its record has not changed for the lease duration (measured on the stand-by's
//! own clock, so clock skew between nodes does not matter) or when it is released (empty
//! holder); writes carry the resourceVersion read, so two candidates never both win.
//!
//! Not kube-lease-manager: it measures expiry from the holder's `renewTime`, treats a
//! released client-go Lease (holder `""`) as held, and has no renew deadline or retry period.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The Lease's name: Flux's, with the selector's hash when sharding (docs/operations.md).
pub fn lease_name(label_selector: &str) -> String {
    use sha2::{Digest, Sha256};
    let base = "image-reflector-controller-leader-election";
    if label_selector.is_empty() {
        return base.to_string();
    }
    let hash = Sha256::digest(label_selector.as_bytes());
    let hex: String = hash[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{base}-{hex}")
}

/// `$HOSTNAME` (the pod name), else the system's host name: the Lease holder's prefix and
/// events' `reportingInstance`.
pub fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "image-reflector-controller".into())
}

/// [`host_name`], `_`, and a unique suffix.
pub fn identity() -> String {
    format!("{}_{}", host_name(), unique_suffix())
}

/// A random UUID-shaped suffix, as controller-runtime's.
fn unique_suffix() -> String {
    use std::hash::{BuildHasher, RandomState};
    let a = RandomState::new().hash_one((std::process::id(), Instant::now()));
    let b = RandomState::new().hash_one(a);
    let hex = format!("{a:016x}{b:016x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Timings and names (the `--leader-election-*` flags).
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    pub name: String,
    pub namespace: String,
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
    pub release_on_cancel: bool,
}

/// What a candidate does with the Lease it read.
#[derive(Debug, PartialEq)]
pub enum Decision {
    /// Someone else holds a Lease that is still valid.
    Wait,
    /// Write this spec (acquire, or renew our own).
    Write(LeaseSpec),
}

/// client-go's `tryAcquireOrRenew`, pure: `valid` says whether the current record is still
/// within its lease duration as observed locally.
pub fn decide(current: &LeaseSpec, config: &LeaseConfig, valid: bool, now: Timestamp) -> Decision {
    let holder = current.holder_identity.as_deref().unwrap_or_default();
    let ours = holder == config.identity;
    if !holder.is_empty() && !ours && valid {
        return Decision::Wait;
    }
    let transitions = current.lease_transitions.unwrap_or(0);
    let (acquire_time, transitions) = if ours {
        (current.acquire_time.clone(), transitions)
    } else {
        (Some(MicroTime(now)), transitions + 1)
    };
    Decision::Write(LeaseSpec {
        holder_identity: Some(config.identity.clone()),
        lease_duration_seconds: Some(whole_seconds(config.lease_duration)),
        acquire_time,
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(transitions),
        ..Default::default()
    })
}

fn whole_seconds(d: Duration) -> i32 {
    i32::try_from(d.as_secs().max(1)).unwrap_or(i32::MAX)
}

/// How holding the Lease ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// Shutdown was asked for.
    Cancelled,
    /// Could not renew within the renew deadline, or someone else took the Lease.
    Lost,
    /// The work itself cannot go on (a controller's loop ended or panicked): the process
    /// exits non-zero so that kubelet restarts it.
    Failed(String),
}

/// One candidate.
pub struct Elector {
    api: Api<Lease>,
    pub config: LeaseConfig,
    /// The record last read, and when it was first seen (local clock).
    observed: Option<(LeaseSpec, Instant)>,
}

impl Elector {
    pub fn new(client: Client, config: LeaseConfig) -> Self {
        Elector {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: None,
        }
    }

    /// One attempt; true when we hold the Lease afterwards.
    pub async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let now = Timestamp::now();
        let Some(lease) = self.api.get_opt(&self.config.name).await? else {
            let Decision::Write(spec) = decide(&LeaseSpec::default(), &self.config, false, now)
            else {
                unreachable!("an absent Lease is free")
            };
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    lease_transitions: Some(0),
                    ..spec
                }),
            };
            self.api.create(&PostParams::default(), &lease).await?;
            return Ok(true);
        };
        let current = lease.spec.clone().unwrap_or_default();
        let seen_at = match &self.observed {
            Some((record, at)) if *record == current => *at,
            _ => Instant::now(),
        };
        self.observed = Some((current.clone(), seen_at));
        let duration =
            Duration::from_secs(current.lease_duration_seconds.unwrap_or(0).max(0) as u64);
        let valid = seen_at.elapsed() < duration;
        match decide(&current, &self.config, valid, now) {
            Decision::Wait => Ok(false),
            Decision::Write(spec) => {
                let updated = Lease {
                    metadata: lease.metadata,
                    spec: Some(spec.clone()),
                };
                self.api
                    .replace(&self.config.name, &PostParams::default(), &updated)
                    .await?;
                self.observed = Some((spec, Instant::now()));
                Ok(true)
            }
        }
    }

    /// Tries every retry period until we hold the Lease; false when cancelled first.
    pub async fn acquire(&mut self, cancel: &CancellationToken) -> bool {
        tracing::info!(lease = %self.config.name, namespace = %self.config.namespace,
            identity = %self.config.identity, "attempting to acquire the leader lease");
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    tracing::info!(lease = %self.config.name, identity = %self.config.identity,
                        "acquired the leader lease");
                    return true;
                }
                Ok(false) => {}
                Err(err) => tracing::debug!(error = %err, "leader lease not acquired"),
            }
            tokio::select! {
                _ = cancel.cancelled() => return false,
                _ = tokio::time::sleep(jittered(self.config.retry_period)) => {}
            }
        }
    }

    /// Renews every retry period until cancelled or lost.
    pub async fn hold(&mut self, cancel: &CancellationToken) -> Ended {
        let mut renewed = Instant::now();
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return Ended::Cancelled,
                _ = tokio::time::sleep(self.config.retry_period) => {}
            }
            match self.try_acquire_or_renew().await {
                Ok(true) => renewed = Instant::now(),
                Ok(false) => return Ended::Lost,
                Err(err) => {
                    tracing::warn!(error = %super::api_error::describe_api_error(&err), "renewing the leader lease failed")
                }
            }
            if renewed.elapsed() > self.config.renew_deadline {
                return Ended::Lost;
            }
        }
    }

    /// Gives the Lease up (client-go's release): empty holder, a one-second lease.
    pub async fn release(&mut self) {
        if !self.config.release_on_cancel {
            return;
        }
        let result = async {
            let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
                return Ok(());
            };
            let spec = lease.spec.get_or_insert_with(Default::default);
            if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
                return Ok(());
            }
            let now = MicroTime(Timestamp::now());
            *spec = LeaseSpec {
                holder_identity: Some(String::new()),
                lease_duration_seconds: Some(1),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: spec.lease_transitions,
                ..Default::default()
            };
            self.api
                .replace(&self.config.name, &PostParams::default(), &lease)
                .await
                .map(|_| ())
        }
        .await;
        match result {
            Ok(()) => tracing::info!(lease = %self.config.name, "released the leader lease"),
            Err(err) => {
                tracing::warn!(error = %super::api_error::describe_api_error(&err), "releasing the leader lease failed")
            }
        }
    }
}

/// client-go's `wait.Jitter(period, 1.2)`: up to 20% later, so candidates do not move in step.
fn jittered(period: Duration) -> Duration {
    use std::hash::{BuildHasher, RandomState};
    let random = RandomState::new().hash_one(Instant::now()) % 1000;
    period + period.mul_f64(0.2 * random as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(identity: &str) -> LeaseConfig {
        LeaseConfig {
            name: lease_name(""),
            namespace: "flux-system".into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(35),
            renew_deadline: Duration::from_secs(30),
            retry_period: Duration::from_secs(5),
            release_on_cancel: true,
        }
    }

    fn held_by(holder: &str, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(35),
            acquire_time: Some(MicroTime(Timestamp::UNIX_EPOCH)),
            renew_time: Some(MicroTime(Timestamp::UNIX_EPOCH)),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }

    #[test]
    fn names_follow_flux_with_the_selector_hash() {
        assert_eq!(lease_name(""), "image-reflector-controller-leader-election");
        // sha256("sharding.fluxcd.io/key=shard1")[..4], as Flux's GenerateID computes it.
        let name = lease_name("sharding.fluxcd.io/key=shard1");
        let suffix = name.rsplit('-').next().unwrap();
        assert_eq!(suffix.len(), 8);
        assert_ne!(name, lease_name("sharding.fluxcd.io/key=shard2"));
        assert!(identity().contains('_'));
        assert_ne!(identity(), identity(), "unique per candidate");
    }

    #[test]
    fn candidates_decide_as_client_go() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let me = config("pod-b_1");
        // Held by someone else and still valid: wait.
        assert_eq!(
            decide(&held_by("pod-a_1", 3), &me, true, now),
            Decision::Wait
        );
        // Expired: take it, one more transition, acquired now.
        let Decision::Write(taken) = decide(&held_by("pod-a_1", 3), &me, false, now) else {
            panic!("an expired lease is taken")
        };
        assert_eq!(taken.holder_identity.as_deref(), Some("pod-b_1"));
        assert_eq!(taken.lease_transitions, Some(4));
        assert_eq!(taken.acquire_time, Some(MicroTime(now)));
        assert_eq!(taken.lease_duration_seconds, Some(35));
        // Released (empty holder), even within its duration: take it.
        assert!(matches!(
            decide(&held_by("", 4), &me, true, now),
            Decision::Write(_)
        ));
        // Our own: renew, keeping acquireTime and transitions.
        let Decision::Write(renewed) = decide(&held_by("pod-b_1", 4), &me, true, now) else {
            panic!("our own lease is renewed")
        };
        assert_eq!(renewed.lease_transitions, Some(4));
        assert_eq!(renewed.acquire_time, Some(MicroTime(Timestamp::UNIX_EPOCH)));
        assert_eq!(renewed.renew_time, Some(MicroTime(now)));
    }
}
