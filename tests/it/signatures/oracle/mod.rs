//! The reference verifiers as judges: a corpus of signature cases made here (cosign bundles,
//! keyed and keyless, and notation envelopes, over every property a verifier reads) is judged
//! by sigstore-go and notation-go (tests/sigtools/judge, built by `make sigtools`) and by our
//! verifier through the library's `TrustedKeys`; each verdict must equal theirs, or the case is
//! one of [`DELIBERATE`]'s differences (docs/compatibility.md lists the same, with the reasons),
//! which must still differ.

mod bundles;
mod cosign;
mod envelopes;
mod families;
mod log;
mod notation;
mod pki;
mod rekor_v2;
mod sct;

use image_reflector::reference::ImageReference;
use image_reflector::verify::{Signed, Subject, TrustedKeys};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::SystemTime;

/// The digest every case signs.
pub const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
/// The repository every case's image is in.
pub const REPOSITORY: &str = "registry.invalid/team/app";

/// Where our verdict differs from the reference verifier's on purpose: a case whose id
/// contains the pattern, and why (docs/compatibility.md, "Signatures judged by the reference
/// verifiers").
pub const DELIBERATE: &[(&str, &str)] = &[];

/// One signature, what the policy trusts, and the reference verifier's input.
pub struct Case {
    pub id: String,
    pub judge: Value,
    pub ours: Ours,
    /// The signed image's repository (`registry/name`) and digest.
    pub image: (String, String),
}

pub enum Ours {
    Cosign {
        data: BTreeMap<String, Vec<u8>>,
        identities: Vec<(String, String)>,
        require_tlog: bool,
        bundle: Vec<u8>,
    },
    Notation {
        data: BTreeMap<String, Vec<u8>>,
        signature: Option<(String, Vec<u8>)>,
        subject: Subject,
    },
}

impl Case {
    /// Our verdict, through what the controller and `scan` call.
    fn ours(&self) -> Result<String, String> {
        let image = ImageReference::parse(&self.image.0, true).unwrap();
        let digest = self.image.1.as_str();
        let now = SystemTime::now();
        match &self.ours {
            Ours::Cosign {
                data,
                identities,
                require_tlog,
                bundle,
            } => {
                let trust = TrustedKeys::from_secret(data, identities, *require_tlog)
                    .map_err(|e| format!("policy: {e}"))?;
                let verified = trust.verify(&[Signed::Bundle(bundle.clone())], &image, digest, now);
                verified.map_err(|refusal| refusal.to_string())
            }
            Ours::Notation {
                data,
                signature,
                subject,
            } => {
                let trust = TrustedKeys::notation(data).map_err(|e| format!("policy: {e}"))?;
                let signed: Vec<Signed> = signature
                    .iter()
                    .map(|(media_type, bytes)| Signed::Notation {
                        media_type: media_type.clone(),
                        bytes: bytes.clone(),
                        subject: Some(subject.clone()),
                    })
                    .collect();
                let verified = trust.verify(&signed, &image, digest, now);
                verified.map_err(|refusal| refusal.to_string())
            }
        }
    }
}

/// The reference verifiers' verdicts on `cases`, by id.
fn judged(cases: &[Case]) -> BTreeMap<String, (bool, String)> {
    let lines: Vec<String> = cases
        .iter()
        .map(|c| {
            let mut line = c.judge.clone();
            line["id"] = Value::from(c.id.clone());
            line.to_string()
        })
        .collect();
    // ORACLE_DUMP=<file> keeps the judge's input, for another verifier to be measured on it.
    if let Some(path) = std::env::var_os("ORACLE_DUMP") {
        std::fs::write(path, lines.join("\n") + "\n").unwrap();
    }
    crate::support::sigtools::judge_lines("signature-judge", lines)
}

#[test]
#[ignore = "needs the reference verifiers' judge: make e2e-signatures"]
fn every_case_is_judged_as_sigstore_go_and_notation_go_judge_it() {
    let mut cases = cosign::cases();
    cases.extend(sct::cases());
    cases.extend(rekor_v2::cases());
    cases.extend(notation::cases());
    cases.extend(families::cases());
    let theirs = judged(&cases);
    assert_eq!(theirs.len(), cases.len(), "one verdict per case");
    let mut agree = 0;
    let mut deliberate = Vec::new();
    let mut wrong = Vec::new();
    for case in &cases {
        let ours = case.ours();
        let (valid, reason) = &theirs[&case.id];
        let known = DELIBERATE.iter().find(|(p, _)| case.id.contains(p));
        let line = format!(
            "{}: ours {} ({}), theirs {} ({reason})",
            case.id,
            if ours.is_ok() { "valid" } else { "refused" },
            ours.as_ref().unwrap_or_else(|e| e),
            if *valid { "valid" } else { "refused" },
        );
        if std::env::var("ORACLE_SHOW").is_ok_and(|p| case.id.contains(&p)) {
            println!("{line}");
        }
        match (ours.is_ok() == *valid, known) {
            (true, None) => agree += 1,
            (false, Some(_)) => deliberate.push(line),
            (false, None) => wrong.push(line),
            (true, Some((pattern, _))) => wrong.push(format!(
                "{line}: listed as a deliberate difference ({pattern}), and agrees"
            )),
        }
    }
    let valid = theirs.values().filter(|(v, _)| *v).count();
    println!(
        "{} cases ({valid} valid to the reference verifiers): {agree} agree, {} deliberate differences",
        cases.len(),
        deliberate.len()
    );
    assert!(cases.len() >= 500, "the corpus has {} cases", cases.len());
    // Each family of issue 70 as the reference verifier judges it: accepted, refused.
    for (family, accepted, refused) in families::FAMILIES {
        let prefix = format!("rekor-v2/{family}/");
        let judged: Vec<bool> = theirs
            .iter()
            .filter(|(id, _)| id.starts_with(&prefix))
            .map(|(_, (valid, _))| *valid)
            .collect();
        let valid = judged.iter().filter(|v| **v).count();
        assert_eq!(
            (valid, judged.len() - valid),
            (*accepted, *refused),
            "{family}: accepted and refused"
        );
    }
    assert!(
        wrong.is_empty(),
        "{} disagreements:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// A cosign bundle the real cosign made, as the library fetched it, under a policy of `keys`.
pub fn real_cosign(id: &str, bundle: &[u8], keys: &[String], image: (&str, &str)) -> Case {
    let text = String::from_utf8(bundle.to_vec()).unwrap();
    let judge = serde_json::json!({"cosign": {"bundle": text, "keys": keys, "identities": [],
        "requireTlog": true, "digest": image.1}});
    let data = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (format!("key{i}.pub"), k.clone().into_bytes()))
        .collect();
    Case {
        id: id.to_string(),
        judge,
        ours: Ours::Cosign {
            data,
            identities: Vec::new(),
            require_tlog: true,
            bundle: bundle.to_vec(),
        },
        image: (image.0.to_string(), image.1.to_string()),
    }
}

/// A keyless bundle the real cosign made (through Sigstore's real services), as the library
/// fetched it, under the trusted root `root` and `identities` (issuer, subject), the log
/// required.
pub fn real_keyless(
    id: &str,
    bundle: &[u8],
    root: &str,
    identities: &[(String, String)],
    image: (&str, &str),
) -> Case {
    let text = String::from_utf8(bundle.to_vec()).unwrap();
    let named: Vec<Value> = identities
        .iter()
        .map(|(issuer, subject)| serde_json::json!({"issuer": issuer, "subject": subject}))
        .collect();
    let judge = serde_json::json!({"cosign": {"bundle": text, "trustedRoot": root,
        "identities": named, "requireTlog": true, "digest": image.1}});
    Case {
        id: id.to_string(),
        judge,
        ours: Ours::Cosign {
            data: BTreeMap::from([("trusted_root.json".to_string(), root.as_bytes().to_vec())]),
            identities: identities.to_vec(),
            require_tlog: true,
            bundle: bundle.to_vec(),
        },
        image: (image.0.to_string(), image.1.to_string()),
    }
}

/// A notation envelope the real notation made, as the library fetched it (with the manifest's
/// descriptor), under `policy` and the CA certificates `store` (PEM).
pub fn real_notation(
    id: &str,
    signed: &Signed,
    policy: &str,
    store: &[String],
    image: (&str, &str),
) -> Case {
    use base64::Engine;
    let Signed::Notation {
        media_type,
        bytes,
        subject: Some(subject),
    } = signed
    else {
        panic!("{id}: not a notation signature with its subject");
    };
    let judge = serde_json::json!({"notation": {"mediaType": media_type,
        "envelope": base64::engine::general_purpose::STANDARD.encode(bytes),
        "trustPolicy": policy, "certificates": store,
        "reference": format!("{}@{}", image.0, image.1),
        "descriptor": {"mediaType": subject.media_type, "digest": image.1, "size": subject.size}}});
    let mut data = BTreeMap::from([("trustpolicy.json".to_string(), policy.as_bytes().to_vec())]);
    for (i, pem) in store.iter().enumerate() {
        data.insert(format!("ca{i}.crt"), pem.clone().into_bytes());
    }
    Case {
        id: id.to_string(),
        judge,
        ours: Ours::Notation {
            data,
            signature: Some((media_type.clone(), bytes.clone())),
            subject: subject.clone(),
        },
        image: (image.0.to_string(), image.1.to_string()),
    }
}

/// The ids of the cases the reference verifiers find valid, after asserting that ours find
/// exactly the same (in the order of `cases`).
pub fn agreeing(cases: &[Case]) -> Vec<String> {
    let theirs = judged(cases);
    let mut valid = Vec::new();
    for case in cases {
        let (theirs_valid, reason) = &theirs[&case.id];
        let ours = case.ours();
        assert_eq!(
            ours.is_ok(),
            *theirs_valid,
            "{}: ours {ours:?}, theirs {reason}",
            case.id
        );
        if *theirs_valid {
            valid.push(case.id.clone());
        }
    }
    valid
}
