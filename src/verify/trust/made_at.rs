//! When a keyless signature was made, as what vouches for it says (docs/imagepolicy.md,
//! "Keyless"): a Rekor v1 entry's integrated time, which its promise vouches for; or, for a
//! bundle whose entries are all Rekor v2's (no integrated time, as cosign v3 tells them), the
//! times of the RFC 3161 timestamps of the trusted root's authorities. The signing certificate
//! is then checked at each of those times.

use super::super::keyless::Keyless;
use super::super::path::Budget;
use super::super::refusal::{Check, Refused};
use super::super::tlog::{Entry, Logged, Signing};

/// A signature and what vouches for it.
pub struct Evidence<'a> {
    /// The bytes the signature covers.
    pub message: &'a [u8],
    /// The kind of log entry that records it, and what it records the hash of (the DSSE
    /// payload, or the simple-signing payload).
    pub kind: &'static str,
    pub recorded: &'a [u8],
    pub signatures: &'a [Vec<u8>],
    /// Keyless: DER, leaf first.
    pub certificates: &'a [Vec<u8>],
    pub log: Result<Vec<Entry>, String>,
    /// RFC 3161 timestamps (DER responses) over the signature.
    pub timestamps: Vec<Vec<u8>>,
}

/// When the signature was made, as what vouches for it says: the integrated time of a
/// Rekor v1 entry that carries a trusted log's promise and records this signature; or, when
/// every entry is Rekor v2's (no integrated time, as cosign tells them), an entry whose
/// proof leads to a checkpoint of a trusted log, and the times of the timestamps that
/// verify. An entry that does not verify fails the signature; none fails it only when the
/// log is required.
pub fn made_at(
    keyless: &Keyless,
    require_tlog: bool,
    signing: &Evidence<'_>,
    leaf: &[u8],
    budget: &Budget,
) -> Result<MadeAt, Refused> {
    let not_logged = |why: &str| Check::Log.refused(format!("not in the transparency log: {why}"));
    let entries = signing.log.as_ref().map_err(|e| not_logged(e))?;
    if entries.is_empty() {
        return match require_tlog {
            true => Err(not_logged(
                "the signature has no log entry (spec.verify.transparencyLog: Optional accepts that)",
            )),
            false => Ok(MadeAt::default()),
        };
    }
    let recorded = Signing {
        kind: signing.kind,
        signed: signing.message,
        payload: signing.recorded,
        signatures: signing.signatures,
        leaf,
    };
    // Every entry must verify, as sigstore-go asks: one that does not (a broken proof, an
    // entry of another signature) refuses the signature, whatever verifies beside it.
    let mut times = Vec::new();
    for entry in entries {
        match keyless.root.logs.verify(entry, &recorded) {
            Ok(Logged::At(time)) => times.push(time),
            Ok(Logged::Untimed) => {}
            Err(e) => return Err(not_logged(&format!("its log entry does not verify: {e}"))),
        }
    }
    if !times.is_empty() {
        // The timestamps a bundle carries beside, too, as sigstore-go's observer timestamps
        // and sigstore-python count every established time: the certificate must be valid at
        // each that verifies (those that do not are not times; cosign v3, which reads only the
        // log's time then, is the difference docs/compatibility.md lists).
        let stamps = verified_stamps(keyless, signing, budget);
        return Ok(MadeAt {
            logged: times,
            stamped: stamps.times,
        });
    }
    // cosign asks a bundle whose entry carries an integrated time for its promise.
    if !entries.iter().all(Entry::untimed) {
        return Err(not_logged(
            "a Rekor v2 entry verifies, and no Rekor v1 entry beside it",
        ));
    }
    // Only Rekor v2 entries: the times come from the bundle's RFC 3161 timestamps.
    stamped(keyless, signing, budget)
}

/// The times the bundle's timestamps vouch for, one per authority (sigstore-go counts an
/// authority once); at least one must verify.
fn stamped(keyless: &Keyless, signing: &Evidence<'_>, budget: &Budget) -> Result<MadeAt, Refused> {
    let untimed = |why: String| {
        Check::Log.refused(format!(
            "not in the transparency log with a time: its Rekor v2 entry has no integrated \
             time, and {why}"
        ))
    };
    let stamps = verified_stamps(keyless, signing, budget);
    match (stamps.times.is_empty(), stamps.carried) {
        (false, _) => Ok(MadeAt {
            logged: Vec::new(),
            stamped: stamps.times,
        }),
        (true, false) => Err(untimed(
            "the bundle carries no timestamp of a timestamp authority".into(),
        )),
        (true, true) => Err(untimed(format!(
            "no timestamp verifies with a timestamp authority of trusted_root.json: {}",
            stamps.why.join("; ")
        ))),
    }
}

/// The bundle's timestamps that verify (their times, one per authority), whether it carries
/// any, and why the others did not.
struct Stamps {
    times: Vec<i64>,
    carried: bool,
    why: Vec<String>,
}

fn verified_stamps(keyless: &Keyless, signing: &Evidence<'_>, budget: &Budget) -> Stamps {
    let responses = &signing.timestamps;
    let signature = signing
        .signatures
        .first()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let (mut times, mut authorities, mut why) = (Vec::new(), Vec::new(), Vec::new());
    for response in responses {
        // Spent, no other timestamp can verify: they are not read.
        if budget.spent() {
            why.push(format!(
                "the timestamps: {}",
                super::super::path::OVER_BUDGET
            ));
            break;
        }
        let verified =
            super::super::timestamp::verify(&keyless.root.timestamps, response, signature, budget);
        match verified {
            Ok((_, uri)) if authorities.contains(&uri) => {}
            Ok((at, uri)) => {
                times.extend(at);
                authorities.push(uri);
            }
            Err(e) if !why.contains(&e) => why.push(e),
            Err(_) => {}
        }
    }
    Stamps {
        times,
        carried: !responses.is_empty(),
        why,
    }
}

/// When a keyless signature was made: no time (judged now), logs' integrated times, and the
/// times of timestamp authorities.
#[derive(Default)]
pub struct MadeAt {
    pub logged: Vec<i64>,
    pub stamped: Vec<i64>,
}
