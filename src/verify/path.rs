//! Certificate paths built as Go's x509 builds them, so a tenant's certificates cannot make
//! one verification cost seconds of CPU.
//!
//! webpki's path builder tries every certificate that names the child's issuer and checks
//! signatures only once a path reaches an anchor: many certificates of one name (in an RFC 3161
//! token, or in a tenant's own trusted root) make it try every ordering until its 200,000-call
//! budget runs out, seconds per chain, per timestamp, per authority. Go's x509, which
//! sigstore-go and notation-go verify with, checks a candidate issuer's signature over the
//! child before it goes further, at most 100 times a verification (`maxChainSignatureChecks`).
//!
//! So paths are found here that way (names, the candidate's validity, its signature over the
//! child, no subject and key twice in a path, at most [`MAX_SIGNATURE_CHECKS`] signature checks
//! and [`MAX_DEPTH`] intermediates), and webpki is given each path found, alone, to verify
//! whole (names, validity, constraints, key usages, every signature again). What is found here
//! only chooses what webpki is shown: it can make webpki refuse, never accept.

mod parsed;

use parsed::{parse, Parsed};
use rustls_pki_types::{CertificateDer, UnixTime};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};

/// Signature checks one signature's paths (and SCTs) may make, each certificate and key once. Go's
/// x509 allows 100 per chain it builds; a Sigstore signature needs a few (a Fulcio chain, a
/// timestamp's chain, an SCT), and what a tenant's root or a registry's bundle can make one cost
/// stays within twice a root of the public-good shape's (`cargo bench --bench gates`).
pub const MAX_SIGNATURE_CHECKS: usize = 32;
/// Intermediates in a path: webpki's bound (`MAX_SUB_CA_COUNT`).
pub const MAX_DEPTH: usize = 6;
/// What a signature is refused with when its paths ran out of budget.
pub const OVER_BUDGET: &str = "its certificates took over the 32 signature checks a \
     signature's certificate paths may make (a bound, as Go's x509 bounds a verification)";
/// Candidate issuers one signature's paths may look at (each a name compare and a lookup).
pub const MAX_STEPS: usize = 4096;
/// Paths handed to webpki per verification; each is checked whole, so a real chain is the
/// first one found (the candidates' names, validity and signatures were checked already).
pub const MAX_PATHS: usize = 8;

/// Whether the certificate `issuer` signed the certificate `child` (DER; false when either
/// does not parse), by every algorithm Go's x509 verifies but SHA-1's: for a chain that is
/// checked here alone (notation's, which it carries whole and in order).
pub fn signed(child: &[u8], issuer: &[u8]) -> bool {
    match (parse(child), parse(issuer)) {
        (Some(child), Some(issuer)) => child.signed_by(&issuer),
        _ => false,
    }
}

/// Certificates a verification may build paths through (a token's, an authority's), read once
/// and looked up by subject. Shared between threads with the trusted root it belongs to.
#[derive(Default)]
pub struct Pool {
    certs: Vec<Parsed>,
    by_subject: HashMap<Vec<u8>, Vec<usize>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pool({} certificates)", self.certs.len())
    }
}

impl Pool {
    /// The pool of `certificates` (each once; one that does not parse is none).
    pub fn new<'a>(certificates: impl IntoIterator<Item = &'a [u8]>) -> Pool {
        let mut pool = Pool::default();
        let mut seen = HashSet::new();
        for der in certificates {
            if !seen.insert(der) {
                continue;
            }
            if let Some(parsed) = parse(der) {
                pool.by_subject
                    .entry(parsed.subject.clone())
                    .or_default()
                    .push(pool.certs.len());
                pool.certs.push(parsed);
            }
        }
        pool
    }

    /// The pool's certificates, as DER.
    pub fn ders(&self) -> impl Iterator<Item = &[u8]> {
        self.certs.iter().map(|c| c.der.as_ref())
    }
}

/// What one signature's paths may still cost, across its timestamps, their authorities and the
/// times its certificate is checked at: [`MAX_SIGNATURE_CHECKS`] signatures verified (each
/// once: a verdict is remembered by certificate and key) and [`MAX_STEPS`] candidates looked
/// at. Go's x509 bounds each verification by 100 checks; bounding the signature instead lets a
/// trusted root of many authorities, or a bundle of many timestamps, multiply nothing. Once it
/// is spent nothing more is looked at, not even what is known.
pub struct Budget {
    checks: Cell<usize>,
    steps: Cell<usize>,
    known: RefCell<Verdicts>,
}

/// Whether a key signed a certificate, by their digests.
type Verdicts = HashMap<([u8; 32], [u8; 32]), bool>;

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            checks: Cell::new(MAX_SIGNATURE_CHECKS),
            steps: Cell::new(MAX_STEPS),
            known: RefCell::new(HashMap::new()),
        }
    }
}

impl Budget {
    /// Whether the budget ran out.
    pub fn spent(&self) -> bool {
        self.checks.get() == 0 || self.steps.get() == 0
    }

    /// One signature check of another kind (an SCT's) from the budget; false once it is spent.
    pub fn check(&self) -> bool {
        let left = self.checks.get();
        self.checks.set(left.saturating_sub(1));
        left > 0
    }

    /// Whether `issuer`'s key signed `child`, `None` once the budget is spent.
    fn signed(&self, child: &Parsed, issuer: &Parsed) -> Option<bool> {
        let steps = self.steps.get().checked_sub(1)?;
        self.steps.set(steps);
        let key = (child.id, issuer.key_id);
        if let Some(known) = self.known.borrow().get(&key) {
            return Some(*known);
        }
        let checks = self.checks.get().checked_sub(1)?;
        self.checks.set(checks);
        let signed = child.signed_by(issuer);
        self.known.borrow_mut().insert(key, signed);
        Some(signed)
    }
}

/// An extended key usage as Go's x509 checks a chain for one (`VerifyOptions.KeyUsages`, which
/// sigstore-go and Sigstore's timestamp-authority ask): a certificate without the extension
/// allows any; one with it must list the purpose or anyExtendedKeyUsage. (webpki's own
/// `KeyUsage` reads anyExtendedKeyUsage as no purpose.)
#[derive(Clone, Copy)]
pub struct Usage {
    /// The purpose's OID, as webpki's `KeyUsage` takes it, and its arcs.
    pub oid: &'static [u8],
    pub arcs: &'static [usize],
}

/// anyExtendedKeyUsage (2.5.29.37.0).
const ANY_USAGE: [usize; 5] = [2, 5, 29, 37, 0];

impl webpki::ExtendedKeyUsageValidator for Usage {
    fn validate(&self, purposes: webpki::KeyPurposeIdIter<'_, '_>) -> Result<(), webpki::Error> {
        let mut present = Vec::new();
        for purpose in purposes {
            let arcs = purpose?.to_decoded_oid();
            if arcs == self.arcs || arcs == ANY_USAGE {
                return Ok(());
            }
            present.push(arcs);
        }
        match present.is_empty() {
            true => Ok(()),
            false => Err(webpki::Error::RequiredEkuNotFoundContext(
                webpki::RequiredEkuNotFoundContext {
                    required: webpki::KeyUsage::required(self.oid),
                    present,
                },
            )),
        }
    }
}

/// What a verification asks: the time, the key usage, where paths may go, and what they may
/// cost.
pub struct Verification<'a> {
    pub time: UnixTime,
    pub usage: Usage,
    pub pools: &'a [&'a Pool],
    pub budget: &'a Budget,
}

/// A certificate of a path: the pool it is in and its place there.
type Step = (usize, usize);

struct Search<'a> {
    leaf: &'a Parsed,
    anchor: &'a Parsed,
    pools: &'a [&'a Pool],
    at: i64,
    budget: &'a Budget,
    paths: Vec<Vec<Step>>,
}

impl<'a> Search<'a> {
    fn cert(&self, step: Option<Step>) -> &'a Parsed {
        match step {
            None => self.leaf,
            Some((pool, i)) => &self.pools[pool].certs[i],
        }
    }

    /// Whether `issuer` signed `child`, from the budget; false once it is spent.
    fn signed(&mut self, child: &Parsed, issuer: &Parsed) -> bool {
        self.budget.signed(child, issuer) == Some(true)
    }

    /// Depth first from `path`'s last certificate, as Go's buildChains goes: the anchor first,
    /// then each pooled candidate of the issuer's name, valid at the time, not a CA already in
    /// the path, whose key signed it.
    fn extend(&mut self, path: &mut Vec<Step>) {
        let last = path.last().copied();
        let (child, anchor) = (self.cert(last), self.anchor);
        if child.issuer == anchor.subject && self.signed(child, anchor) {
            self.paths.push(path.clone());
        }
        if path.len() == MAX_DEPTH {
            return;
        }
        let pools = self.pools;
        for (p, pool) in pools.iter().enumerate() {
            let candidates = pool
                .by_subject
                .get(&child.issuer)
                .map_or(&[][..], Vec::as_slice);
            for &i in candidates {
                if self.paths.len() == MAX_PATHS || self.budget.spent() {
                    return;
                }
                let cert = &pool.certs[i];
                let (from, to) = cert.valid;
                let in_path = self.leaf.same_ca(cert)
                    || path.iter().any(|s| self.cert(Some(*s)).same_ca(cert));
                if in_path || !(from..=to).contains(&self.at) {
                    continue;
                }
                if self.signed(child, cert) {
                    path.push((p, i));
                    self.extend(path);
                    path.pop();
                }
            }
        }
    }
}

/// Verifies that `leaf` chains to `anchor` through the pools, for `usage` at `time`: each path
/// found is given to webpki alone, the first it accepts is the answer. Refused as webpki refused
/// the last path it was shown, `UnknownIssuer` when none was found, and
/// `MaximumSignatureChecksExceeded` when the budget ran out before one was.
pub fn verify(
    leaf: &webpki::EndEntityCert<'_>,
    leaf_der: &[u8],
    anchor: &CertificateDer<'_>,
    verification: &Verification<'_>,
) -> Result<(), webpki::Error> {
    // Spent, nothing more is looked at (nor read).
    if verification.budget.spent() {
        return Err(webpki::Error::MaximumSignatureChecksExceeded);
    }
    let (Some(leaf_parsed), Some(anchor_parsed)) = (parse(leaf_der), parse(anchor)) else {
        return Err(webpki::Error::BadDer);
    };
    let trust_anchor = webpki::anchor_from_trusted_cert(anchor)?;
    let mut search = Search {
        leaf: &leaf_parsed,
        anchor: &anchor_parsed,
        pools: verification.pools,
        at: verification.time.as_secs() as i64,
        budget: verification.budget,
        paths: Vec::new(),
    };
    search.extend(&mut Vec::new());
    let mut refusal = match verification.budget.spent() {
        true => webpki::Error::MaximumSignatureChecksExceeded,
        false => webpki::Error::UnknownIssuer,
    };
    for path in &search.paths {
        let intermediates: Vec<CertificateDer<'_>> = path
            .iter()
            .map(|(p, i)| verification.pools[*p].certs[*i].der.clone())
            .collect();
        match leaf.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            std::slice::from_ref(&trust_anchor),
            &intermediates,
            verification.time,
            verification.usage,
            None,
            None,
        ) {
            Ok(_) => return Ok(()),
            Err(e) => refusal = e,
        }
    }
    Err(refusal)
}

#[cfg(test)]
mod tests;
