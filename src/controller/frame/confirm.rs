//! One rule for every status write of a kind that asks for it (an ImagePolicy: what
//! image-automation-controller commits, and its gates): the decision written was made on the
//! spec the API server holds (docs/imagepolicy.md, "Upgrades never skip a gate").
//!
//! Why: right after our CRDs replace Flux's, a watch opened under the old schema goes on
//! serving objects decoded by it, pruned of every field Flux's CRDs lack, while a GET serves
//! them whole; and a schema may change again at any time. So before the first write of each
//! spec an object arrives with (its generation and its spec, as this process saw them), a GET
//! confirms it: one read per policy and spec, whatever the schema, and none for a write
//! that changes nothing. When the API server holds another spec nothing is written: the
//! fresh object goes to the kind's cache and is reconciled at once, through the hand-off and
//! its caps like any decision (handoff.rs). Once confirmed, the write itself carries the
//! kind's guards (controller/schema/marker.rs), for a schema swapped in between.

use super::reconciled::Reconciled;
use crate::controller::lookup::api_read::{read_named, ReadError, API_READ_DEADLINE};
use crate::controller::object::keys::spec_version;
use crate::controller::outcome::error::Error;
use kube::{Api, ResourceExt};

/// Whether to write, or to read the object again first.
#[derive(Debug, PartialEq, Eq)]
pub enum Confirmation {
    Write,
    /// The API server holds another spec (or serves this one otherwise): nothing is written,
    /// the fresh object is in the kind's cache, reconciled at once.
    ReadAgain,
}

/// Before a write of `obj`'s status that changes it (`changes`): whether the spec decided on
/// is the one the API server holds.
pub async fn confirm<K: Reconciled>(
    obj: &K,
    key: &str,
    changes: bool,
    api: &Api<K>,
    ctx: &K::Ctx,
) -> Result<Confirmation, Error> {
    if !K::CONFIRMS_SPEC || !changes {
        return Ok(Confirmation::Write);
    }
    let confirmed = &ctx.as_ref().confirmed;
    let version = spec_version(obj);
    if confirmed.holds(key, version) {
        return Ok(Confirmation::Write);
    }
    let fresh = read(obj, api).await?;
    if spec_version(&fresh) == version {
        confirmed.record(key.to_string(), version);
        return Ok(Confirmation::Write);
    }
    tracing::warn!(
        "the watch served this object with another spec than the API server holds (a watch \
         opened before the CRDs changed, or a change on its way): nothing written, decided \
         again from a fresh read"
    );
    K::refreshed(ctx, fresh);
    Ok(Confirmation::ReadAgain)
}

/// After the API server refused a guarded write of `obj` (`refused`): read again when it
/// holds another spec (the guards did their job), else the refusal stands.
pub async fn after_refusal<K: Reconciled>(
    obj: &K,
    key: &str,
    refused: Error,
    api: &Api<K>,
    ctx: &K::Ctx,
) -> Result<Confirmation, Error> {
    let guarded = matches!(&refused, Error::Kube(kube::Error::Api(status)) if status.code == 422);
    if !guarded || !K::CONFIRMS_SPEC {
        return Err(refused);
    }
    let fresh = read(obj, api).await?;
    if spec_version(&fresh) == spec_version(obj) {
        return Err(refused);
    }
    tracing::warn!(
        "the API server holds another spec than the one decided on, or serves it without \
         fields it held: nothing written, decided again from a fresh read"
    );
    ctx.as_ref().confirmed.forget(key);
    K::refreshed(ctx, fresh);
    Ok(Confirmation::ReadAgain)
}

/// A fresh read of `obj`; nothing is written when it fails (the reconcile's error retries).
async fn read<K: Reconciled>(obj: &K, api: &Api<K>) -> Result<K, Error> {
    let name = obj.name_any();
    match read_named(&name, api.get(&name)).await {
        Ok(fresh) => Ok(fresh),
        Err(ReadError::Api(err)) => Err(Error::Kube(err)),
        Err(_) => Err(Error::Deadline(API_READ_DEADLINE)),
    }
}
