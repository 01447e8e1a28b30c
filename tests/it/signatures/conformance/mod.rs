//! The sigstore-conformance suite's `bundle-verify` cases (tests/data/sigstore-conformance, all
//! 70), each given the suite's verdict in `make test`: a message signature through the bundle
//! verifier on its artifact ([`artifacts`]), a DSSE case also as an attested image through the
//! registry client and `scan` ([`images`]). A `_fail` case must be refused for its own defect:
//! [`EXPECTED`] names the check that finds it. `make e2e-signatures` has sigstore-go judge the
//! same cases ([`judged`]).

mod artifacts;
mod images;
mod judged;

use image_reflector::verify::{Check, TrustedKeys, TRUSTED_ROOT};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use Verdict::{Refused, Untrusted};

const SUITE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/sigstore-conformance"
);
const IDENTITY: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
const ISSUER: &str = "https://token.actions.githubusercontent.com";

/// One case as the suite lays it out (bundle-verify/README.md).
pub struct Case {
    pub name: String,
    pub bundle: Vec<u8>,
    pub artifact: Vec<u8>,
    /// The signer's identity and issuer, as given to a client: matched whole.
    pub identity: (String, String),
    pub key: Option<Vec<u8>>,
    pub trusted_root: Vec<u8>,
}

impl Case {
    /// Every case of the suite, by name.
    pub fn all() -> Vec<Case> {
        let dir = Path::new(SUITE).join("bundle-verify");
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        names.sort();
        names.iter().map(|p| Case::read(p)).collect()
    }

    /// The case `name`.
    pub fn named(name: &str) -> Case {
        Case::read(&Path::new(SUITE).join("bundle-verify").join(name))
    }

    fn read(dir: &Path) -> Case {
        let file = |name: &str| std::fs::read(dir.join(name)).ok();
        let text = |name: &str, default: &str| {
            file(name).map_or(default.to_string(), |b| {
                String::from_utf8(b).unwrap().trim().to_string()
            })
        };
        let suite = Path::new(SUITE);
        Case {
            name: dir.file_name().unwrap().to_str().unwrap().to_string(),
            bundle: file("bundle.sigstore.json").unwrap(),
            artifact: file("artifact")
                .unwrap_or_else(|| std::fs::read(suite.join("a.txt")).unwrap()),
            identity: (text("identity", IDENTITY), text("issuer", ISSUER)),
            key: file("key.pub"),
            trusted_root: file("trusted_root.json").unwrap_or_else(|| {
                std::fs::read(suite.join("public-good-trusted_root.json")).unwrap()
            }),
        }
    }

    /// The suite's verdict: a name ending in `_fail` must be refused.
    pub fn valid(&self) -> bool {
        !self.name.ends_with("_fail")
    }

    /// A policy's trust for the case, as a client is given it: the case's key, or its trusted
    /// root and the identity matched whole.
    pub fn trust(&self) -> Result<TrustedKeys, String> {
        let mut data = BTreeMap::new();
        match &self.key {
            Some(key) => {
                data.insert("key.pub".to_string(), key.clone());
                TrustedKeys::from_secret(&data, &[], true)
            }
            None => {
                data.insert(TRUSTED_ROOT.to_string(), self.trusted_root.clone());
                TrustedKeys::from_secret(&data, &[self.identity_expressions()], true)
            }
        }
    }

    /// `(issuer, subject)` as `matchOIDCIdentity` expressions matching the case's exactly.
    pub fn identity_expressions(&self) -> (String, String) {
        let whole = |s: &str| format!("^{}$", regex::escape(s));
        (whole(&self.identity.1), whole(&self.identity.0))
    }

    /// A DSSE case: its bundle holds an envelope.
    pub fn is_dsse(&self) -> bool {
        self.holds("dsseEnvelope")
    }

    /// A message signature's case.
    pub fn is_message(&self) -> bool {
        self.holds("messageSignature")
    }

    fn holds(&self, field: &str) -> bool {
        serde_json::from_slice::<serde_json::Value>(&self.bundle)
            .is_ok_and(|b| b.get(field).is_some())
    }

    pub fn digest(&self) -> String {
        use sha2::Digest;
        format!("sha256:{:x}", sha2::Sha256::digest(&self.artifact))
    }
}

/// How a case ends with us.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Valid,
    /// Refused by the check that finds the case's defect.
    Refused(Check),
    /// The trust itself refused: the case's trusted root is not one.
    Untrusted,
}

/// Every `_fail` case and the check that refuses it for its own defect, its README's: a log
/// entry that records another signature, payload or certificate (the `dsse-*`, `wrong-*` and
/// `rekor2-dsse-*` cases) is found at the log, which records what was signed; a certificate
/// outside its life at the signing time at the time check; a key or root that does not read
/// is no trust at all (the policy is Stalled). One case is refused before its defect, as
/// sigstore-go refuses it: `rekor2-timestamp-with-incorrect-time_fail`'s timestamp is base64
/// broken into lines whose length protobuf's JSON reads as unpadded, yet padded; with the
/// lines joined, its own defect refuses it ([`artifacts`]).
pub const EXPECTED: &[(&str, Verdict)] = &[
    (
        "bundle-empty-certificate-chain_fail",
        Refused(Check::Format),
    ),
    ("bundle-from-wrong-instance_fail", Refused(Check::Log)),
    (
        "bundle-invalid-base64-signature_fail",
        Refused(Check::Format),
    ),
    ("bundle-malformed-json_fail", Refused(Check::Format)),
    ("bundle-negative-log-index_fail", Refused(Check::Log)),
    ("bundle-unknown-version_fail", Refused(Check::Format)),
    ("bundle-with-root-cert_fail", Refused(Check::Format)),
    ("checkpoint-bad-keyhint_fail", Refused(Check::Log)),
    ("checkpoint-wrong-roothash_fail", Refused(Check::Log)),
    ("dsse-invalid-sig_fail", Refused(Check::Log)),
    ("dsse-mismatch-envelope_fail", Refused(Check::Log)),
    ("dsse-mismatch-sig_fail", Refused(Check::Log)),
    ("inclusion-proof-corrupted-hash_fail", Refused(Check::Log)),
    ("incorrect-public-key_fail", Refused(Check::Log)),
    ("integrated-time-in-future_fail", Refused(Check::Time)),
    ("intoto-expired-certificate_fail", Refused(Check::Time)),
    ("intoto-log-entry-mismatch_fail", Refused(Check::Log)),
    (
        "intoto-missing-inclusion-proof_fail",
        Refused(Check::Format),
    ),
    (
        "intoto-set-outside-signing-cert-validity_fail",
        Refused(Check::Time),
    ),
    (
        "intoto-tsa-timestamp-outside-cert-validity_fail",
        Refused(Check::Time),
    ),
    ("invalid-checkpoint-signature_fail", Refused(Check::Log)),
    ("invalid-ct-key_fail", Refused(Check::Authenticity)),
    ("invalid-inclusion-proof_fail", Refused(Check::Log)),
    ("managed-key-no-key_fail", Refused(Check::Authenticity)),
    ("managed-key-wrong-key_fail", Untrusted),
    ("message-digest-mismatch_fail", Refused(Check::Subject)),
    (
        "rekor2-checkpoint-missing-log-signature_fail",
        Refused(Check::Log),
    ),
    ("rekor2-checkpoint-missing-origin_fail", Refused(Check::Log)),
    (
        "rekor2-checkpoint-missing-root-hash_fail",
        Refused(Check::Log),
    ),
    ("rekor2-checkpoint-missing-size_fail", Refused(Check::Log)),
    (
        "rekor2-checkpoint-no-matching-signature_fail",
        Refused(Check::Log),
    ),
    ("rekor2-dsse-invalid-sig_fail", Refused(Check::Log)),
    ("rekor2-dsse-mismatch-envelope_fail", Refused(Check::Log)),
    ("rekor2-dsse-mismatch-sig_fail", Refused(Check::Log)),
    ("rekor2-no-inclusion-proof_fail", Refused(Check::Format)),
    ("rekor2-no-timestamp_fail", Refused(Check::Log)),
    (
        "rekor2-timestamp-outside-trust-root-tsa-validity_fail",
        Refused(Check::Log),
    ),
    (
        "rekor2-timestamp-outside-tsa-cert-validity_fail",
        Refused(Check::Log),
    ),
    (
        "rekor2-timestamp-payload-mismatch_fail",
        Refused(Check::Log),
    ),
    (
        "rekor2-timestamp-untrusted-tsa-with-embedded-cert_fail",
        Refused(Check::Log),
    ),
    (
        "rekor2-timestamp-untrusted-tsa-without-embedded-cert_fail",
        Refused(Check::Log),
    ),
    (
        "rekor2-timestamp-with-incorrect-time_fail",
        Refused(Check::Format),
    ),
    ("set-invalid-signature_fail", Refused(Check::Log)),
    ("signature-mismatch_fail", Refused(Check::Log)),
    ("trust-root-tlog-missing-validity-start_fail", Untrusted),
    ("wrong-hashedrekord-artifact_fail", Refused(Check::Log)),
    ("wrong-hashedrekord-cert-and-sig_fail", Refused(Check::Log)),
    ("wrong-hashedrekord-entry_fail", Refused(Check::Log)),
    ("wrong-material_fail", Refused(Check::Subject)),
];
