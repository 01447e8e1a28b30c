//! Every case through the bundle verifier on its artifact (`TrustedKeys::verify_artifact`), as
//! a client of the suite is run: the case's key, or its trusted root and identity.

use super::{Case, Verdict, EXPECTED};
use image_reflector::verify::Check;
use std::collections::BTreeMap;
use std::time::SystemTime;

/// Our verdict on `case`, and its reason.
pub(super) fn ours(case: &Case) -> (Verdict, String) {
    let trust = match case.trust() {
        Ok(trust) => trust,
        Err(e) => return (Verdict::Untrusted, e),
    };
    match trust.verify_artifact(&case.bundle, &case.artifact, SystemTime::now()) {
        Ok(verified) => (Verdict::Valid, verified.who),
        Err(refused) => (Verdict::Refused(refused.check), refused.reason),
    }
}

/// The suite's verdict on each of its 70 cases; each `_fail` refused by the check that finds
/// its own defect; a valid keyless case's signer is the identity the case names.
#[test]
fn every_case_has_the_suites_verdict_for_its_own_defect() {
    let cases = Case::all();
    assert_eq!(cases.len(), 70, "the suite's bundle-verify cases");
    let expected: BTreeMap<&str, Verdict> = EXPECTED.iter().copied().collect();
    let failing: Vec<&str> = cases
        .iter()
        .filter(|c| !c.valid())
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        failing,
        expected.keys().copied().collect::<Vec<_>>(),
        "EXPECTED names every _fail case"
    );
    let mut wrong = Vec::new();
    for case in &cases {
        let (verdict, why) = ours(case);
        let want = expected
            .get(case.name.as_str())
            .copied()
            .unwrap_or(Verdict::Valid);
        if verdict != want {
            wrong.push(format!("{}: {verdict:?}, not {want:?} ({why})", case.name));
        }
        if verdict == Verdict::Valid && case.key.is_none() {
            assert_eq!(
                why,
                format!("{} ({})", case.identity.0, case.identity.1),
                "{}",
                case.name
            );
        }
    }
    assert!(
        wrong.is_empty(),
        "{} cases:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// The families docs/compatibility.md counts, by the prefixes of the suite's names: (family,
/// prefixes, valid, refused).
const FAMILIES: &[(&str, &[&str], usize, usize)] = &[
    ("bundle format", &["bundle-", "happy-path-"], 6, 7),
    (
        "Rekor v1 log",
        &[
            "checkpoint-",
            "inclusion-",
            "incorrect-",
            "integrated-",
            "invalid-",
            "set-",
            "signature-",
            "wrong-",
            "message-",
        ],
        0,
        15,
    ),
    ("DSSE and in-toto", &["dsse-", "intoto-"], 1, 8),
    ("Rekor v2 log", &["rekor2-"], 10, 16),
    ("keys", &["managed-key-"], 2, 2),
    ("trusted roots", &["trust-root-"], 2, 1),
];

/// What docs/compatibility.md counts: 14 DSSE cases and 55 message signatures, and one that is
/// no bundle; the families; and the checks that refuse the `_fail` cases.
#[test]
fn the_suite_is_counted_as_the_docs_count_it() {
    let cases = Case::all();
    let dsse = cases.iter().filter(|c| c.is_dsse()).count();
    let messages = cases.iter().filter(|c| c.is_message()).count();
    assert_eq!((dsse, messages, cases.len() - dsse - messages), (14, 55, 1));
    let valid = |pick: fn(&Case) -> bool| cases.iter().filter(|c| pick(c) && c.valid()).count();
    assert_eq!((valid(Case::is_dsse), valid(Case::is_message)), (3, 18));
    let mut counted = 0;
    for (family, prefixes, valid, refused) in FAMILIES {
        let of: Vec<&Case> = cases
            .iter()
            .filter(|c| prefixes.iter().any(|p| c.name.starts_with(p)))
            .collect();
        let held = of.iter().filter(|c| !c.valid()).count();
        assert_eq!((of.len() - held, held), (*valid, *refused), "{family}");
        counted += of.len();
    }
    assert_eq!(counted, 70, "each case in one family");
    let mut checks = BTreeMap::new();
    for (_, verdict) in EXPECTED {
        *checks.entry(format!("{verdict:?}")).or_insert(0) += 1;
    }
    let want = [
        ("Refused(Authenticity)", 2),
        ("Refused(Format)", 8),
        ("Refused(Log)", 31),
        ("Refused(Subject)", 2),
        ("Refused(Time)", 4),
        ("Untrusted", 2),
    ];
    assert_eq!(
        checks,
        want.iter().map(|(k, n)| (k.to_string(), *n)).collect()
    );
}

/// `rekor2-timestamp-with-incorrect-time_fail`'s timestamp does not read as sigstore-go reads
/// a bundle (base64 in lines whose count protobuf's JSON takes as unpadded, and padded): with
/// its lines joined, the bundle is refused for its own defect, a timestamp outside the
/// certificate's life.
#[test]
fn the_incorrect_time_case_is_refused_for_its_time_once_its_timestamp_reads() {
    let mut case = Case::all()
        .into_iter()
        .find(|c| c.name == "rekor2-timestamp-with-incorrect-time_fail")
        .unwrap();
    assert_eq!(ours(&case).1, "a bundle's timestamp is not base64");
    let mut bundle: serde_json::Value = serde_json::from_slice(&case.bundle).unwrap();
    let stamp = &mut bundle["verificationMaterial"]["timestampVerificationData"]
        ["rfc3161Timestamps"][0]["signedTimestamp"];
    *stamp = stamp.as_str().unwrap().replace('\n', "").into();
    case.bundle = serde_json::to_vec(&bundle).unwrap();
    let (verdict, why) = ours(&case);
    assert_eq!(verdict, Verdict::Refused(Check::Time), "{why}");
    assert!(why.starts_with("at its timestamp's time"), "{why}");
}
