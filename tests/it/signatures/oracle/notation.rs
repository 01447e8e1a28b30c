//! Notation's cases: JWS envelopes as notation signs them, over the grid of what notation-go
//! reads — the leaf's subject against `trustedIdentities` (RFC 4514 escapes, repeated
//! attributes), the chain (intermediates and their usage, the root carried or not, an untrusted
//! root), the leaf (usage, key, validity), expiry, the target descriptor, the verification
//! level, which statement's scopes apply, and trust policies notation-go refuses.

use super::envelopes::{chains, jws, Signing};
use super::log::b64;
use super::pki::{Ca, Leaf, LeafSpec};
use super::{Case, Ours, DIGEST, REPOSITORY};
use rcgen::{DnType, ExtendedKeyUsagePurpose};
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub(super) const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub(super) const SIZE: u64 = 1234;
const LEVELS: [&str; 4] = ["strict", "permissive", "audit", "skip"];
const VICTIM: &str = "x509.subject: C=US, ST=WA, O=Victim";

/// The signed manifest as the registry serves it.
pub fn served() -> image_reflector::verify::Subject {
    image_reflector::verify::Subject {
        media_type: MANIFEST.into(),
        size: SIZE,
    }
}

pub(super) struct World {
    pub(super) root: Ca,
    pub(super) intermediate: Ca,
    pub(super) server_intermediate: Ca,
    pub(super) code_intermediate: Ca,
    pub(super) stranger: Ca,
}

fn statement(name: &str, scopes: &[&str], level: &str, identities: &[&str]) -> Value {
    let mut s = json!({"name": name, "registryScopes": scopes,
        "signatureVerification": {"level": level}});
    if level != "skip" {
        s["trustStores"] = json!(["ca:corpus"]);
        s["trustedIdentities"] = json!(identities);
    }
    s
}

fn policy(statements: Vec<Value>) -> String {
    json!({"version": "1.0", "trustPolicies": statements}).to_string()
}

fn case(name: String, policy: String, store: &[&Ca], signature: Option<Vec<u8>>) -> Case {
    let pems: Vec<String> = store.iter().map(|c| c.pem()).collect();
    let mut data = BTreeMap::from([("trustpolicy.json".to_string(), policy.clone().into_bytes())]);
    for (i, pem) in pems.iter().enumerate() {
        data.insert(format!("ca{i}.crt"), pem.clone().into_bytes());
    }
    let envelope = signature.clone().unwrap_or_default();
    let judge = json!({"notation": {"mediaType": "application/jose+json", "envelope": b64(&envelope),
        "trustPolicy": policy, "certificates": pems,
        "reference": format!("{REPOSITORY}@{DIGEST}"),
        "descriptor": {"mediaType": MANIFEST, "digest": DIGEST, "size": SIZE}}});
    Case {
        id: name,
        judge,
        ours: Ours::Notation {
            data,
            signature: signature.map(|s| ("application/jose+json".to_string(), s)),
            subject: served(),
        },
        image: (REPOSITORY.to_string(), DIGEST.to_string()),
    }
}

/// The subject of a leaf as a case names it.
pub(super) fn subject(name: &str) -> Vec<(DnType, &'static str)> {
    use DnType::*;
    match name {
        "exact" => vec![
            (CountryName, "US"),
            (StateOrProvinceName, "WA"),
            (OrganizationName, "Victim"),
            (CommonName, "signer"),
        ],
        "escaped" => vec![(OrganizationName, "Attacker"), (CommonName, "a, O=Victim")],
        "two-o" => vec![
            (CountryName, "US"),
            (StateOrProvinceName, "WA"),
            (OrganizationName, "Victim"),
            (OrganizationName, "Attacker"),
        ],
        "no-st" => vec![
            (CountryName, "US"),
            (OrganizationName, "Victim"),
            (CommonName, "signer"),
        ],
        _ => vec![
            (CountryName, "US"),
            (StateOrProvinceName, "WA"),
            (OrganizationName, "Other"),
        ],
    }
}

pub fn cases() -> Vec<Case> {
    let root = Ca::root("notation root");
    let world = World {
        intermediate: Ca::intermediate("notation intermediate", &root, None),
        server_intermediate: Ca::intermediate(
            "server intermediate",
            &root,
            Some(ExtendedKeyUsagePurpose::ServerAuth),
        ),
        code_intermediate: Ca::intermediate(
            "code intermediate",
            &root,
            Some(ExtendedKeyUsagePurpose::CodeSigning),
        ),
        root,
        stranger: Ca::root("stranger"),
    };
    let mut cases = Vec::new();
    let identity_sets: [(&str, Vec<&str>); 4] = [
        ("any", vec!["*"]),
        ("victim", vec![VICTIM]),
        (
            "victim-signer",
            vec!["x509.subject: C=US, ST=WA, O=Victim, CN=signer"],
        ),
        (
            "other-or-victim",
            vec!["x509.subject: C=US, ST=WA, O=Other", VICTIM],
        ),
    ];
    for who in ["exact", "escaped", "two-o", "no-st", "other"] {
        let leaf = Leaf::new(&LeafSpec::notation(&subject(who)), &world.root);
        let signature = jws(
            &leaf,
            &[leaf.der.clone(), world.root.der()],
            &Signing::default(),
        );
        for (set, identities) in &identity_sets {
            for level in &LEVELS[..3] {
                let policy = policy(vec![statement("p", &["*"], level, identities)]);
                let name = format!("notation/subject/{who}/{set}/{level}");
                cases.push(case(name, policy, &[&world.root], Some(signature.clone())));
            }
        }
    }
    for (chain, signature) in chains(&world) {
        for level in LEVELS {
            let policy = policy(vec![statement("p", &["*"], level, &["*"])]);
            cases.push(case(
                format!("notation/chain/{chain}/{level}"),
                policy,
                &[&world.root],
                Some(signature.clone()),
            ));
        }
    }
    let leaf = Leaf::new(&LeafSpec::notation(&subject("exact")), &world.root);
    let chain = [leaf.der.clone(), world.root.der()];
    let descriptors = [
        (
            "right",
            json!({"mediaType": MANIFEST, "digest": DIGEST, "size": SIZE}),
        ),
        (
            "size",
            json!({"mediaType": MANIFEST, "digest": DIGEST, "size": SIZE + 1}),
        ),
        (
            "media-type",
            json!({"mediaType": "application/vnd.oci.image.index.v1+json", "digest": DIGEST, "size": SIZE}),
        ),
        (
            "digest",
            json!({"mediaType": MANIFEST, "digest": format!("sha256:{}", "2".repeat(64)), "size": SIZE}),
        ),
    ];
    for (what, descriptor) in descriptors {
        for expiry in [None, Some(86_400), Some(-60)] {
            let signing = Signing {
                expiry,
                descriptor: descriptor.clone(),
                ..Signing::default()
            };
            let signature = jws(&leaf, &chain, &signing);
            for level in LEVELS {
                let policy = policy(vec![statement("p", &["*"], level, &["*"])]);
                let name = format!("notation/target/{what}/expiry={expiry:?}/{level}");
                cases.push(case(name, policy, &[&world.root], Some(signature.clone())));
            }
        }
    }
    let good = jws(&leaf, &chain, &Signing::default());
    let forged = jws(
        &leaf,
        &chain,
        &Signing {
            forged: true,
            ..Signing::default()
        },
    );
    let scoped: [(&str, Vec<Value>); 5] = [
        (
            "specific-strict",
            vec![
                statement("app", &[REPOSITORY], "strict", &["*"]),
                statement("rest", &["*"], "skip", &[]),
            ],
        ),
        (
            "specific-skip",
            vec![
                statement("rest", &["*"], "strict", &["*"]),
                statement("app", &[REPOSITORY], "skip", &[]),
            ],
        ),
        (
            "none-applies",
            vec![statement(
                "other",
                &["registry.invalid/team/other"],
                "strict",
                &["*"],
            )],
        ),
        (
            "two-scopes",
            vec![statement(
                "app",
                &["registry.invalid/team/other", REPOSITORY],
                "audit",
                &["*"],
            )],
        ),
        (
            "specific-audit",
            vec![
                statement("rest", &["*"], "strict", &["*"]),
                statement("app", &[REPOSITORY], "audit", &["*"]),
            ],
        ),
    ];
    for (what, statements) in scoped {
        for (signed, signature) in [
            ("signed", Some(good.clone())),
            ("forged", Some(forged.clone())),
            ("unsigned", None),
        ] {
            let name = format!("notation/scope/{what}/{signed}");
            cases.push(case(
                name,
                policy(statements.clone()),
                &[&world.root],
                signature,
            ));
        }
    }
    cases.extend(timestamped(&world, &good));
    for (what, doc) in invalid_policies() {
        for (signed, signature) in [("signed", Some(good.clone())), ("unsigned", None)] {
            cases.push(case(
                format!("notation/policy/{what}/{signed}"),
                doc.clone(),
                &[&world.root],
                signature,
            ));
        }
    }
    cases
}

/// Statements that name a `tsa:` store, which makes notation require a timestamp
/// countersignature (none here has one), always or once a certificate expired; and overrides.
fn timestamped(world: &World, good: &[u8]) -> Vec<Case> {
    let expired = {
        let mut spec = LeafSpec::notation(&subject("exact"));
        spec.validity = (-3 * 86_400, -2 * 86_400);
        let leaf = Leaf::new(&spec, &world.root);
        jws(
            &leaf,
            &[leaf.der.clone(), world.root.der()],
            &Signing::default(),
        )
    };
    let mut cases = Vec::new();
    for verify in ["always", "afterCertExpiry", "sometimes"] {
        for level in ["strict", "permissive", "audit"] {
            for (leaf, signature) in [("valid", good), ("expired", expired.as_slice())] {
                let mut s = statement("p", &["*"], level, &["*"]);
                s["trustStores"] = json!(["ca:corpus", "tsa:corpus"]);
                s["signatureVerification"]["verifyTimestamp"] = json!(verify);
                let name = format!("notation/tsa/{verify}/{level}/{leaf}");
                cases.push(case(
                    name,
                    policy(vec![s]),
                    &[&world.root],
                    Some(signature.to_vec()),
                ));
            }
        }
    }
    let overrides = [
        ("expiry-log", json!({"expiry": "log"})),
        ("timestamp-log", json!({"authenticTimestamp": "log"})),
        ("authenticity-log", json!({"authenticity": "log"})),
        ("authenticity-skip", json!({"authenticity": "skip"})),
        ("integrity-log", json!({"integrity": "log"})),
        ("revocation-skip", json!({"revocation": "skip"})),
        ("unknown", json!({"provenance": "log"})),
    ];
    for (what, change) in overrides {
        for (leaf, signature) in [("valid", good), ("expired", expired.as_slice())] {
            let mut s = statement(
                "p",
                &["*"],
                "strict",
                &["x509.subject: C=US, ST=WA, O=Other"],
            );
            s["signatureVerification"]["override"] = change.clone();
            let name = format!("notation/override/{what}/{leaf}");
            cases.push(case(
                name,
                policy(vec![s]),
                &[&world.root],
                Some(signature.to_vec()),
            ));
        }
    }
    cases
}

/// Trust policies notation-go refuses to load.
fn invalid_policies() -> Vec<(&'static str, String)> {
    let strict = |name: &str, scopes: &[&str], identities: &[&str]| {
        statement(name, scopes, "strict", identities)
    };
    vec![
        (
            "duplicate-scope",
            policy(vec![
                strict("a", &[REPOSITORY], &["*"]),
                strict("b", &[REPOSITORY], &["*"]),
            ]),
        ),
        (
            "star-with-others",
            policy(vec![strict("a", &["*", REPOSITORY], &["*"])]),
        ),
        (
            "two-stars",
            policy(vec![
                strict("a", &["*"], &["*"]),
                strict("b", &["*"], &["*"]),
            ]),
        ),
        (
            "identity-without-st",
            policy(vec![strict("a", &["*"], &["x509.subject: C=US, O=Victim"])]),
        ),
        (
            "identity-star-and-more",
            policy(vec![strict("a", &["*"], &["*", VICTIM])]),
        ),
        (
            "duplicate-name",
            policy(vec![
                strict("a", &[REPOSITORY], &["*"]),
                strict("a", &["*"], &["*"]),
            ]),
        ),
        (
            "no-trust-store",
            policy(vec![json!({"name": "a", "registryScopes": ["*"],
            "signatureVerification": {"level": "strict"}, "trustedIdentities": ["*"]})]),
        ),
        (
            "unknown-level",
            policy(vec![strict("a", &["*"], &["*"])]).replace("strict", "lax"),
        ),
        (
            "no-version",
            json!({"trustPolicies": [strict("a", &["*"], &["*"])]}).to_string(),
        ),
    ]
}
