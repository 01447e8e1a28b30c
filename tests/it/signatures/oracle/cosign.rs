//! Cosign's cases: Sigstore bundles signed with a key or keyless, over the grid of what a
//! verifier reads — the chain and what the trusted root lists (intermediates listed or only
//! carried, authorities retired or not yet valid), the identity, the leaf (usage, key type,
//! validity against the log's time), the log entry (promise, proof, checkpoint, what its body
//! records, its kind), the envelope (signature count, statement, payload type) and
//! `transparencyLog`.

use super::bundles::{authority, cosign_case, entry, envelope, keyed_cases, trusted_root};
use super::log::{b64, Log};
use super::pki::{Alg, Ca, Leaf, LeafSpec};
use super::Case;
use rcgen::{ExtendedKeyUsagePurpose, SanType};
use serde_json::{json, Value};
use std::collections::BTreeMap;

const ISSUER: &str = "https://issuer.example";
const EMAIL: &str = "dev@example.com";
pub(super) const IN_TOTO: &str = "application/vnd.in-toto+json";
pub(super) const V03: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
const V02: &str = "application/vnd.dev.sigstore.bundle+json;version=0.2";

/// The authorities and logs every keyless case draws on.
struct World {
    root: Ca,
    intermediate: Ca,
    /// An intermediate for server authentication only.
    server_intermediate: Ca,
    stranger: Ca,
    second: Ca,
    log: Log,
    other_log: Log,
}

/// How the leaf is issued, what the trusted root lists, and what the bundle carries.
#[derive(Clone, Copy, Debug)]
enum Chain {
    Root,
    IntermediateListed,
    IntermediateCarried,
    ServerIntermediate,
    Untrusted,
    Retired,
    NotYet,
    RetiredBesideCurrent,
}

const CHAINS: [Chain; 8] = [
    Chain::Root,
    Chain::IntermediateListed,
    Chain::IntermediateCarried,
    Chain::ServerIntermediate,
    Chain::Untrusted,
    Chain::Retired,
    Chain::NotYet,
    Chain::RetiredBesideCurrent,
];

/// What the log entry is, and how it is spoiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Logged {
    None,
    Valid,
    PromiseOnly,
    ProofOnly,
    BadPromise,
    BadCheckpoint,
    OtherRoot,
    BadPath,
    UnknownLog,
    OtherSignature,
    OtherPayload,
    OtherVerifier,
    HashedRekord,
    /// Logged long ago: the certificate is judged then.
    Old,
}

const LOGGED: [Logged; 14] = [
    Logged::None,
    Logged::Valid,
    Logged::PromiseOnly,
    Logged::ProofOnly,
    Logged::BadPromise,
    Logged::BadCheckpoint,
    Logged::OtherRoot,
    Logged::BadPath,
    Logged::UnknownLog,
    Logged::OtherSignature,
    Logged::OtherPayload,
    Logged::OtherVerifier,
    Logged::HashedRekord,
    Logged::Old,
];

/// What the envelope holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Envelope {
    One,
    Two,
    None,
    OtherDigest,
    NotInToto,
    Forged,
}

pub(super) const ENVELOPES: [Envelope; 6] = [
    Envelope::One,
    Envelope::Two,
    Envelope::None,
    Envelope::OtherDigest,
    Envelope::NotInToto,
    Envelope::Forged,
];

/// The identity the policy trusts, against the leaf's.
#[derive(Clone, Copy, Debug)]
enum Trusted {
    Match,
    OtherIssuer,
    OtherSubject,
    /// The leaf names a workflow URI, the policy a pattern for it.
    Uri,
    /// The leaf has no issuer extension.
    NoIssuer,
}

const TRUSTED: [Trusted; 5] = [
    Trusted::Match,
    Trusted::OtherIssuer,
    Trusted::OtherSubject,
    Trusted::Uri,
    Trusted::NoIssuer,
];

/// What else is odd about the leaf.
#[derive(Clone, Copy, Debug)]
enum Odd {
    ServerAuth,
    NoEku,
    NoDigitalSignature,
    ExpiredNow,
    NotYetValid,
    P384,
    TwoSans,
}

const ODD: [Odd; 7] = [
    Odd::ServerAuth,
    Odd::NoEku,
    Odd::NoDigitalSignature,
    Odd::ExpiredNow,
    Odd::NotYetValid,
    Odd::P384,
    Odd::TwoSans,
];

/// Every cosign case.
pub fn cases() -> Vec<Case> {
    let root = Ca::root("corpus root");
    let world = World {
        intermediate: Ca::intermediate("corpus intermediate", &root, None),
        server_intermediate: Ca::intermediate(
            "server intermediate",
            &root,
            Some(ExtendedKeyUsagePurpose::ServerAuth),
        ),
        root,
        stranger: Ca::root("stranger"),
        second: Ca::root("second root"),
        log: Log::new(),
        other_log: Log::new(),
    };
    let mut cases = Vec::new();
    for require in [true, false] {
        let base = Variant {
            chain: Chain::Root,
            trusted: Trusted::Match,
            odd: None,
            logged: Logged::None,
            shape: Envelope::One,
            require,
        };
        for chain in CHAINS {
            for trusted in TRUSTED {
                for logged in [Logged::None, Logged::Valid] {
                    let name =
                        format!("keyless/{chain:?}/{trusted:?}/{logged:?}/require={require}");
                    let variant = Variant {
                        chain,
                        trusted,
                        logged,
                        ..base
                    };
                    cases.push(keyless(&world, name, variant));
                }
            }
        }
        for chain in [Chain::Root, Chain::IntermediateListed] {
            for logged in LOGGED {
                let name = format!("log/{chain:?}/{logged:?}/require={require}");
                let variant = Variant {
                    chain,
                    logged,
                    ..base
                };
                cases.push(keyless(&world, name, variant));
            }
        }
        for odd in ODD {
            for logged in [Logged::None, Logged::Valid, Logged::Old] {
                let name = format!("leaf/{odd:?}/{logged:?}/require={require}");
                let variant = Variant {
                    odd: Some(odd),
                    logged,
                    ..base
                };
                cases.push(keyless(&world, name, variant));
            }
        }
        for shape in ENVELOPES {
            for logged in [Logged::None, Logged::Valid] {
                let name = format!("envelope/{shape:?}/{logged:?}/require={require}");
                let variant = Variant {
                    shape,
                    logged,
                    ..base
                };
                cases.push(keyless(&world, name, variant));
            }
        }
    }
    cases.extend(keyed_cases(&world.log));
    cases
}

fn keyless_spec(trusted: Trusted, odd: Option<Odd>) -> LeafSpec {
    let mut spec = LeafSpec::fulcio(EMAIL, ISSUER);
    match trusted {
        Trusted::Uri => {
            let uri = "https://github.com/team/app/.github/workflows/release.yaml@refs/heads/main";
            spec.sans = vec![SanType::URI(uri.try_into().unwrap())];
        }
        Trusted::NoIssuer => spec.oidc_issuer = None,
        _ => {}
    }
    match odd {
        Some(Odd::ServerAuth) => spec.eku = vec![ExtendedKeyUsagePurpose::ServerAuth],
        Some(Odd::NoEku) => spec.eku = Vec::new(),
        Some(Odd::NoDigitalSignature) => spec.digital_signature = false,
        Some(Odd::ExpiredNow) => spec.validity = (-3 * 86_400, -2 * 86_400),
        Some(Odd::NotYetValid) => spec.validity = (86_400, 2 * 86_400),
        Some(Odd::P384) => spec.alg = Alg::P384,
        Some(Odd::TwoSans) => spec.sans.insert(
            0,
            SanType::Rfc822Name("other@example.com".try_into().unwrap()),
        ),
        None => {}
    }
    spec
}

/// The identities of a keyless policy.
fn identities(trusted: Trusted) -> Vec<(String, String)> {
    let (issuer, subject) = match trusted {
        Trusted::OtherIssuer => ("^https://other\\.example$", "^dev@example\\.com$"),
        Trusted::OtherSubject => ("^https://issuer\\.example$", "^ops@example\\.com$"),
        Trusted::Uri => (
            "^https://issuer\\.example$",
            "^https://github\\.com/team/app/\\.github/workflows/.*@refs/heads/main$",
        ),
        _ => ("^https://issuer\\.example$", "^dev@example\\.com$"),
    };
    vec![(issuer.to_string(), subject.to_string())]
}

#[allow(clippy::too_many_arguments)]
/// One keyless case: how its leaf chains, whom the policy trusts, what is odd about the leaf,
/// its log entry, its envelope, and whether the policy requires the log.
#[derive(Clone, Copy)]
struct Variant {
    chain: Chain,
    trusted: Trusted,
    odd: Option<Odd>,
    logged: Logged,
    shape: Envelope,
    require: bool,
}

fn keyless(world: &World, name: String, variant: Variant) -> Case {
    let Variant {
        chain,
        trusted,
        odd,
        logged,
        shape,
        require,
    } = variant;
    let mut spec = keyless_spec(trusted, odd);
    if logged == Logged::Old && spec.validity == (-3600, 86_400) {
        spec.validity = (-3 * 86_400, 86_400);
    }
    let issued_by = match chain {
        Chain::IntermediateListed | Chain::IntermediateCarried => &world.intermediate,
        Chain::ServerIntermediate => &world.server_intermediate,
        Chain::Untrusted => &world.stranger,
        _ => &world.root,
    };
    let leaf = Leaf::new(&spec, issued_by);
    let authorities = match chain {
        Chain::IntermediateListed => vec![authority(
            &[&world.intermediate, &world.root],
            -86_400 * 365,
            None,
        )],
        Chain::ServerIntermediate => vec![authority(
            &[&world.server_intermediate, &world.root],
            -86_400 * 365,
            None,
        )],
        Chain::Retired => vec![authority(&[&world.root], -86_400 * 365, Some(-86_400 * 4))],
        Chain::NotYet => vec![authority(&[&world.root], 86_400, None)],
        Chain::RetiredBesideCurrent => vec![
            authority(&[&world.root], -86_400 * 365, Some(-86_400 * 4)),
            authority(&[&world.second], -86_400 * 4, None),
        ],
        _ => vec![authority(&[&world.root], -86_400 * 365, None)],
    };
    let root = trusted_root(authorities, &[&world.log]);
    let sign = |m: &[u8]| leaf.sign_der(m);
    let (env, payload, signature) = envelope(&sign, shape);
    let mut material = match chain {
        Chain::IntermediateCarried => json!({"x509CertificateChain": {"certificates": [
            {"rawBytes": b64(&leaf.der)}, {"rawBytes": b64(&world.intermediate.der())}]}}),
        _ => json!({"certificate": {"rawBytes": b64(&leaf.der)}}),
    };
    let entries: Vec<Value> = entry(
        &world.log,
        &world.other_log,
        logged,
        (&env, &payload, &signature),
        &leaf.pem,
    )
    .into_iter()
    .collect();
    material["tlogEntries"] = json!(entries);
    let media_type = match chain {
        Chain::IntermediateCarried => V02,
        _ => V03,
    };
    let bundle =
        json!({"mediaType": media_type, "verificationMaterial": material, "dsseEnvelope": env});
    let identities = identities(trusted);
    let data = BTreeMap::from([("trusted_root.json".to_string(), root.clone().into_bytes())]);
    cosign_case(name, bundle, data, Vec::new(), identities, root, require)
}
