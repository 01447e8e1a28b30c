//! Signed certificate timestamps (SCTs) embedded in keyless leaves, over what the trusted root
//! names: a CT log's SCT over the precertificate counts, one of another log or over another
//! certificate does not; a root with CT logs asks for one, a root without asks for none (the
//! judge gives sigstore-go `WithSignedCertificateTimestamps(1)` only when the root names a CT
//! log, as docs/compatibility.md says).

use super::bundles::{authority, cosign_case, entry, envelope, trusted_root};
use super::cosign::{Envelope, Logged, V03};
use super::log::{b64, Log};
use super::pki::{Ca, Leaf, LeafSpec};
use super::Case;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Every SCT case: the leaf's SCT (of which log, over this certificate or another), the CT
/// logs the root names, and `transparencyLog`.
pub fn cases() -> Vec<Case> {
    let root = Ca::root("sct root");
    let (ct, other_ct, log, other_log) = (Log::new(), Log::new(), Log::new(), Log::new());
    // A case's name, the leaf's SCT (by which log, over another certificate), the root's CT logs.
    type Row<'a> = (&'a str, Option<(&'a Log, bool)>, Vec<&'a Log>);
    let grid: [Row<'_>; 7] = [
        ("good", Some((&ct, false)), vec![&ct]),
        ("none", None, vec![&ct]),
        ("other-log", Some((&other_ct, false)), vec![&ct]),
        ("other-certificate", Some((&ct, true)), vec![&ct]),
        (
            "second-of-two-logs",
            Some((&ct, false)),
            vec![&other_ct, &ct],
        ),
        ("no-ct-logs-none", None, vec![]),
        ("no-ct-logs-good", Some((&ct, false)), vec![]),
    ];
    let mut cases = Vec::new();
    for (name, sct, ctlogs) in grid {
        for require in [true, false] {
            let spec = LeafSpec::fulcio("dev@example.com", "https://issuer.example");
            let leaf = match sct {
                Some((by, other)) => Leaf::with_sct(&spec, &root, by.key(), other),
                None => Leaf::new(&spec, &root),
            };
            let sign = |m: &[u8]| leaf.sign_der(m);
            let (env, payload, signature) = envelope(&sign, Envelope::One);
            let parts = (&env, payload.as_slice(), signature.as_slice());
            let logged = entry(&log, &other_log, Logged::Valid, parts, &leaf.pem);
            let material = json!({"certificate": {"rawBytes": b64(&leaf.der)},
                "tlogEntries": logged.into_iter().collect::<Vec<_>>()});
            let bundle =
                json!({"mediaType": V03, "verificationMaterial": material, "dsseEnvelope": env});
            let authorities = vec![authority(&[&root], -86_400 * 365, None)];
            let mut written: Value =
                serde_json::from_str(&trusted_root(authorities, &[&log])).unwrap();
            written["ctlogs"] = json!(ctlogs.iter().map(|l| l.root_entry()).collect::<Vec<_>>());
            let written = written.to_string();
            let data = BTreeMap::from([(
                "trusted_root.json".to_string(),
                written.clone().into_bytes(),
            )]);
            let identities = vec![(
                "^https://issuer\\.example$".to_string(),
                "^dev@example\\.com$".to_string(),
            )];
            let id = format!("sct/{name}/require={require}");
            cases.push(cosign_case(
                id,
                bundle,
                data,
                Vec::new(),
                identities,
                written,
                require,
            ));
        }
    }
    cases
}
